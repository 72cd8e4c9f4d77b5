// The estimators print exactly what DeepSpeed prints for a table of inputs (the golden file
// estimate/testdata/golden.txt, written by estimate/make_golden.py from DeepSpeed 0.13.5's
// estimate_zero2_model_states_mem_needs (stage_1_and_2.py) and
// estimate_zero3_model_states_mem_needs (stage3.py)
// with Python's formatting, and checked against DeepSpeed's own functions when it was made);
// the JSON rows carry the same numbers; a run_glue-style folder (safetensors weights, or only a
// BERT config.json) counts the parameters a loaded model has, its largest layer included.
#include "estimate/memory_estimate.h"

#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_matchers.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/module_state.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/bert/bert_for_sequence_classification.h"
#include "nlohmann/json.hpp"

namespace loom::estimate {
namespace {

using ::loom::base::testing::StatusIs;

std::string Testdata(const std::string& name) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/loom/estimate/testdata/" + name;
}

TEST(MemoryEstimateTest, PrintsWhatDeepSpeedPrints) {
  std::ifstream in(Testdata("golden.txt"));
  ASSERT_TRUE(in) << "golden.txt";
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream head(line);
    std::string tag;
    int stage = 0;
    EstimateInputs inputs;
    ASSERT_TRUE(head >> tag >> stage >> inputs.total_params >> inputs.largest_layer_params >>
                inputs.num_gpus_per_node >> inputs.num_nodes >> inputs.additional_buffer_factor)
        << line;
    ASSERT_EQ(tag, "CASE");
    std::string want;
    while (std::getline(in, line) && line != "END") want += line + "\n";
    EXPECT_EQ(stage == 3 ? Zero3Table(inputs) : Zero2Table(inputs), want) << "case " << cases;
    ++cases;
  }
  EXPECT_EQ(cases, 15);
}

TEST(MemoryEstimateTest, JsonCarriesTheSameRows) {
  EstimateInputs in{
      .total_params = 2851774464, .largest_layer_params = 32900000, .num_gpus_per_node = 8};
  const nlohmann::json j = nlohmann::json::parse(TableJson(3, in));
  ASSERT_EQ(j["rows"].size(), 6u);
  const std::vector<EstimateRow> rows = Zero3Rows(in);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(j["rows"][i]["cpu_bytes"].get<int64_t>(), rows[i].needs.cpu_bytes);
    EXPECT_EQ(j["rows"][i]["gpu_bytes"].get<int64_t>(), rows[i].needs.gpu_bytes);
  }
  // Offloading everything leaves the largest layer on the GPU: 4 bytes per parameter.
  EXPECT_EQ(rows[0].needs.gpu_bytes, 4 * 32900000);
  EXPECT_EQ(j["rows"][0]["offload_param"], "cpu");
  EXPECT_EQ(nlohmann::json::parse(TableJson(2, in))["rows"].size(), 2u);
}

// loom's rows: the closed forms its strategies report (BERT-base at 2 ranks: ZeRO-3 16P/N + 4L =
// the 924.7 MiB //benchmarks:sharding compares with).
TEST(MemoryEstimateTest, LoomRows) {
  EstimateInputs in{
      .total_params = 109482240, .largest_layer_params = 23440896, .num_gpus_per_node = 2};
  const std::vector<LoomRow> rows = LoomRows(in);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].fp32_bytes, 16 * 109482240LL);
  EXPECT_FALSE(rows[0].bf16_bytes.has_value());
  EXPECT_EQ(rows[1].fp32_bytes, 8 * 109482240LL + 8 * 109482240LL);
  EXPECT_EQ(*rows[2].bf16_bytes, 2 * 109482240LL + 9 * 109482240LL);
  EXPECT_EQ(rows[3].fp32_bytes, 8 * 109482240LL + 4 * 23440896LL);
  EXPECT_NEAR(rows[3].fp32_bytes / 1048576.0, 924.7, 0.05);
  in.num_nodes = 2;  // hybrid shards within a node's 2 GPUs only
  EXPECT_EQ(LoomRows(in)[4].fp32_bytes, 8 * 109482240LL + 4 * 23440896LL);
  EXPECT_EQ(LoomRows(in)[3].fp32_bytes, 4 * 109482240LL + 4 * 23440896LL);
  EXPECT_THAT(LoomTable(in), ::testing::HasSubstr("        1.63GB |        n/a | DDP / FSDP no_shard\n"));
  const nlohmann::json j = nlohmann::json::parse(TableJson(3, in, /*loom=*/true));
  EXPECT_EQ(j["loom_rows"].size(), 5u);
  EXPECT_TRUE(j["loom_rows"][0]["bf16_bytes"].is_null());
}

// A saved BERT folder counts what the loaded model holds.
TEST(MemoryEstimateTest, FolderCountsTheLoadedModelsParameters) {
  models::bert::BertConfig c;
  c.vocab_size = 50;
  c.hidden_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 40;
  c.max_position_embeddings = 16;
  c.set_num_labels(3);
  ASSERT_OK_AND_ASSIGN(auto model, models::bert::BertForSequenceClassification::Create(c, 1));
  int64_t total = 0, largest = 0;
  for (const auto& m : model->modules(/*include_self=*/true)) {
    int64_t own = 0;
    for (const at::Tensor& p : m->parameters(/*recurse=*/false)) own += p.numel();
    largest = std::max(largest, own);
  }
  for (const at::Tensor& p : model->parameters()) total += p.numel();
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/bert";
  std::filesystem::create_directories(dir);
  ASSERT_OK(checkpoint::SaveModelWeights(dir, checkpoint::ModuleStateDict(*model), {}).status());
  ASSERT_OK_AND_ASSIGN(ModelParams got, ParamsOfFolder(dir));
  EXPECT_EQ(got.total_params, total);
  EXPECT_EQ(got.largest_layer_params, largest);
  EXPECT_EQ(largest, 50 * 24);  // the word embeddings
  // Only the config: the same counts, without weights.
  const std::string config_only = std::string(std::getenv("TEST_TMPDIR")) + "/config_only";
  std::filesystem::create_directories(config_only);
  ASSERT_OK(base::WriteFileAtomically(config_only + "/config.json", model->ConfigJson()));
  ASSERT_OK_AND_ASSIGN(ModelParams from_config, ParamsOfFolder(config_only));
  EXPECT_EQ(from_config.total_params, total);
  EXPECT_EQ(from_config.largest_layer_params, largest);
  EXPECT_THAT(ParamsOfFolder(std::string(std::getenv("TEST_TMPDIR")) + "/empty"),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

}  // namespace
}  // namespace loom::estimate
