// C++ half of //tests/models:bert_parity_test (see bert_parity_test.sh).
//
//   bert_parity_tool write DIR   for every scenario: builds a BertForSequenceClassification,
//                                saves DIR/<scenario>/model/{config.json,model.safetensors}
//                                and, per batch size, DIR/<scenario>/case_<b>.safetensors with
//                                the inputs and the model's logits and loss (eval mode).
//   bert_parity_tool check DIR   for every scenario: loads DIR/<scenario>/python_model (written
//                                by bert_reference.py from its own state dict) through
//                                LoadBertForSequenceClassification, requires that every key
//                                was used and none was missing, and compares its logits and
//                                loss on DIR/<scenario>/python_case_<b>.safetensors with the
//                                Python values (max abs difference 1e-5).
// Exits 0 on success, 1 with the reason on stderr otherwise.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "checkpoint/safetensors.h"
#include "logging/process_logging.h"
#include "models/bert/pretrained.h"
#include "tests/models/bert_tool_util.h"

namespace loom::models::bert {
namespace {

constexpr double kTolerance = 1e-5;
constexpr int64_t kSeqLen = 9;

struct Scenario {
  std::string name;
  BertConfig config;
  std::string labels;  // "long", "float_scalar", "float_multi"
  bool mask = true;
  bool token_types = true;
  bool positions = false;
};

BertConfig Tiny(int64_t num_labels, const std::string& act) {
  BertConfig c = TinyBertConfig();
  c.hidden_act = act;
  c.set_num_labels(num_labels);
  return c;
}

std::vector<Scenario> Scenarios() {
  std::vector<Scenario> s;
  s.push_back({"single_label", Tiny(3, "gelu"), "long"});
  Scenario regression{"regression", Tiny(1, "gelu_new"), "float_scalar"};
  regression.config.pad_token_id = 1;
  regression.config.initializer_range = 0.2;  // larger weights: more visible differences
  s.push_back(regression);
  s.push_back({"multi_label", Tiny(4, "relu"), "float_multi"});
  Scenario explicit_type{"explicit_multi_label", Tiny(2, "gelu_pytorch_tanh"), "float_multi"};
  if (!explicit_type.config.set_problem_type("multi_label_classification").ok()) std::abort();
  explicit_type.config.classifier_dropout = 0.2;
  explicit_type.positions = true;
  s.push_back(explicit_type);
  Scenario defaults{"defaults_silu", Tiny(3, "silu"), "long"};
  defaults.mask = false;
  defaults.token_types = false;
  s.push_back(defaults);
  return s;
}

// Inputs of one batch: random lengths, padding after the text, two segments.
data::Batch MakeInputs(const Scenario& sc, int64_t batch, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const BertConfig& c = sc.config;
  const int64_t pad = c.pad_token_id.value_or(0);
  at::Tensor ids = at::randint(2, c.vocab_size, {batch, kSeqLen}, gen, at::kLong);
  at::Tensor lengths = at::randint(3, kSeqLen + 1, {batch}, gen, at::kLong);
  if (!sc.mask) lengths.fill_(kSeqLen);
  lengths[0] = kSeqLen;  // the longest row fills the batch, as a padding collator makes it
  at::Tensor pos = at::arange(kSeqLen, at::kLong).unsqueeze(0);
  at::Tensor mask = pos.lt(lengths.unsqueeze(1)).to(at::kLong);
  ids = at::where(mask.to(at::kBool), ids, at::full_like(ids, pad));
  data::Batch b = {{"input_ids", ids}};
  if (sc.mask) b["attention_mask"] = mask;
  if (sc.token_types) {
    at::Tensor second =
        pos.ge(lengths.unsqueeze(1).div(2, "floor")).logical_and(mask.to(at::kBool));
    b["token_type_ids"] = second.to(at::kLong);
  }
  if (sc.positions) b["position_ids"] = (pos + 3).expand({batch, kSeqLen}).contiguous();
  if (sc.labels == "long") {
    b["labels"] = at::randint(c.num_labels(), {batch}, gen, at::kLong);
  } else if (sc.labels == "float_scalar") {
    b["labels"] = at::randn({batch}, gen, at::kFloat) * 2;
  } else {
    b["labels"] = at::randint(2, {batch, c.num_labels()}, gen, at::kLong).to(at::kFloat);
  }
  return b;
}

absl::Status Write(const std::string& dir) {
  uint64_t seed = 100;
  for (const Scenario& sc : Scenarios()) {
    const std::string sdir = dir + "/" + sc.name;
    ASSIGN_OR_RETURN(auto model, BertForSequenceClassification::Create(sc.config, ++seed));
    model->eval();
    RETURN_IF_ERROR(SaveBertForSequenceClassification(*model, sdir + "/model").status());
    for (int64_t batch : {1, 3, 5}) {
      data::Batch inputs = MakeInputs(sc, batch, ++seed);
      ASSIGN_OR_RETURN(modeling::ModelOutput out, model->TryForward(inputs), sc.name);
      checkpoint::NamedTensors file(inputs.begin(), inputs.end());
      file.emplace_back("expected_logits", out.Get("logits"));
      file.emplace_back("expected_loss", out.loss.reshape({1}));
      RETURN_IF_ERROR(
          checkpoint::SaveSafetensors(absl::StrCat(sdir, "/case_", batch, ".safetensors"), file));
    }
  }
  return absl::OkStatus();
}

absl::Status Compare(const std::string& what, const at::Tensor& got, const at::Tensor& want) {
  if (!got.sizes().equals(want.sizes())) {
    return absl::InternalError(absl::StrCat(what, ": shape ", c10::str(got.sizes()),
                                            " but Python has ", c10::str(want.sizes())));
  }
  const double diff = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
  if (!(diff <= kTolerance)) {
    return absl::InternalError(absl::StrCat(what, ": max abs difference ", diff, " > ", kTolerance,
                                            "\nC++: ", c10::str(got),
                                            "\nPython: ", c10::str(want)));
  }
  std::cout << what << ": max abs difference " << diff << "\n";
  return absl::OkStatus();
}

absl::Status Check(const std::string& dir) {
  int cases = 0;
  for (const Scenario& sc : Scenarios()) {
    const std::string sdir = dir + "/" + sc.name;
    ASSIGN_OR_RETURN(LoadedBert loaded, LoadBertForSequenceClassification(sdir + "/python_model"));
    if (!loaded.report.newly_initialized_keys.empty() || !loaded.report.unused_keys.empty() ||
        !loaded.report.mismatched_keys.empty()) {
      return absl::InternalError(absl::StrCat(
          sc.name, ": Python-written weights did not fit exactly:\n", loaded.Report()));
    }
    loaded.model->eval();
    for (const auto& entry : std::filesystem::directory_iterator(sdir)) {
      const std::string name = entry.path().filename().string();
      if (!absl::StartsWith(name, "python_case_")) continue;
      ASSIGN_OR_RETURN(checkpoint::SafetensorsFile file,
                       checkpoint::LoadSafetensors(entry.path().string()));
      data::Batch inputs;
      at::Tensor logits, loss;
      for (const auto& [key, tensor] : file.tensors) {
        if (key == "expected_logits") {
          logits = tensor;
        } else if (key == "expected_loss") {
          loss = tensor;
        } else {
          inputs[key] = tensor;
        }
      }
      ASSIGN_OR_RETURN(modeling::ModelOutput out, loaded.model->TryForward(inputs), name);
      RETURN_IF_ERROR(Compare(sc.name + "/" + name + " logits", out.Get("logits"), logits));
      RETURN_IF_ERROR(Compare(sc.name + "/" + name + " loss", out.loss.reshape({1}), loss));
      ++cases;
    }
  }
  if (cases == 0) return absl::InternalError("no python_case_* files found under " + dir);
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::models::bert

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 3 || (std::string(argv[1]) != "write" && std::string(argv[1]) != "check")) {
    std::cerr << "usage: bert_parity_tool write|check DIR\n";
    return 2;
  }
  absl::Status status = std::string(argv[1]) == "write" ? loom::models::bert::Write(argv[2])
                                                        : loom::models::bert::Check(argv[2]);
  if (!status.ok()) {
    std::cerr << "bert_parity_tool " << argv[1] << ": " << status << "\n";
    return 1;
  }
  return 0;
}
