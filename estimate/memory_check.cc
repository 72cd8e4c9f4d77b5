#include "estimate/memory_check.h"

#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "args/training_args.pb.h"
#include "base/fork_ranks.h"
#include "base/free_port.h"
#include "distributed/collectives.h"
#include "distributed/distributed_env.h"
#include "distributed/process_group.h"
#include "estimate/memory_estimate.h"
#include "models/bert/bert_for_sequence_classification.h"
#include "precision/training_precision.h"
#include "sharding/create_strategy.h"

namespace loom::estimate {
namespace {

struct Strategy {
  const char* name;
  const char* deepspeed;  // or null
  bool fsdp;              // --fsdp "full_shard auto_wrap"
  size_t loom_row;        // LoomRows index
};
constexpr Strategy kStrategies[] = {
    {"DDP", nullptr, false, 0},
    {"ZeRO-1", R"({"zero_optimization": {"stage": 1}})", false, 1},
    {"ZeRO-2", R"({"zero_optimization": {"stage": 2}})", false, 2},
    {"ZeRO-3", R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}})",
     false, 3},
    {"FSDP full_shard", nullptr, true, 3},
};

// A rank that has not finished its two steps by then is hung: the check stops them all.
constexpr absl::Duration kRanksDeadline = absl::Minutes(5);

models::bert::BertConfig CheckConfig() {
  models::bert::BertConfig c;
  c.vocab_size = 1000;
  c.hidden_size = 256;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 4;
  c.intermediate_size = 1024;
  c.max_position_embeddings = 64;
  return c;
}

// One rank: join, build, two steps, rank 0 writes its bytes to `out`. Returns an exit code.
int Rank(const Strategy& s, int rank, int world, int port, const std::string& out) {
  auto env = distributed::DistributedEnvFromMap({{"RANK", std::to_string(rank)},
                                                 {"WORLD_SIZE", std::to_string(world)},
                                                 {"MASTER_ADDR", "127.0.0.1"},
                                                 {"MASTER_PORT", std::to_string(port)}});
  if (!env.ok()) return 10;
  distributed::ProcessGroupOptions options;
  options.timeout = absl::Seconds(120);
  auto pg = distributed::CreateProcessGroup(*env, options);
  if (!pg.ok()) return 11;
  at::set_num_threads(1);
  auto model = models::bert::BertForSequenceClassification::Create(CheckConfig(), /*seed=*/1);
  if (!model.ok()) return 12;
  torch::optim::AdamW opt((*model)->parameters(), torch::optim::AdamWOptions(1e-4));
  auto precision = precision::TrainingPrecision::Create(precision::PrecisionPolicy{});
  if (!precision.ok()) return 13;
  args::TrainingArguments args;
  if (s.deepspeed != nullptr) args.set_deepspeed(s.deepspeed);
  if (s.fsdp) {
    args.add_fsdp("full_shard");
    args.add_fsdp("auto_wrap");
    args.set_fsdp_config(R"({"transformer_layer_cls_to_wrap": ["BertLayer"]})");
  }
  auto strategy = sharding::CreateStrategy(sharding::StrategyOptions()
                                               .set_args(&args)
                                               .set_model(model->get())
                                               .set_optimizer(&opt)
                                               .set_precision(precision->get())
                                               .set_process_group(&*pg));
  if (!strategy.ok()) {
    std::fprintf(stderr, "estimate_memory --check: %s: %s\n", s.name,
                 std::string(strategy.status().message()).c_str());
    return 14;
  }
  at::Generator gen = at::detail::createCPUGenerator(7 + rank);
  for (int step = 0; step < 2; ++step) {
    data::Batch batch = {{"input_ids", at::randint(1, 1000, {2, 32}, gen, at::kLong)},
                         {"labels", at::randint(0, 2, {2}, gen, at::kLong)}};
    if (!(*strategy)->BeforeForward(true).ok()) return 15;
    auto output = (*model)->TryForward(batch);
    if (!output.ok()) return 16;
    output->loss.backward();
    if (!(*strategy)->AfterBackward().ok() || !(*strategy)->ClipGradients(1.0).ok() ||
        !(*strategy)->OptimizerStep().ok()) {
      return 17;
    }
    if (step == 1 && rank == 0) {
      std::ofstream(out) << (*strategy)->StateBytes().Total();
    }
    (*strategy)->ZeroGrad();
  }
  if (!distributed::Barrier(*pg).ok()) return 18;
  return 0;
}

}  // namespace

absl::StatusOr<std::vector<CheckRow>> RunMemoryCheck(int ranks) {
  if (ranks < 1) return absl::InvalidArgumentError("--check needs at least one rank");
  // The model's counts, as the estimator takes them.
  EstimateInputs in;
  in.num_gpus_per_node = ranks;
  {
    auto model = models::bert::BertForSequenceClassification::Create(CheckConfig(), 1);
    if (!model.ok()) return model.status();
    for (const auto& m : (*model)->modules(/*include_self=*/true)) {
      int64_t own = 0;
      for (const at::Tensor& p : m->parameters(/*recurse=*/false)) own += p.numel();
      in.largest_layer_params = std::max(in.largest_layer_params, own);
    }
    for (const at::Tensor& p : (*model)->parameters()) in.total_params += p.numel();
  }
  const std::vector<LoomRow> estimates = LoomRows(in);
  std::vector<CheckRow> rows;
  for (const Strategy& s : kStrategies) {
    absl::StatusOr<int> port = base::PickFreePort();
    if (!port.ok()) return port.status();
    const std::string out = absl::StrCat("/tmp/loom_memory_check_", getpid());
    base::ForkRanksOptions fork_options;
    fork_options.label = absl::StrCat("estimate_memory --check: ", s.name);
    fork_options.deadline = kRanksDeadline;
    absl::Status ranks_status = base::ForkRanks(
        ranks,
        [&](int r) {
          const int code = Rank(s, r, ranks, *port, out);
          if (code == 0) return absl::OkStatus();
          return absl::InternalError(absl::StrCat("Rank() returned ", code));
        },
        fork_options);
    if (!ranks_status.ok()) return ranks_status;
    CheckRow row;
    row.strategy = s.name;
    std::ifstream(out) >> row.measured_bytes;
    std::remove(out.c_str());
    row.estimated_bytes = estimates[s.loom_row].fp32_bytes;
    rows.push_back(row);
  }
  return rows;
}

std::string FormatCheck(const std::vector<CheckRow>& rows, int ranks) {
  std::string out =
      absl::StrCat("Measured on this machine: 2 steps of a BERT (hidden 256, 4 layers) at ", ranks,
                   " ranks, fp32, AdamW — rank 0's model-state bytes vs loom's estimate:\n");
  for (const CheckRow& r : rows) {
    out += absl::StrFormat("  %-16s measured %9.2f MiB, estimated %9.2f MiB (%.3fx)\n", r.strategy,
                           r.measured_bytes / 1048576.0, r.estimated_bytes / 1048576.0,
                           static_cast<double>(r.measured_bytes) / r.estimated_bytes);
  }
  return out;
}

}  // namespace loom::estimate
