// ZeRO-3 checkpoints under ZeRO-Infinity (offload_optimizer and offload_param on NVMe, several
// sub-groups) at 2 ranks are saved and resumed one sub-group and one piece at a time: a run
// resumed from its checkpoint into a model with other weights steps to the same weights bit
// for bit as the run that saved it, and neither the save nor the resume held half of the
// rank's optimizer state (fp32 master + exp_avg + exp_avg_sq) at once. Reading every sub-group
// back (SwapInAll) and fetching every shard, as a whole-state save does, holds all of it.
#include <torch/torch.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/cpu_memory_limit.h"
#include "base/free_port.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "distributed/collectives.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/llama/llama_for_causal_lm.h"
#include "optim/fused_cpu_optim.h"
#include "precision/training_precision.h"
#include "sharding/create_strategy.h"
#include "sharding/param_shard/param_shard.h"

namespace loom::sharding {
namespace {

using models::llama::LlamaConfig;
using models::llama::LlamaForCausalLM;

LlamaConfig Config() {
  LlamaConfig c;
  c.vocab_size = 64;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 12;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 32;
  return c;
}

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

// ZeRO-Infinity: both offloads on NVMe, sub-groups of about one decoder layer's shard.
std::string DeepSpeedConfig() {
  const std::string nvme = Tmp() + "/nvme";
  return absl::StrCat(
      R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0, )",
      R"("sub_group_size": 20000, "offload_optimizer": {"device": "nvme", "nvme_path": ")", nvme,
      R"(", "buffer_count": 2}, "offload_param": {"device": "nvme", "nvme_path": ")", nvme,
      R"(", "buffer_count": 3, "max_in_cpu": 0}}})");
}

struct Run {
  std::shared_ptr<LlamaForCausalLM> model;
  std::unique_ptr<optim::FusedCpuAdamW> optimizer;
  std::unique_ptr<precision::TrainingPrecision> precision;
  std::unique_ptr<ShardingStrategy> strategy;
};

absl::StatusOr<Run> MakeRun(uint64_t seed, distributed::ProcessGroup* pg) {
  Run run;
  ASSIGN_OR_RETURN(run.model, LlamaForCausalLM::Create(Config(), seed));
  run.optimizer = std::make_unique<optim::FusedCpuAdamW>(
      run.model->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
  ASSIGN_OR_RETURN(run.precision, precision::TrainingPrecision::Create(precision::PrecisionPolicy{}));
  args::TrainingArguments args;
  args.set_deepspeed(DeepSpeedConfig());
  args.set_optim("adamw_torch_fused");  // loom's CPU Adam, as ZeRO-Offload wants
  ASSIGN_OR_RETURN(run.strategy, CreateStrategy(StrategyOptions()
                                                    .set_args(&args)
                                                    .set_model(run.model.get())
                                                    .set_optimizer(run.optimizer.get())
                                                    .set_precision(run.precision.get())
                                                    .set_process_group(pg)));
  return run;
}

absl::Status Step(Run& run, int rank, int step) {
  at::Generator gen = at::detail::createCPUGenerator(100 * step + rank);
  const at::Tensor ids = torch::randint(0, 64, {2, 12}, gen, at::kLong);
  RETURN_IF_ERROR(run.strategy->BeforeForward(true));
  ASSIGN_OR_RETURN(modeling::ModelOutput out,
                   run.model->TryForward({{"input_ids", ids}, {"labels", ids}}));
  out.loss.backward();
  RETURN_IF_ERROR(run.strategy->AfterBackward());
  RETURN_IF_ERROR(run.strategy->OptimizerStep().status());
  run.strategy->ZeroGrad();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<at::Tensor>> Weights(Run& run) {
  RETURN_IF_ERROR(run.strategy->BeginFullParameters());
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : run.model->parameters()) out.push_back(p.detach().clone());
  RETURN_IF_ERROR(run.strategy->EndFullParameters(false));
  return out;
}

// Bytes held at most (above what was live before) while `fn` ran.
template <typename Fn>
int64_t HeldDuring(const Fn& fn, absl::Status* status) {
  const int64_t before = base::CurrentCpuMemoryStats()->live;
  base::ResetCpuMemoryPeak();
  *status = fn();
  return base::CurrentCpuMemoryStats()->peak - before;
}

int Child(int rank, int port) {
  // A limit far above what the test uses: it only counts the CPU bytes, for the peaks.
  CHILD_CHECK(::setenv(base::kCpuMemoryLimitEnv, "1TiB", 1) == 0);
  CHILD_CHECK_OK(base::InstallCpuMemoryLimitFromEnv().status());
  auto pg = distributed::testing::JoinGroup(rank, 2, port);
  CHILD_CHECK_OK(pg.status());
  auto saved = MakeRun(5, &*pg);
  CHILD_CHECK_OK(saved.status());
  auto* zero3 = dynamic_cast<ParamShardStrategy*>(saved->strategy.get());
  CHILD_CHECK(zero3 != nullptr);
  int64_t state_bytes = 0;  // this rank's fp32 master shards and their two Adam states
  for (const FullShardRunner::Piece& piece : zero3->runner().pieces()) {
    state_bytes += 3 * piece.flat->shard().numel() * 4;
  }
  for (int step = 0; step < 2; ++step) CHILD_CHECK_OK(Step(*saved, rank, step));
  const std::string folder = Tmp() + "/checkpoint";
  absl::Status status;
  const int64_t save_held = HeldDuring(
      [&] { return saved->strategy->SaveState(folder, {.global_step = 2}); }, &status);
  CHILD_CHECK_OK(status);
  at::Tensor barrier = at::zeros({1});
  CHILD_CHECK_OK(distributed::AllReduce(*pg, barrier));  // every rank's file is written
  CHILD_CHECK_OK(Step(*saved, rank, 2));
  auto want = Weights(*saved);
  CHILD_CHECK_OK(want.status());

  auto resumed = MakeRun(6, &*pg);  // other weights: everything must come from the files
  CHILD_CHECK_OK(resumed.status());
  const int64_t load_held =
      HeldDuring([&] { return resumed->strategy->LoadState(folder); }, &status);
  CHILD_CHECK_OK(status);
  CHILD_CHECK_OK(Step(*resumed, rank, 2));
  auto got = Weights(*resumed);
  CHILD_CHECK_OK(got.status());
  CHILD_CHECK(got->size() == want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    if (!at::equal((*got)[i], (*want)[i])) {
      std::fprintf(stderr, "rank %d: parameter %zu differs after resuming\n", rank, i);
      return 1;
    }
  }
  std::fprintf(stderr, "rank %d: optimizer state %ld bytes; save held %ld, resume held %ld\n",
               rank, static_cast<long>(state_bytes), static_cast<long>(save_held),
               static_cast<long>(load_held));
  CHILD_CHECK(save_held < state_bytes / 2);
  CHILD_CHECK(load_held < state_bytes / 2);
  return 0;
}

// One rank cannot write its files (its folder is under a regular file); it still takes part in
// every gather, so the other rank's save completes and both return: the failing one with an
// error naming its path. (A rank that returned at its first error left the other waiting in
// the next gather.)
int ChildWithBadFolder(int rank, int port) {
  auto pg = distributed::testing::JoinGroup(rank, 2, port);
  CHILD_CHECK_OK(pg.status());
  auto run = MakeRun(5, &*pg);
  CHILD_CHECK_OK(run.status());
  CHILD_CHECK_OK(Step(*run, rank, 0));
  const std::string blocker = Tmp() + "/not_a_folder";
  const std::string folder = rank == 1 ? blocker + "/checkpoint" : Tmp() + "/good";
  const absl::Status saved = run->strategy->SaveState(folder, {.global_step = 1});
  if (rank == 0) {
    CHILD_CHECK_OK(saved);
  } else {
    CHILD_CHECK(!saved.ok());
    CHILD_CHECK(absl::StrContains(saved.message(), blocker));
  }
  // Still in step: one more collective together.
  at::Tensor barrier = at::ones({1});
  CHILD_CHECK_OK(distributed::AllReduce(*pg, barrier));
  CHILD_CHECK(barrier.item<float>() == 2);
  return 0;
}

TEST(StreamingCheckpointTest, ARankThatCannotWriteDoesNotStrandTheOthers) {
  ::mkdir((Tmp() + "/nvme").c_str(), 0755);
  FILE* f = std::fopen((Tmp() + "/not_a_folder").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  ASSERT_OK_AND_ASSIGN(const int port, base::PickFreePort());
  EXPECT_THAT(distributed::testing::RunRanks(
                  2, absl::Seconds(60), [&](int rank) { return ChildWithBadFolder(rank, port); }),
              ::testing::Each(0));
}

TEST(StreamingCheckpointTest, Zero3NvmeSavesAndResumesOneSubGroupAtATime) {
  const int made = ::mkdir((Tmp() + "/nvme").c_str(), 0755);
  ASSERT_TRUE(made == 0 || errno == EEXIST);
  ASSERT_OK_AND_ASSIGN(const int port, base::PickFreePort());
  EXPECT_THAT(distributed::testing::RunRanks(2, absl::Seconds(120),
                                             [&](int rank) { return Child(rank, port); }),
              ::testing::Each(0));
}

}  // namespace
}  // namespace loom::sharding
