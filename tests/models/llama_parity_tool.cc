// The C++ half of //tests/models:llama_parity_test (see llama_reference.py for the Python half).
//   llama_parity_tool write DIR: for four scenarios (grouped-query attention with an untied
//     head; multi-head attention, tied head, biases and linear rope scaling; multi-query
//     attention with dynamic NTK scaling past max_position_embeddings; llama3 rope scaling),
//     writes DIR/<scenario>/model/ (SaveLlamaForCausalLM), case_<k>.safetensors (inputs and
//     loom's logits, loss and grad.<key> of every key) and gen_<name>.safetensors (loom's
//     GenerateCausal sequences for every generate.json entry: greedy with and without the
//     cache, processors, beam search, sampling with a generator seeded as the reference's).
//   --transformers-4.41 leaves out the llama3 scenario (transformers 4.43's rope type), for
//   llama_hf_interop_test.
//   llama_parity_tool check DIR: loads each DIR/<scenario>/python_model/ with
//     LoadLlamaForCausalLM and requires loom's outputs, gradients and generations on the
//     reference's cases to match python_case_<k> / python_gen_<name> (1e-6 (1 + |ref|); ids
//     exactly).
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/safetensors.h"
#include "tests/models/parity_tool_util.h"
#include "generation/generate.h"
#include "logging/process_logging.h"
#include "modeling/generation_config.h"
#include "models/llama/pretrained.h"
#include "nlohmann/json.hpp"

namespace loom::models::llama {
namespace {

using tests::Find;

// The outputs compared besides the loss and the gradients.
const std::vector<std::string> kOutputs = {"logits"};

constexpr double kTolerance = 1e-6;
constexpr uint64_t kSamplingSeed = 20261129;  // llama_reference.SAMPLING_SEED

struct Scenario {
  std::string name;
  LlamaConfig config;
};

LlamaConfig Base() {
  LlamaConfig c;
  c.vocab_size = 64;
  c.hidden_size = 32;
  c.intermediate_size = 40;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 64;
  c.initializer_range = 0.2;
  c.rms_norm_eps = 1e-5;
  c.pad_token_id = 0;
  c.bos_token_id = 1;
  c.eos_token_id = {2};
  return c;
}

RopeScaling Scaling(RopeScalingType type, const std::string& json_text) {
  RopeScaling r;
  r.type = type;
  r.json = nlohmann::json::parse(json_text);
  r.factor = r.json["factor"].get<double>();
  if (type == RopeScalingType::kLlama3) {
    r.low_freq_factor = r.json["low_freq_factor"].get<double>();
    r.high_freq_factor = r.json["high_freq_factor"].get<double>();
    r.original_max_position_embeddings = r.json["original_max_position_embeddings"].get<int64_t>();
  }
  return r;
}

// With `transformers_4_41`, only what transformers 4.41 has (llama3 rope scaling came in 4.43).
std::vector<Scenario> Scenarios(bool transformers_4_41) {
  std::vector<Scenario> out;
  out.push_back({"gqa_untied", Base()});
  LlamaConfig tied = Base();
  tied.num_key_value_heads = 4;
  tied.tie_word_embeddings = true;
  tied.attention_bias = true;
  tied.mlp_bias = true;
  tied.rope_theta = 500.0;
  tied.rope_scaling = Scaling(RopeScalingType::kLinear, R"({"type": "linear", "factor": 2.0})");
  out.push_back({"mha_tied_linear", tied});
  LlamaConfig mqa = Base();
  mqa.num_key_value_heads = 1;
  mqa.max_position_embeddings = 8;  // case 0's 12 positions exceed it
  mqa.rope_scaling = Scaling(RopeScalingType::kDynamic, R"({"type": "dynamic", "factor": 3.0})");
  out.push_back({"mqa_dynamic", mqa});
  if (transformers_4_41) return out;
  LlamaConfig llama3 = Base();
  llama3.hidden_size = 64;  // head_dim 16: frequencies on both sides of the wavelength bands
  llama3.rope_theta = 50.0;
  llama3.rope_scaling = Scaling(RopeScalingType::kLlama3, R"({"rope_type": "llama3",
      "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 2.0,
      "original_max_position_embeddings": 16})");
  out.push_back({"llama3_rope", llama3});
  return out;
}

// Case 0: three rows of 12 tokens, right-padded (rows 1, 2), labels -100 on the padding;
// case 1: two left-padded prompts of 5 (what generation takes).
checkpoint::NamedTensors Inputs(int k) {
  torch::manual_seed(200 + k);
  const int64_t batch = k == 0 ? 3 : 2, len = k == 0 ? 12 : 5;
  at::Tensor ids = torch::randint(3, 64, {batch, len}, torch::kLong);
  at::Tensor mask = torch::ones({batch, len}, torch::kLong);
  if (k == 0) {
    mask[1].narrow(0, 9, 3).fill_(0);
    mask[2].narrow(0, 4, 8).fill_(0);
  } else {
    mask[1].narrow(0, 0, 2).fill_(0);
  }
  ids.masked_fill_(mask == 0, 0);
  const at::Tensor labels = ids.masked_fill(mask == 0, -100);
  return {{"input_ids", ids}, {"attention_mask", mask}, {"labels", labels}};
}

nlohmann::json GenerateCases() {
  return nlohmann::json::parse(R"([
    {"name": "greedy", "case": 1, "config": {"max_new_tokens": 9}},
    {"name": "greedy_no_cache", "case": 1, "config": {"max_new_tokens": 9, "use_cache": false}},
    {"name": "greedy_max_length", "case": 1, "config": {"max_length": 12, "min_length": 9}},
    {"name": "greedy_penalties", "case": 1, "config": {"max_new_tokens": 9, "repetition_penalty": 1.5, "no_repeat_ngram_size": 2}},
    {"name": "beam3", "case": 1, "config": {"num_beams": 3, "num_return_sequences": 2, "max_new_tokens": 7}},
    {"name": "beam3_never", "case": 1, "config": {"num_beams": 3, "early_stopping": "never", "length_penalty": 0.5, "max_new_tokens": 7}},
    {"name": "sample", "case": 1, "config": {"do_sample": true, "max_new_tokens": 9, "num_return_sequences": 3}},
    {"name": "sample_warped", "case": 1, "config": {"do_sample": true, "temperature": 0.7, "top_k": 12, "top_p": 0.8, "repetition_penalty": 1.3, "max_new_tokens": 9}}
  ])");
}

absl::Status WriteGenerations(LlamaForCausalLM& model, const std::string& sdir,
                              const std::string& prefix) {
  model.eval();
  for (const nlohmann::json& entry : GenerateCases()) {
    modeling::GenerationConfig g = model.generation_config();
    for (auto it = entry["config"].begin(); it != entry["config"].end(); ++it) {
      RETURN_IF_ERROR(g.Set(it.key(), it.value()));
    }
    const checkpoint::NamedTensors inputs = Inputs(entry["case"].get<int>());
    generation::GenerateOptions options;
    options.generator = at::make_generator<at::CPUGeneratorImpl>(kSamplingSeed);
    ASSIGN_OR_RETURN(at::Tensor ids,
                     generation::GenerateCausal(model, Find(inputs, "input_ids"),
                                                Find(inputs, "attention_mask"), g, options),
                     entry["name"].get<std::string>());
    RETURN_IF_ERROR(checkpoint::SaveSafetensors(
        absl::StrCat(sdir, "/", prefix, "gen_", entry["name"].get<std::string>(), ".safetensors"),
        {{"sequences", ids}}));
  }
  return absl::OkStatus();
}

// Makes eos (id 2) a frequent choice, so that generated rows end at different lengths.
void FavourEos(LlamaForCausalLM& model) {
  torch::NoGradGuard no_grad;
  at::Tensor head = model.config().tie_word_embeddings ? model.model->embed_tokens->weight
                                                       : model.lm_head->weight;
  head[2].add_(head.mean(0) * 8.0);
}

absl::Status Write(const std::string& dir, bool transformers_4_41) {
  for (const Scenario& sc : Scenarios(transformers_4_41)) {
    const std::string sdir = dir + "/" + sc.name;
    ASSIGN_OR_RETURN(auto model, LlamaForCausalLM::Create(sc.config, 7));
    FavourEos(*model);
    RETURN_IF_ERROR(SaveLlamaForCausalLM(*model, sdir + "/model").status());
    RETURN_IF_ERROR(base::WriteFileAtomically(sdir + "/generate.json", GenerateCases().dump(2)));
    RETURN_IF_ERROR(WriteGenerations(*model, sdir, ""));
    for (int k = 0; k < 2; ++k) {
      ASSIGN_OR_RETURN(checkpoint::NamedTensors tensors,
                       tests::RunCase(*model, Inputs(k), kOutputs),
                       sc.name + " case " + std::to_string(k));
      RETURN_IF_ERROR(
          checkpoint::SaveSafetensors(absl::StrCat(sdir, "/case_", k, ".safetensors"), tensors));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGenerations(LlamaForCausalLM& model, const std::string& sdir) {
  RETURN_IF_ERROR(WriteGenerations(model, sdir, "loom_check_"));
  std::vector<std::string> names;
  for (const nlohmann::json& entry : GenerateCases()) names.push_back(entry["name"].get<std::string>());
  return tests::CompareGenerations(sdir, names);
}

absl::Status Check(const std::string& dir, bool transformers_4_41) {
  for (const Scenario& sc : Scenarios(transformers_4_41)) {
    const std::string sdir = dir + "/" + sc.name;
    ASSIGN_OR_RETURN(LoadedLlama loaded, LoadLlamaForCausalLM(sdir + "/python_model"));
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
    RETURN_IF_ERROR(CheckGenerations(*loaded.model, sdir));
    std::cout << sc.name << ": loom on the reference's weights matches it (outputs, gradients, "
              << GenerateCases().size() << " generations)\n";
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::models::llama

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  at::set_num_threads(1);  // as the Python reference
  const std::string verb = argc >= 3 ? argv[1] : "";
  const bool hf = argc == 4 && std::string(argv[3]) == "--transformers-4.41";
  if ((verb != "write" && verb != "check") || (argc == 4 && !hf) || argc > 4) {
    std::cerr << "usage: llama_parity_tool write|check DIR [--transformers-4.41]\n";
    return 2;
  }
  const absl::Status status = verb == "write" ? loom::models::llama::Write(argv[2], hf)
                                              : loom::models::llama::Check(argv[2], hf);
  if (!status.ok()) {
    std::cerr << "llama_parity_tool " << verb << ": " << status << "\n";
    return 1;
  }
  return 0;
}
