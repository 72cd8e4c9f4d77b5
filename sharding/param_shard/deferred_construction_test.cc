// Sharded construction at 2 ranks: a Llama built with deferred parameters (DeepSpeed's
// zero.Init, FSDP's meta-device loading) under ZeRO-3 and FSDP full_shard — from its seed, and
// from a folder of sharded safetensors — holds far less than the whole model while the strategy
// builds it, one decoder layer at a time, and its gathered weights then equal the model built
// whole in one process bit for bit.
#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/cpu_memory_limit.h"
#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/llama/llama_for_causal_lm.h"
#include "models/llama/pretrained.h"
#include "modeling/deferred_init.h"
#include "precision/training_precision.h"
#include "sharding/create_strategy.h"
#include "sharding/param_shard/param_shard.h"

namespace loom::sharding {
namespace {

using models::llama::LlamaConfig;
using models::llama::LlamaForCausalLM;

constexpr uint64_t kSeed = 7;

// 8 decoder layers: each rank keeps half of them, so a construction that built the model whole
// would need about twice what a sharded one holds.
LlamaConfig Config() {
  LlamaConfig c;
  c.vocab_size = 40;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 8;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 32;
  c.initializer_range = 0.2;
  return c;
}

int64_t WholeBytes(const torch::nn::Module& m) {
  int64_t bytes = 0;
  for (const at::Tensor& p : m.parameters()) bytes += p.numel() * p.element_size();
  return bytes;
}

void ConfigureZero3(args::TrainingArguments& a) {
  a.set_deepspeed(
      R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}})");
}

void ConfigureFsdp(args::TrainingArguments& a) {
  a.add_fsdp("full_shard");
  a.add_fsdp("auto_wrap");
  a.set_fsdp_config(R"({"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]})");
}

// `folder` empty: the model from its seed (CreateDeferred); else loaded deferred from it.
int Child(int rank, int port, bool zero3, const std::string& folder) {
  // A limit far above what the test uses: it only counts the CPU tensor bytes, for the peak.
  CHILD_CHECK(::setenv(base::kCpuMemoryLimitEnv, "1TiB", 1) == 0);
  CHILD_CHECK_OK(base::InstallCpuMemoryLimitFromEnv().status());
  auto pg = distributed::testing::JoinGroup(rank, 2, port);
  CHILD_CHECK_OK(pg.status());
  std::shared_ptr<LlamaForCausalLM> model;
  if (folder.empty()) {
    auto built = LlamaForCausalLM::CreateDeferred(Config(), kSeed);
    CHILD_CHECK_OK(built.status());
    model = *built;
  } else {
    auto loaded = models::llama::LoadLlamaForCausalLM(folder, {.seed = kSeed, .deferred = true});
    CHILD_CHECK_OK(loaded.status());
    model = loaded->model;
  }
  CHILD_CHECK(modeling::AnyDeferred(*model));
  const int64_t whole = WholeBytes(*model);
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
  auto precision = precision::TrainingPrecision::Create(precision::PrecisionPolicy{});
  CHILD_CHECK_OK(precision.status());
  args::TrainingArguments args;
  zero3 ? ConfigureZero3(args) : ConfigureFsdp(args);
  const int64_t before = base::CurrentCpuMemoryStats()->live;
  base::ResetCpuMemoryPeak();
  auto strategy = CreateStrategy(StrategyOptions()
                                     .set_args(&args)
                                     .set_model(model.get())
                                     .set_optimizer(&opt)
                                     .set_precision(precision->get())
                                     .set_process_group(&*pg));
  CHILD_CHECK_OK(strategy.status());
  const int64_t held = base::CurrentCpuMemoryStats()->peak - before;
  // Half the layers' shards, the root, one layer being built (and allocator rounding).
  if (held >= whole * 7 / 10) {
    std::fprintf(stderr, "rank %d: construction held %ld bytes of a %ld-byte model\n", rank,
                 static_cast<long>(held), static_cast<long>(whole));
    return 1;
  }
  CHILD_CHECK(!model->parameter_fill());  // the shards hold the values now
  // Gathered, the weights equal the model built whole in one process from the same seed (or
  // the saved one: the same seed wrote it).
  CHILD_CHECK_OK((*strategy)->BeginFullParameters());
  auto reference = LlamaForCausalLM::Create(Config(), kSeed);
  CHILD_CHECK_OK(reference.status());
  const auto want = (*reference)->named_parameters();
  for (const auto& item : model->named_parameters()) {
    const at::Tensor* expected = want.find(item.key());
    CHILD_CHECK(expected != nullptr);
    if (!at::equal(item.value(), *expected)) {
      std::fprintf(stderr, "rank %d: %s differs\n", rank, item.key().c_str());
      return 1;
    }
  }
  CHILD_CHECK_OK((*strategy)->EndFullParameters(false));
  return 0;
}

void RunTwoRanks(bool zero3, const std::string& folder) {
  ASSERT_OK_AND_ASSIGN(const int port, base::PickFreePort());
  EXPECT_THAT(distributed::testing::RunRanks(
                  2, absl::Seconds(60),
                  [&](int rank) { return Child(rank, port, zero3, folder); }),
              ::testing::Each(0));
}

TEST(DeferredConstructionTest, Zero3FromTheSeedEqualsOneProcessInit) { RunTwoRanks(true, ""); }

TEST(DeferredConstructionTest, FsdpFromTheSeedEqualsOneProcessInit) { RunTwoRanks(false, ""); }

// The weights streamed from a folder of several safetensors shards with an index.
TEST(DeferredConstructionTest, Zero3FromShardedSafetensorsEqualsTheSavedModel) {
  const std::string folder = absl::StrCat(std::getenv("TEST_TMPDIR"), "/saved");
  ASSERT_OK_AND_ASSIGN(auto saved, LlamaForCausalLM::Create(Config(), kSeed));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> files,
                       models::llama::SaveLlamaForCausalLM(*saved, folder,
                                                           {.max_shard_size = 40'000}));
  EXPECT_THAT(files, ::testing::Contains("model.safetensors.index.json"));
  RunTwoRanks(true, folder);
  RunTwoRanks(false, folder);
}

}  // namespace
}  // namespace loom::sharding
