// C++ half of //tests/models:bert_sdpa_parity_test (see bert_sdpa_parity_test.sh): loom's BERT
// with attn_implementation "sdpa" (at::scaled_dot_product_attention) against transformers
// 4.41's BertSdpaSelfAttention call of torch.nn.functional.scaled_dot_product_attention in
// the Python torch of the same LibTorch build, fp32, bitwise.
//
//   bert_sdpa_tool write DIR
//     LibTorch >= 2.1.1 (base::kHasScaledDotProductAttention): asks for "sdpa" explicitly.
//     Older LibTorch: first requires that the explicit sdpa request is refused
//       (FailedPrecondition naming attn_implementation and "without --config=debian"), then runs the
//       twin with "eager", the only implementation there.
//     Writes DIR/attn_implementation.txt ("sdpa" or "eager", the one used) and, per scenario,
//     DIR/<scenario>/
//       model/{config.json,model.safetensors}  the weights (HF keys);
//       inputs.safetensors                     the batch;
//       loom.safetensors                       "logits", "loss" and "grad/<key>" for every
//                                              parameter after loss.backward().
// bert_sdpa_reference.py then runs the same implementation on the same weights and batch and
// requires every tensor to be bitwise equal. One intra-op thread on both sides.
//
// Scenarios: a padded batch (the 4-D sdpa mask), no attention_mask and an all-ones one (both
// give SDPA no mask), each in train() mode with every dropout 0 (no RNG, dropout_p 0); and a
// padded batch in eval() mode with the default dropouts 0.1 (dropout_p must be 0 in eval).
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_compat.h"
#include "checkpoint/safetensors.h"
#include "models/bert/pretrained.h"
#include "tests/models/bert_tool_util.h"

namespace loom::models::bert {
namespace {

constexpr int64_t kBatch = 4;
constexpr int64_t kSeqLen = 9;

struct Scenario {
  std::string name;
  std::string mask;  // "padded", "none", "ones"
  bool train = true;
};

BertConfig Tiny(const Scenario& sc, AttnImplementation implementation) {
  BertConfig c = TinyBertConfig();
  c.initializer_range = 0.2;  // larger weights than 0.02: more visible differences
  if (sc.train) {
    c.hidden_dropout_prob = 0.0;  // classifier_dropout null: hidden_dropout_prob
    c.attention_probs_dropout_prob = 0.0;
  }
  c.set_num_labels(3);
  c.attn_implementation = implementation;
  return c;
}

std::vector<Scenario> Scenarios() {
  return {{"padded", "padded"},
          {"no_mask", "none"},
          {"ones_mask", "ones"},
          {"eval_padded", "padded", /*train=*/false}};
}

data::Batch MakeInputs(const Scenario& sc, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor ids = at::randint(2, 50, {kBatch, kSeqLen}, gen, at::kLong);
  at::Tensor lengths = at::randint(3, kSeqLen, {kBatch}, gen, at::kLong);
  lengths[0] = kSeqLen;
  at::Tensor pos = at::arange(kSeqLen, at::kLong).unsqueeze(0);
  at::Tensor mask = pos.lt(lengths.unsqueeze(1)).to(at::kLong);
  data::Batch b = {{"input_ids", ids}, {"labels", at::randint(3, {kBatch}, gen, at::kLong)}};
  if (sc.mask == "padded") {
    b["input_ids"] = at::where(mask.to(at::kBool), ids, at::zeros_like(ids));
    b["attention_mask"] = mask;
  } else if (sc.mask == "ones") {
    b["attention_mask"] = at::ones_like(ids);
  }
  return b;
}

absl::Status WriteScenario(const Scenario& sc, AttnImplementation implementation,
                           const std::string& sdir, uint64_t seed) {
  ASSIGN_OR_RETURN(auto model,
                   BertForSequenceClassification::Create(Tiny(sc, implementation), seed));
  if (model->bert->attn_implementation() != implementation) {
    return absl::InternalError(sc.name + ": the model did not keep the requested implementation");
  }
  model->train(sc.train);
  RETURN_IF_ERROR(SaveBertForSequenceClassification(*model, sdir + "/model").status());
  const data::Batch inputs = MakeInputs(sc, seed + 1);
  RETURN_IF_ERROR(checkpoint::SaveSafetensors(
      sdir + "/inputs.safetensors", checkpoint::NamedTensors(inputs.begin(), inputs.end())));
  model->zero_grad();
  ASSIGN_OR_RETURN(modeling::ModelOutput out, model->TryForward(inputs), sc.name);
  out.loss.backward();
  return SaveStepTensors(*model, out.Get("logits"), out.loss, sdir + "/loom.safetensors",
                         sc.name);
}

// On LibTorch < 2.1.1 the explicit request must be refused with the documented error.
absl::Status RequireRefusal() {
  const absl::Status refused =
      BertForSequenceClassification::Create(Tiny(Scenarios()[0], AttnImplementation::kSdpa), 1)
          .status();
  if (refused.code() != absl::StatusCode::kFailedPrecondition ||
      !absl::StrContains(refused.message(), "attn_implementation") ||
      !absl::StrContains(refused.message(), "without --config=debian")) {
    return absl::InternalError(absl::StrCat(
        "LibTorch ", base::kLibTorchVersion,
        ": attn_implementation=\"sdpa\" should be FailedPrecondition naming attn_implementation "
        "and 'without --config=debian', got: ",
        refused.ToString()));
  }
  std::cout << "LibTorch " << base::kLibTorchVersion << " refuses sdpa: " << refused << "\n";
  return absl::OkStatus();
}

absl::Status Write(const std::string& dir) {
  AttnImplementation implementation = AttnImplementation::kSdpa;
  if (!base::kHasScaledDotProductAttention) {
    RETURN_IF_ERROR(RequireRefusal());
    implementation = AttnImplementation::kEager;
  }
  RETURN_IF_ERROR(base::MakeDirs(dir));
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/attn_implementation.txt",
                                            std::string(AttnImplementationName(implementation))));
  uint64_t seed = 700;
  for (const Scenario& sc : Scenarios()) {
    RETURN_IF_ERROR(WriteScenario(sc, implementation, dir + "/" + sc.name, seed));
    seed += 10;
  }
  std::cout << "bert_sdpa_tool: LibTorch " << base::kLibTorchVersion << ", attn_implementation "
            << AttnImplementationName(implementation) << "\n";
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::models::bert

int main(int argc, char** argv) {
  return loom::models::bert::RunWriteTool(argc, argv, "bert_sdpa_tool",
                                          &loom::models::bert::Write);
}
