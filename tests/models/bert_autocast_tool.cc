// C++ half of //tests/models:bert_autocast_parity_test (see bert_autocast_parity_test.sh):
// one training forward + backward of a tiny BertForSequenceClassification under loom's bf16
// CPU autocast, exactly as Trainer::TrainingStep / CallModel run it:
//   { AutocastGuard(policy.autocast); out = model.Forward(batch); OutputToFp32(loss, logits) }
//   loss.backward();   // outside the autocast region
// with the precision objects the Trainer uses (TrainingPrecision of a kAutocast policy whose
// AutocastSpec is CPU / bf16).
//
//   bert_autocast_tool write DIR   for every scenario writes DIR/<scenario>/
//       model/{config.json,model.safetensors}   the weights (HF keys) before the step;
//       inputs.safetensors                      the batch (padding in attention_mask, two
//                                               token types, labels);
//       loom.safetensors                        "logits" and "loss" (fp32, after OutputToFp32)
//                                               and "grad/<HF state-dict key>" for every
//                                               parameter.
// bert_autocast_reference.py then runs transformers' op order under torch.autocast on the same
// weights and batch and compares. Exits 0 on success, 1 with the reason on stderr otherwise.
//
// Dropout probabilities are 0 in every scenario, so the forward uses no RNG (at::dropout with
// p = 0 returns its input, train mode or not) and the two processes compute the same function;
// the model is still in train() mode, as in TrainingStep. One intra-op thread (as the Python
// side) makes every reduction's order fixed.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "checkpoint/safetensors.h"
#include "models/bert/pretrained.h"
#include "precision/autocast.h"
#include "precision/policy.h"
#include "precision/training_precision.h"
#include "tests/models/bert_tool_util.h"

namespace loom::models::bert {
namespace {

constexpr int64_t kBatch = 4;
constexpr int64_t kSeqLen = 9;

struct Scenario {
  std::string name;
  BertConfig config;
  std::string labels;  // "long", "float_scalar", "float_multi"
  // Nonzero biases and LayerNorm affine parameters, as in a trained checkpoint (HF's
  // _init_weights leaves every bias 0 and every LayerNorm weight 1).
  bool trained_like = false;
};

BertConfig Tiny(int64_t num_labels, const std::string& act) {
  BertConfig c = TinyBertConfig();
  c.hidden_act = act;
  c.hidden_dropout_prob = 0.0;           // no RNG in the forward (see the header)
  c.attention_probs_dropout_prob = 0.0;  // classifier_dropout null: hidden_dropout_prob
  c.initializer_range = 0.2;             // larger weights than 0.02: more visible differences
  c.set_num_labels(num_labels);
  return c;
}

std::vector<Scenario> Scenarios() {
  return {
      {"single_label", Tiny(3, "gelu"), "long"},
      {"multi_label", Tiny(4, "gelu_new"), "float_multi"},
      {"regression", Tiny(1, "gelu"), "float_scalar"},
      {"trained_weights", Tiny(3, "gelu"), "long", /*trained_like=*/true},
      // The other activations written as several ops (ApplyActivation).
      {"gelu_python", Tiny(3, "gelu_python"), "long"},
      {"gelu_fast", Tiny(3, "gelu_fast"), "long"},
      {"quick_gelu", Tiny(3, "quick_gelu"), "long"},
  };
}

// Padding after the text (row 0 is full length, as a padding collator makes the batch), two
// segments.
data::Batch MakeInputs(const Scenario& sc, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const BertConfig& c = sc.config;
  const int64_t pad = c.pad_token_id.value_or(0);
  at::Tensor ids = at::randint(2, c.vocab_size, {kBatch, kSeqLen}, gen, at::kLong);
  at::Tensor lengths = at::randint(3, kSeqLen, {kBatch}, gen, at::kLong);
  lengths[0] = kSeqLen;
  at::Tensor pos = at::arange(kSeqLen, at::kLong).unsqueeze(0);
  at::Tensor mask = pos.lt(lengths.unsqueeze(1)).to(at::kLong);
  ids = at::where(mask.to(at::kBool), ids, at::full_like(ids, pad));
  at::Tensor second = pos.ge(lengths.unsqueeze(1).div(2, "floor")).logical_and(mask.to(at::kBool));
  data::Batch b = {
      {"input_ids", ids}, {"attention_mask", mask}, {"token_type_ids", second.to(at::kLong)}};
  if (sc.labels == "long") {
    b["labels"] = at::randint(c.num_labels(), {kBatch}, gen, at::kLong);
  } else if (sc.labels == "float_scalar") {
    // Regression targets as a collator makes them from float labels: float32, not rounded.
    b["labels"] = at::randn({kBatch}, gen, at::kFloat) * 2;
  } else {
    b["labels"] = at::randint(2, {kBatch, c.num_labels()}, gen, at::kLong).to(at::kFloat);
  }
  return b;
}

void MakeTrainedLike(BertForSequenceClassification& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  for (auto& item : model.named_parameters()) {
    const std::string& name = item.key();
    at::Tensor& p = item.value();
    if (absl::EndsWith(name, ".bias")) {
      p.normal_(0.0, 0.2, gen);
    } else if (absl::EndsWith(name, "LayerNorm.weight")) {
      p.uniform_(0.5, 1.5, gen);
    }
  }
}

absl::Status WriteScenario(const Scenario& sc, const std::string& sdir, uint64_t seed) {
  ASSIGN_OR_RETURN(auto model, BertForSequenceClassification::Create(sc.config, seed));
  if (sc.trained_like) MakeTrainedLike(*model, seed + 1);
  model->train();
  RETURN_IF_ERROR(SaveBertForSequenceClassification(*model, sdir + "/model").status());
  const data::Batch inputs = MakeInputs(sc, seed + 2);
  RETURN_IF_ERROR(checkpoint::SaveSafetensors(
      sdir + "/inputs.safetensors", checkpoint::NamedTensors(inputs.begin(), inputs.end())));

  // Trainer::TrainingStep + CallModel with a --bf16 policy on CPU (cpu_amp).
  precision::PrecisionPolicy policy;
  policy.mode = precision::PrecisionMode::kAutocast;
  policy.compute_dtype = at::kBFloat16;
  ASSIGN_OR_RETURN(policy.autocast, precision::MakeAutocastSpec(at::kCPU, at::kBFloat16));
  policy.backend = "cpu_amp";
  ASSIGN_OR_RETURN(auto precision, precision::TrainingPrecision::Create(policy));
  model->zero_grad();
  at::Tensor loss, logits;
  {
    precision::AutocastGuard autocast(precision->ForwardAutocast());
    ASSIGN_OR_RETURN(modeling::ModelOutput out, model->TryForward(inputs), sc.name);
    loss = precision->OutputToFp32(out.loss);
    logits = precision->OutputToFp32(out.Get("logits"));
  }
  if (loss.scalar_type() != at::kFloat || logits.scalar_type() != at::kFloat) {
    return absl::InternalError(absl::StrCat(sc.name, ": outputs not fp32 after OutputToFp32"));
  }
  precision->ScaleLoss(loss).backward();  // outside autocast; no GradScaler with bf16
  return SaveStepTensors(*model, logits, loss, sdir + "/loom.safetensors", sc.name);
}

absl::Status Write(const std::string& dir) {
  uint64_t seed = 500;
  for (const Scenario& sc : Scenarios()) {
    RETURN_IF_ERROR(WriteScenario(sc, dir + "/" + sc.name, seed));
    seed += 10;
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::models::bert

int main(int argc, char** argv) {
  return loom::models::bert::RunWriteTool(argc, argv, "bert_autocast_tool",
                                          &loom::models::bert::Write);
}
