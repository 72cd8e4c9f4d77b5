// The C++ half of //tests/models:t5_parity_test (see t5_reference.py for the Python half).
//   t5_parity_tool write DIR: for the scenarios v1_0 (relu, tied embeddings: t5-small's
//     layout) and v1_1 (gated-gelu, untied: T5 v1.1 / flan / T0), writes DIR/<scenario>/model/
//     (config.json + model.safetensors through SaveT5ForConditionalGeneration) and
//     case_<k>.safetensors: the inputs (input_ids, attention_mask, labels with -100) and
//     loom's logits, loss, encoder_last_hidden_state and grad.<key> for every saved key.
//   t5_parity_tool check DIR: loads each DIR/<scenario>/python_model/ (the reference's own
//     weights) with LoadT5ForConditionalGeneration and requires loom's outputs and gradients on
//     every python_case_<k>.safetensors within |loom - ref| <= 1e-6 (1 + |ref|).
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/module_state.h"
#include "checkpoint/safetensors.h"
#include "tests/models/parity_tool_util.h"
#include "logging/process_logging.h"
#include "generation/generate.h"
#include "modeling/generation_config.h"
#include "models/t5/pretrained.h"
#include "nlohmann/json.hpp"

namespace loom::models::t5 {
namespace {

using tests::Find;

// The outputs compared besides the loss and the gradients.
const std::vector<std::string> kOutputs = {"logits", "encoder_last_hidden_state"};

constexpr double kTolerance = 1e-6;

struct Scenario {
  std::string name;
  bool gated;
};

std::vector<Scenario> Scenarios() { return {{"v1_0", false}, {"v1_1", true}}; }

T5Config Tiny(bool gated) {
  T5Config c;
  c.vocab_size = 64;
  c.d_model = 32;
  c.d_kv = 8;
  c.d_ff = 48;
  c.num_layers = 2;
  c.num_decoder_layers = 3;
  c.num_heads = 4;
  c.relative_attention_num_buckets = 8;
  c.relative_attention_max_distance = 16;  // sequences of 20 reach the logarithmic buckets
  c.feed_forward_proj = gated ? "gated-gelu" : "relu";
  c.tie_word_embeddings = !gated;
  c.decoder_start_token_id = 0;
  return c;
}

// Batch k: k=0 three sources of 20 tokens (two padded) and targets of 6 with -100 tails;
// k=1 two sources of 5 and targets of 9.
checkpoint::NamedTensors Inputs(int k) {
  torch::manual_seed(100 + k);
  const int64_t batch = k == 0 ? 3 : 2, src = k == 0 ? 20 : 5, tgt = k == 0 ? 6 : 9;
  at::Tensor ids = torch::randint(2, 64, {batch, src}, torch::kLong);
  at::Tensor mask = torch::ones({batch, src}, torch::kLong);
  at::Tensor labels = torch::randint(2, 64, {batch, tgt}, torch::kLong);
  if (k == 0) {
    mask[1].narrow(0, 14, 6).fill_(0);
    mask[2].narrow(0, 3, 17).fill_(0);
    ids.masked_fill_(mask == 0, 0);
    labels[0][5] = 1;
    labels[1].narrow(0, 3, 3).fill_(-100);
    labels[2].narrow(0, 1, 5).fill_(-100);
  }
  return {{"input_ids", ids}, {"attention_mask", mask}, {"labels", labels}};
}

// generate.json: the generation configs every scenario runs on case 0's inputs (greedy and
// beam search, lengths, penalties, early stopping modes, n-gram blocking, forced tokens).
nlohmann::json GenerateCases() {
  return nlohmann::json::parse(R"([
    {"name": "greedy", "case": 0, "config": {"max_length": 14}},
    {"name": "greedy_min_length", "case": 0, "config": {"max_length": 14, "min_length": 10}},
    {"name": "greedy_ngram", "case": 0, "config": {"max_new_tokens": 12, "no_repeat_ngram_size": 2}},
    {"name": "greedy_forced", "case": 1, "config": {"max_length": 8, "forced_bos_token_id": 5, "forced_eos_token_id": 1}},
    {"name": "beam4", "case": 0, "config": {"num_beams": 4, "max_length": 14}},
    {"name": "beam4_return2", "case": 0, "config": {"num_beams": 4, "num_return_sequences": 2, "max_length": 14}},
    {"name": "beam4_early_true", "case": 0, "config": {"num_beams": 4, "early_stopping": true, "max_length": 14}},
    {"name": "beam4_never_lp06", "case": 0, "config": {"num_beams": 4, "early_stopping": "never", "length_penalty": 0.6, "max_length": 14}},
    {"name": "beam3_lp2", "case": 1, "config": {"num_beams": 3, "length_penalty": 2.0, "max_new_tokens": 11}},
    {"name": "beam4_ngram_min", "case": 0, "config": {"num_beams": 4, "no_repeat_ngram_size": 2, "min_length": 6, "max_length": 14}},
    {"name": "beam2_forced", "case": 1, "config": {"num_beams": 2, "forced_bos_token_id": 5, "forced_eos_token_id": 1, "max_length": 8}},
    {"name": "greedy_no_cache", "case": 0, "config": {"max_length": 14, "use_cache": false}},
    {"name": "beam4_no_cache", "case": 0, "config": {"num_beams": 4, "max_length": 14, "use_cache": false}}
  ])");
}

// Runs every generate.json entry on `model`, writing <prefix>gen_<name>.safetensors.
absl::Status WriteGenerations(T5ForConditionalGeneration& model, const std::string& sdir,
                              const std::string& prefix) {
  model.eval();
  for (const nlohmann::json& entry : GenerateCases()) {
    modeling::GenerationConfig g = model.generation_config();
    for (auto it = entry["config"].begin(); it != entry["config"].end(); ++it) {
      RETURN_IF_ERROR(g.Set(it.key(), it.value()));
    }
    const checkpoint::NamedTensors inputs = Inputs(entry["case"].get<int>());
    ASSIGN_OR_RETURN(at::Tensor ids, generation::Generate(model, Find(inputs, "input_ids"),
                                                          Find(inputs, "attention_mask"), g),
                     entry["name"].get<std::string>());
    RETURN_IF_ERROR(checkpoint::SaveSafetensors(
        absl::StrCat(sdir, "/", prefix, "gen_", entry["name"].get<std::string>(), ".safetensors"),
        {{"sequences", ids}}));
  }
  return absl::OkStatus();
}

// Sharper next-token distributions than a fresh initialisation gives, with eos (id 1) a
// frequent choice, so that sequences end at different lengths.
void Sharpen(T5ForConditionalGeneration& model) {
  torch::NoGradGuard no_grad;
  model.body->shared->weight.mul_(2.0);
  at::Tensor head = model.config().tie_word_embeddings ? model.body->shared->weight
                                                       : model.body->lm_head->weight;
  head[1].add_(head.mean(0) * 20.0);
}

absl::Status Write(const std::string& dir) {
  for (const Scenario& sc : Scenarios()) {
    const std::string sdir = dir + "/" + sc.name;
    ASSIGN_OR_RETURN(auto model, T5ForConditionalGeneration::Create(Tiny(sc.gated), 7));
    Sharpen(*model);
    RETURN_IF_ERROR(SaveT5ForConditionalGeneration(*model, sdir + "/model").status());
    RETURN_IF_ERROR(base::WriteFileAtomically(sdir + "/generate.json", GenerateCases().dump(2)));
    RETURN_IF_ERROR(WriteGenerations(*model, sdir, ""));
    for (int k = 0; k < 2; ++k) {
      ASSIGN_OR_RETURN(checkpoint::NamedTensors tensors,
                       tests::RunCase(*model, Inputs(k), kOutputs),
                       sc.name + " case " + std::to_string(k));
      RETURN_IF_ERROR(checkpoint::SaveSafetensors(
          absl::StrCat(sdir, "/case_", k, ".safetensors"), tensors));
    }
  }
  return absl::OkStatus();
}

absl::Status Check(const std::string& dir) {
  for (const Scenario& sc : Scenarios()) {
    const std::string sdir = dir + "/" + sc.name;
    ASSIGN_OR_RETURN(LoadedT5 loaded, LoadT5ForConditionalGeneration(sdir + "/python_model"));
    if (!loaded.Report().empty()) return absl::InternalError(loaded.Report());
    for (int k = 0; k < 2; ++k) {
      const std::string path = absl::StrCat(sdir, "/python_case_", k, ".safetensors");
      ASSIGN_OR_RETURN(checkpoint::SafetensorsFile ref, checkpoint::LoadSafetensors(path));
      ASSIGN_OR_RETURN(checkpoint::NamedTensors mine,
                       tests::RunCase(*loaded.model, ref.tensors, kOutputs));
      for (const auto& [name, tensor] : mine) {
        const at::Tensor want = Find(ref.tensors, name);
        if (!want.defined()) return absl::InternalError(path + " lacks " + name);
        RETURN_IF_ERROR(
            tests::CompareWithin(absl::StrCat(sc.name, " case ", k, " ", name), tensor, want, kTolerance));
      }
    }
    RETURN_IF_ERROR(WriteGenerations(*loaded.model, sdir, "loom_check_"));
    std::vector<std::string> names;
    for (const nlohmann::json& entry : GenerateCases()) {
      names.push_back(entry["name"].get<std::string>());
    }
    RETURN_IF_ERROR(tests::CompareGenerations(sdir, names));
    std::cout << sc.name << ": loom on the reference's weights matches it (outputs, gradients, "
              << GenerateCases().size() << " generations)\n";
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::models::t5

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  at::set_num_threads(1);  // as the Python reference
  const std::string verb = argc == 3 ? argv[1] : "";
  if (verb != "write" && verb != "check") {
    std::cerr << "usage: t5_parity_tool write|check DIR\n";
    return 2;
  }
  const absl::Status status =
      verb == "write" ? loom::models::t5::Write(argv[2]) : loom::models::t5::Check(argv[2]);
  if (!status.ok()) {
    std::cerr << "t5_parity_tool " << verb << ": " << status << "\n";
    return 1;
  }
  return 0;
}
