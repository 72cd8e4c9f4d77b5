// generate: loom's generate (//generation) against generation written as a plain PyTorch loop in
// Python (benchmarks/generate_loop.py over tests/models/t5_reference.py, run by the Python torch
// of the same LibTorch: @libtorch//:python.sh), on the same weights and inputs.
//
//   ./bazelw run -c opt //benchmarks:generate [-- ROUNDS [NEW_TOKENS]]
//       ROUNDS default 3 (the best round counts; one untimed round first), NEW_TOKENS default 32
//
// Model: t5-small's shape (vocab 32128, d_model 512, d_kv 64, d_ff 2048, 6 + 6 layers, 8 heads,
// relu, tied embeddings) with random weights; a batch of 4 sources of 32 tokens. Every run makes
// exactly NEW_TOKENS tokens per sequence (min_length bans eos until max_length), greedy and beam
// search with 4 beams, with the key/value cache and without (use_cache false: the decoder reruns
// over the whole prefix). Both sides use their default threads. Prints tokens/s (sequences x
// new tokens / seconds) per case and loom / Python (goal >= 1.2x with the cache).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmarks/python_side.h"
#include "checkpoint/safetensors.h"
#include "generation/generate.h"
#include "logging/process_logging.h"
#include "models/t5/pretrained.h"
#include "nlohmann/json.hpp"
#include "precision/cpu_features.h"

namespace loom::benchmarks {
namespace {

constexpr int64_t kBatch = 4;
constexpr int64_t kSourceLength = 32;

struct Case {
  std::string name;
  int64_t beams;
  bool cache;
};

std::vector<Case> Cases() {
  return {{"greedy, cache", 1, true},
          {"greedy, no cache", 1, false},
          {"beam 4, cache", 4, true},
          {"beam 4, no cache", 4, false}};
}

nlohmann::json GenerateConfig(const Case& c, int64_t new_tokens) {
  return {{"num_beams", c.beams},
          {"use_cache", c.cache},
          {"max_new_tokens", new_tokens},
          {"min_length", new_tokens + 1}};
}

models::t5::T5Config T5SmallShape() {
  models::t5::T5Config c;  // T5Config's defaults are t5-small's
  c.decoder_start_token_id = 0;
  return c;
}

double Seconds(const std::chrono::steady_clock::time_point& start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double LoomSeconds(models::t5::T5ForConditionalGeneration& model, const at::Tensor& ids,
                   const at::Tensor& mask, const nlohmann::json& config, int rounds) {
  modeling::GenerationConfig g = model.generation_config();
  for (auto it = config.begin(); it != config.end(); ++it) (void)g.Set(it.key(), it.value());
  double best = 1e300;
  for (int r = 0; r <= rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<at::Tensor> out = generation::Generate(model, ids, mask, g);
    const double s = Seconds(start);
    if (!out.ok()) {
      std::cerr << out.status() << "\n";
      std::exit(1);
    }
    if (r > 0) best = std::min(best, s);  // round 0 warms up
  }
  return best;
}

nlohmann::json PythonSeconds(const std::string& runfiles, const std::string& scratch, int rounds,
                             const nlohmann::json& configs) {
  return RunPythonForJson(
      runfiles, "",
      absl::StrCat(runfiles, "/benchmarks/generate_loop.py ", runfiles,
                   "/tests/models/t5_reference.py ", scratch, "/model ", scratch,
                   "/inputs.safetensors ", rounds, " '", configs.dump(), "'"));
}

int Run(int rounds, int64_t new_tokens, const std::string& runfiles) {
  std::cout << precision::CurrentBf16Support().Describe() << "\n";
  const std::string scratch =
      (std::filesystem::temp_directory_path() / absl::StrCat("loom_generate_", getpid())).string();
  auto model = *models::t5::T5ForConditionalGeneration::Create(T5SmallShape(), 7);
  model->eval();
  (void)*models::t5::SaveT5ForConditionalGeneration(*model, scratch + "/model");
  torch::manual_seed(11);
  const at::Tensor ids = torch::randint(2, 32000, {kBatch, kSourceLength}, torch::kLong);
  const at::Tensor mask = torch::ones({kBatch, kSourceLength}, torch::kLong);
  (void)checkpoint::SaveSafetensors(scratch + "/inputs.safetensors",
                                    {{"input_ids", ids}, {"attention_mask", mask}});
  nlohmann::json configs = nlohmann::json::array();
  for (const Case& c : Cases()) configs.push_back({{"name", c.name}, {"config", GenerateConfig(c, new_tokens)}});
  const nlohmann::json python = PythonSeconds(runfiles, scratch, rounds, configs);
  const double tokens = static_cast<double>(kBatch * new_tokens);
  std::cout << absl::StrFormat("t5-small shape, batch %d, %d new tokens per sequence\n", kBatch,
                               new_tokens);
  std::cout << absl::StrFormat("%-18s %14s %14s %8s\n", "case", "loom tok/s", "PyTorch tok/s",
                               "ratio");
  for (const Case& c : Cases()) {
    const double loom = LoomSeconds(*model, ids, mask, GenerateConfig(c, new_tokens), rounds);
    const double py = python[c.name].get<double>();
    std::cout << absl::StrFormat("%-18s %14.1f %14.1f %7.2fx%s\n", c.name, tokens / loom,
                                 tokens / py, py / loom,
                                 c.cache ? "  (goal >= 1.20x)" : "");
  }
  std::filesystem::remove_all(scratch);
  return 0;
}

}  // namespace
}  // namespace loom::benchmarks

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const int64_t new_tokens = argc > 2 ? std::atoll(argv[2]) : 32;
  if (rounds < 1 || new_tokens < 1) {
    std::cerr << "usage: generate [ROUNDS >= 1 [NEW_TOKENS >= 1]]\n";
    return 2;
  }
  return loom::benchmarks::Run(rounds, new_tokens, loom::benchmarks::Runfiles(argv[0]));
}
