// loom's device paths, checked on whatever device LOOM_CHECK_DEVICE names: "cpu" (the default;
// how CI runs it) or "cuda" (gpu/device_check.sh on the lent GPU machine, where a missing GPU is
// a failure, never a skip). Each test is one check of the GPU report; run them one per process
// (--gtest_filter), as device_check.sh does: the two-rank test forks, which must happen before
// the process touches CUDA.
//
//   Fp16GradScalerSkipsPlantedInf      --fp16's GradScaler (torch.amp.GradScaler's rules) in the
//                                      Trainer: a planted inf loss skips exactly that step
//                                      (weights and lr stand still) and halves the scale
//   DeepSpeedLossScalerHysteresis      DeepSpeed 0.13.5 DynamicLossScaler with hysteresis 2 over
//                                      fp16 weights and fp32 masters (precision/master_weights.h)
//   ProcessGroupOfOneCollectives       NCCL (gloo on the CPU) group of one: the collectives
//   ShardedStrategiesAtOneRank         ZeRO-1/2/3 and FSDP full_shard over that group == one
//                                      process without strategies
//   TwoGlooRanksWithDeviceTensors      ZeRO-1/2/3 and FSDP at 2 ranks over Gloo, the model on
//                                      the device (loom stages Gloo's tensors on the CPU) == DDP
//                                      over the same group
//   ZeroOffloadPinsHostMemory          ZeRO-2 offload_optimizer cpu + pin_memory: page-locked
//                                      masters and gradients on a GPU, same weights
//   NvmeOffload                        ZeRO-3 with optimizer and parameters swapped to files
//                                      on this machine's disk, same weights
//   GradientCheckpointing              activation recomputation on the device, same weights
//   CheckpointsMoveBetweenDevices      a checkpoint saved on one device resumes on the other
//                                      (CPU <-> CUDA) and continues as the uninterrupted run
// Figures go to stdout as "figure NAME: ..." lines. Run with OMP_NUM_THREADS=1 (the BUILD rule and
// device_check.sh set it): with a Gloo group in the process, LibTorch's spin-waiting intra-op
// threads make these millisecond steps take 100 times longer on a 2-core machine.
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/free_port.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "distributed/collectives.h"
#include "distributed/distributed_env.h"
#include "distributed/multiprocess_testing.h"
#include "distributed/process_group.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/bert/bert_for_sequence_classification.h"
#include "precision/loss_scaler.h"
#include "precision/master_weights.h"
#include "precision/policy.h"
#include "tests/resume/resume_harness.h"
#include "tests/trainer/test_util.h"
#include "trainer/resume_position.h"
#include "trainer/trainer.h"

namespace loom {
namespace {

using models::bert::BertConfig;
using models::bert::BertForSequenceClassification;
using ::testing::Each;

// --- The device under test ---

bool WantCuda() {
  const char* d = std::getenv("LOOM_CHECK_DEVICE");
  return d != nullptr && std::string(d) == "cuda";
}

// The device the checks must run on; fails the test when CUDA is asked for and absent.
at::Device CheckDevice() {
  if (!WantCuda()) return at::Device(at::kCPU);
  EXPECT_TRUE(torch::cuda::is_available()) << "LOOM_CHECK_DEVICE=cuda but no CUDA device here";
  return at::Device(at::kCUDA, 0);
}

std::string Dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/cuda_checks/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void Figure(const std::string& name, const std::string& text) {
  std::cout << "figure " << name << ": " << text << std::endl;
}

double MaxAbsDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    m = std::max(m, (a[i].to(at::kCPU, at::kDouble) - b[i].to(at::kCPU, at::kDouble))
                        .abs()
                        .max()
                        .item<double>());
  }
  return m;
}

// --- A tiny BERT and its data ---

BertConfig TinyBert(double dropout) {
  BertConfig c;
  c.vocab_size = 30;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 24;
  c.max_position_embeddings = 16;
  c.hidden_dropout_prob = dropout;
  c.attention_probs_dropout_prob = dropout;
  c.set_num_labels(2);
  return c;
}

std::shared_ptr<const data::Dataset> BertData(int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor ids = at::randint(1, 30, {n, 8}, gen, at::kLong);
  at::Tensor labels = ids.select(1, 0).remainder(2);
  return *data::TensorDataset::Create({{"input_ids", ids}, {"labels", labels}});
}

struct BertRun {
  std::string dir;
  nlohmann::ordered_json args;  // on top of the defaults below
  double dropout = 0.0;
  int64_t examples = 32;
  std::optional<distributed::ProcessGroup> group;
  std::optional<trainer::ResumeFrom> resume;
  std::vector<std::shared_ptr<trainer::TrainerCallback>> callbacks;
};

struct BertResult {
  std::vector<at::Tensor> weights;  // on the CPU
  at::Device device = at::kCPU;
  double train_loss = 0;
  std::vector<at::Tensor> optimizer_params;  // what the optimizer steps (ZeRO: partitions)
};

// A Trainer whose whole parameters a check can read after training (ZeRO-3 and FSDP keep only
// shards between uses).
class ReadableTrainer : public trainer::Trainer {
 public:
  using Trainer::Trainer;
  using Trainer::WithFullParameters;
};

// Trains the tiny BERT (seed 7 weights) on 32 examples, batch 4, 2 epochs, AdamW.
absl::StatusOr<BertResult> TrainBert(BertRun run) {
  ASSIGN_OR_RETURN(auto model, BertForSequenceClassification::Create(TinyBert(run.dropout), 7));
  nlohmann::ordered_json values = {{"output_dir", run.dir},
                                   {"num_train_epochs", 2},
                                   {"per_device_train_batch_size", 4},
                                   {"learning_rate", 1e-2},
                                   {"save_strategy", "no"},
                                   {"report_to", {"none"}},
                                   {"disable_tqdm", true},
                                   {"seed", 3},
                                   {"use_cpu", !WantCuda()},
                                   {"logging_steps", 4},
                                   {"dataloader_drop_last", true}};
  for (auto& [k, v] : run.args.items()) values[k] = v;
  ASSIGN_OR_RETURN(args::TrainingArguments a, trainer::testing::ParseArgs(values));
  trainer::TrainerOptions o;
  o.model = model;
  o.args = a;
  o.train_dataset = BertData(run.examples, 4);
  o.process_group = std::move(run.group);
  o.callbacks = std::move(run.callbacks);
  ASSIGN_OR_RETURN(auto t, trainer::Trainer::Create<ReadableTrainer>(std::move(o)));
  ASSIGN_OR_RETURN(trainer::TrainOutput out, t->Train(run.resume));
  BertResult r;
  r.device = t->device();
  r.train_loss = out.training_loss;
  RETURN_IF_ERROR(t->WithFullParameters(
      [&]() -> absl::Status {
        for (const at::Tensor& p : model->parameters()) {
          r.weights.push_back(p.detach().cpu().clone());
        }
        return absl::OkStatus();
      },
      /*write_back=*/false));
  for (const auto& g : t->optimizer()->param_groups()) {
    for (const at::Tensor& p : g.params()) r.optimizer_params.push_back(p);
  }
  return r;
}

absl::StatusOr<distributed::ProcessGroup> GroupOfOne(const std::string& backend) {
  ASSIGN_OR_RETURN(const int port, base::PickFreePort());
  const distributed::EnvMap vars = {{"RANK", "0"},
                                    {"WORLD_SIZE", "1"},
                                    {"MASTER_ADDR", "127.0.0.1"},
                                    {"MASTER_PORT", std::to_string(port)}};
  ASSIGN_OR_RETURN(distributed::DistributedEnv env, distributed::DistributedEnvFromMap(vars));
  distributed::ProcessGroupOptions options;
  options.backend = backend;
  options.timeout = absl::Seconds(60);
  return distributed::CreateProcessGroup(env, options);
}

// DeepSpeed clips only with "gradient_clipping" in its config (HF fills "auto" from
// --max_grad_norm; absent, DeepSpeed's default 0 turns clipping off), so every config here says
// "auto" to clip as the run without a strategy does.
constexpr char kClip[] = R"("gradient_clipping": "auto"})";

// The strategies every sharded check runs, as TrainingArguments fields.
struct Strategy {
  std::string name;
  nlohmann::ordered_json args;
};

std::vector<Strategy> ShardedStrategies() {
  return {
      {"zero1", {{"deepspeed", absl::StrCat(R"({"zero_optimization": {"stage": 1}, )", kClip)}}},
      {"zero2", {{"deepspeed", absl::StrCat(R"({"zero_optimization": {"stage": 2}, )", kClip)}}},
      {"zero3", {{"deepspeed", absl::StrCat(R"({"zero_optimization": {"stage": 3}, )", kClip)}}},
      {"fsdp_full_shard", {{"fsdp", "full_shard auto_wrap"}}},
  };
}

// --- --fp16's GradScaler in the Trainer ---

// The weights when training begins; after each step: the scale, the lr, the weights and how
// many planted micro-batches the model has seen so far.
class ScaleRecorder : public trainer::TrainerCallback {
 public:
  explicit ScaleRecorder(std::shared_ptr<int64_t> spikes) : spikes_(std::move(spikes)) {}
  std::string Name() const override { return "ScaleRecorder"; }
  absl::Status OnTrainBegin(const trainer::Event& e) override {
    if (e.context.lr_scheduler != nullptr) initial_lr = e.context.lr_scheduler->LastLr().front();
    weights.push_back(Weights());
    return absl::OkStatus();
  }
  absl::Status OnStepEnd(const trainer::Event& e) override {
    scales.push_back(trainer_->grad_scaler()->State().scale);
    lrs.push_back(e.context.lr_scheduler->LastLr().front());
    weights.push_back(Weights());
    spikes_seen.push_back(*spikes_);
    return absl::OkStatus();
  }
  trainer::Trainer* trainer_ = nullptr;
  double initial_lr = -1;  // -1: not known
  std::vector<double> scales, lrs;
  std::vector<int64_t> spikes_seen;
  std::vector<std::vector<at::Tensor>> weights;  // [0]: before the first step

 private:
  std::vector<at::Tensor> Weights() {
    std::vector<at::Tensor> w;
    for (const at::Tensor& p : trainer_->model().parameters())
      w.push_back(p.detach().cpu().clone());
    return w;
  }
  std::shared_ptr<int64_t> spikes_;
};

// Options for the GradScaler run: --fp16 on CUDA; its scaler step in fp32 on the CPU (--fp16 is
// CUDA-only). Token 13 first in a row gives a micro-batch an infinite loss.
std::function<void(trainer::TrainerOptions&)> Fp16WithSpikes(const at::Device& device,
                                                             std::shared_ptr<int64_t> spikes) {
  return [device, spikes](trainer::TrainerOptions& o) {
    o.args.set_eval_strategy("no");
    if (device.is_cuda()) {
      o.args.set_fp16(true);  // autocast to fp16 and HF's GradScaler, from the flags
    } else {
      o.args.set_use_cpu(true);
      precision::PrecisionPolicy p;
      p.grad_scaler = precision::GradScalerOptions();
      o.precision = p;
    }
    o.model_init = [spikes]() -> absl::StatusOr<std::shared_ptr<trainer::Model>> {
      return tests::MakeDropoutClassifier(/*inf_loss_token=*/13, spikes);
    };
  };
}

TEST(CudaChecks, Fp16GradScalerSkipsPlantedInf) {
  const at::Device device = CheckDevice();
  auto spikes = std::make_shared<int64_t>(0);
  auto recorder = std::make_shared<ScaleRecorder>(spikes);
  ASSERT_OK_AND_ASSIGN(auto t, tests::MakeResumeTrainer(Dir("fp16"), {recorder}, "no", 3,
                                                        Fp16WithSpikes(device, spikes)));
  recorder->trainer_ = t.get();
  ASSERT_OK(t->Train().status());
  EXPECT_EQ(t->device(), device);
  if (device.is_cuda()) {
    EXPECT_EQ(t->precision_policy().backend, "cuda_amp") << t->precision_policy().Describe();
  }
  ASSERT_GT(*spikes, 0) << "no planted inf reached the model";
  // torch.amp.GradScaler: init 2^16, backoff 0.5, growth_interval 2000 (no growth in 15
  // steps). A step is skipped exactly when its window held a planted micro-batch.
  double expected = 65536.0, previous_lr = recorder->initial_lr;
  int64_t skipped = 0, seen = 0;
  for (size_t i = 0; i < recorder->scales.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    const bool skip = recorder->spikes_seen[i] > seen;
    seen = recorder->spikes_seen[i];
    if (skip) {
      expected *= 0.5;
      ++skipped;
    }
    EXPECT_EQ(recorder->scales[i], expected);
    // A skipped step leaves every weight bit for bit and the lr (HF skips the scheduler); any
    // other step with a learning rate above 0 (the warm-up starts at 0) moves the weights.
    const bool still = MaxAbsDiff(recorder->weights[i + 1], recorder->weights[i]) == 0;
    if (skip || previous_lr > 0) EXPECT_EQ(still, skip);
    if (i > 0) EXPECT_EQ(recorder->lrs[i] == previous_lr, skip);
    previous_lr = recorder->lrs[i];
  }
  EXPECT_GT(skipped, 0);
  EXPECT_EQ(t->grad_scaler()->State().scale, std::ldexp(65536.0, -static_cast<int>(skipped)));
  Figure("fp16_grad_scaler",
         absl::StrCat(recorder->scales.size(), " steps on ", device.str(), ", ", *spikes,
                      " planted inf micro-batches in ", skipped, " steps, those ", skipped,
                      " skipped, scale 65536 -> ", t->grad_scaler()->State().scale));
}

// --- DeepSpeed's dynamic loss scaler over fp16 weights ---

TEST(CudaChecks, DeepSpeedLossScalerHysteresis) {
  const at::Device device = CheckDevice();
  at::Tensor p = at::linspace(-1, 1, 64, at::TensorOptions().dtype(at::kHalf).device(device))
                     .set_requires_grad(true);
  ASSERT_OK_AND_ASSIGN(precision::MasterWeights mw, precision::MasterWeights::Create({p}));
  torch::optim::SGD sgd(mw.master(), torch::optim::SGDOptions(0.1));
  // What DeepSpeed's fp16 section {"initial_scale_power": 16, "hysteresis": 2,
  // "loss_scale_window": 3} makes: DynamicLossScaler(init 2^16, scale_window 3, delayed_shift 2,
  // min 1) (the section's mapping is checked against DeepSpeed in //tests/precision).
  precision::LossScalerOptions options;
  options.init_scale = 65536;
  options.scale_window = 3;
  options.delayed_shift = 2;
  precision::DeepSpeedLossScaler scaler(options);
  // update_scale by hand: overflow at 1 (hysteresis 2 -> 1, scale kept), 2 (halved), window of
  // 3 clean iterations since the last overflow at 5 (doubled, hysteresis back to 2), 6 (kept).
  const std::vector<bool> overflow = {false, true, true, false, false, false, true};
  const std::vector<double> scale_after = {65536, 65536, 32768, 32768, 32768, 65536, 65536};
  for (size_t i = 0; i < overflow.size(); ++i) {
    SCOPED_TRACE("iteration " + std::to_string(i));
    const at::Tensor master_before = mw.master()[0].detach().clone();
    const float x = overflow[i] ? std::numeric_limits<float>::infinity() : 1e-3f;
    const at::Tensor input = at::full({64}, x, at::TensorOptions().device(device));
    // A mean loss in fp32, scaled as DeepSpeed scales the model's loss: the fp16 gradients are
    // 2^16 / 64 * input, finite unless the input is inf.
    ((p.to(at::kFloat) * input).mean() * scaler.loss_scale()).backward();
    ASSERT_OK_AND_ASSIGN(precision::HalfStepResult r, mw.Step(sgd, scaler, /*clip_grad=*/1.0));
    EXPECT_EQ(r.skipped, overflow[i]);
    EXPECT_EQ(scaler.loss_scale(), scale_after[i]);
    EXPECT_EQ(at::equal(mw.master()[0], master_before), overflow[i]);
    EXPECT_EQ(mw.master()[0].device(), device);
    if (overflow[i]) EXPECT_THAT(r.overflow_line, ::testing::HasSubstr("OVERFLOW! Rank 0"));
  }
  EXPECT_EQ(p.device(), device);
  EXPECT_EQ(p.scalar_type(), at::kHalf);
  Figure("ds_loss_scaler", absl::StrCat("fp16 weights on ", device.str(),
                                        ", scale after each iteration 65536 65536 32768 32768 "
                                        "32768 65536 65536 (overflow at 1, 2, 6)"));
}

// --- A process group of one: NCCL on CUDA ---

TEST(CudaChecks, ProcessGroupOfOneCollectives) {
  const at::Device device = CheckDevice();
  ASSERT_OK_AND_ASSIGN(distributed::ProcessGroup pg,
                       GroupOfOne(device.is_cuda() ? "nccl" : "gloo"));
  EXPECT_EQ(pg.comm_device().type(), device.type());
  const at::Tensor x = at::arange(12, at::TensorOptions().dtype(at::kFloat).device(device));
  at::Tensor sum = x.clone(), avg = x.clone(), bcast = x.clone();
  ASSERT_OK(distributed::AllReduce(pg, sum, distributed::ReduceOp::kSum));
  ASSERT_OK(distributed::AllReduce(pg, avg, distributed::ReduceOp::kAvg));
  ASSERT_OK(distributed::Broadcast(pg, bcast, 0));
  at::Tensor gathered = at::zeros_like(x), scattered = at::zeros_like(x), flat = x.clone();
  ASSERT_OK(distributed::AllGatherInto(pg, x, gathered));
  ASSERT_OK(distributed::ReduceScatterSum(pg, flat, scattered));
  for (const at::Tensor* t : {&sum, &avg, &bcast, &gathered, &scattered}) {
    EXPECT_EQ(t->device(), device);
    EXPECT_TRUE(at::equal(*t, x));
  }
  ASSERT_OK(distributed::Barrier(pg));
  Figure("group_of_one", absl::StrCat(pg.backend_name(), " on ", device.str(),
                                      ": all_reduce sum/avg, broadcast, all_gather, "
                                      "reduce_scatter, barrier"));
}

TEST(CudaChecks, ShardedStrategiesAtOneRank) {
  const at::Device device = CheckDevice();
  ASSERT_OK_AND_ASSIGN(distributed::ProcessGroup pg,
                       GroupOfOne(device.is_cuda() ? "nccl" : "gloo"));
  ASSERT_OK_AND_ASSIGN(BertResult plain, TrainBert({.dir = Dir("plain")}));
  EXPECT_EQ(plain.device, device);
  std::string figures;
  for (const Strategy& s : ShardedStrategies()) {
    SCOPED_TRACE(s.name);
    ASSERT_OK_AND_ASSIGN(
        BertResult r, TrainBert({.dir = Dir("one_rank_" + s.name), .args = s.args, .group = pg}));
    EXPECT_EQ(r.device, device);
    const double diff = MaxAbsDiff(r.weights, plain.weights);
    EXPECT_LE(diff, 1e-5);
    EXPECT_NEAR(r.train_loss, plain.train_loss, 1e-5);
    absl::StrAppend(&figures, s.name, " max|dw| ", diff, "; ");
  }
  // The comparison can fail: another learning rate ends elsewhere.
  ASSERT_OK_AND_ASSIGN(BertResult other,
                       TrainBert({.dir = Dir("plain_lr"), .args = {{"learning_rate", 2e-2}}}));
  EXPECT_GT(MaxAbsDiff(other.weights, plain.weights), 1e-3);
  Figure("one_rank_strategies", absl::StrCat(pg.backend_name(), " group of one on ", device.str(),
                                             ", vs no strategy: ", figures));
}

// --- Two ranks over Gloo with the model on the device ---

int TwoRankChild(int rank, int port, const std::string& dir) {
  auto pg = distributed::testing::JoinGroup(rank, 2, port, absl::Seconds(120));
  CHILD_CHECK_OK(pg.status());
  // One process with the whole batch (8), for the figures.
  auto whole = TrainBert(
      {.dir = dir + "/whole" + std::to_string(rank), .args = {{"per_device_train_batch_size", 8}}});
  CHILD_CHECK_OK(whole.status());
  CHILD_CHECK(whole->device == CheckDevice());
  // DDP over the same group: what every sharded strategy at two ranks must reproduce.
  auto ddp = TrainBert({.dir = dir + "/ddp" + std::to_string(rank), .group = *pg});
  CHILD_CHECK_OK(ddp.status());
  if (rank == 0) {
    Figure("two_gloo_ranks",
           absl::StrCat("ddp max|dw| vs one process ", MaxAbsDiff(ddp->weights, whole->weights)));
  }
  for (const Strategy& s : ShardedStrategies()) {
    auto r =
        TrainBert({.dir = dir + "/" + s.name + std::to_string(rank), .args = s.args, .group = *pg});
    CHILD_CHECK_OK(r.status());
    CHILD_CHECK(r->device == CheckDevice());
    const double diff = MaxAbsDiff(r->weights, ddp->weights);
    if (rank == 0) Figure("two_gloo_ranks", absl::StrCat(s.name, " max|dw| vs ddp ", diff));
    CHILD_CHECK(diff <= 1e-5);
  }
  return 0;
}

TEST(CudaChecks, TwoGlooRanksWithDeviceTensors) {
  const bool cuda = WantCuda();  // no CUDA call before the fork
  const std::string dir = Dir("two_ranks");
  ASSERT_OK_AND_ASSIGN(const int port, base::PickFreePort());
  EXPECT_THAT(distributed::testing::RunRanks(
                  2, absl::Seconds(300), [&](int rank) { return TwoRankChild(rank, port, dir); }),
              Each(0));
  Figure("two_gloo_ranks", absl::StrCat("both ranks on ", cuda ? "cuda:0" : "cpu", ", gloo"));
}

// --- Offload ---

TEST(CudaChecks, ZeroOffloadPinsHostMemory) {
  const at::Device device = CheckDevice();
  // The same AdamW (loom's CPU Adam on the CPU, torch's fused kernel on a GPU) without offload.
  ASSERT_OK_AND_ASSIGN(BertResult plain, TrainBert({.dir = Dir("offload_plain"),
                                                    .args = {{"optim", "adamw_torch_fused"}}}));
  ASSERT_OK_AND_ASSIGN(
      BertResult r,
      TrainBert({.dir = Dir("offload"),
                 .args = {{"optim", "adamw_torch_fused"},  // DeepSpeed's CPU Adam, as offload asks
                          {"deepspeed", absl::StrCat(R"({"zero_optimization": {"stage": 2,
                     "offload_optimizer": {"device": "cpu", "pin_memory": true}}, )",
                                                     kClip)}}}));
  EXPECT_EQ(r.device, device);
  ASSERT_FALSE(r.optimizer_params.empty());
  for (const at::Tensor& m : r.optimizer_params) {
    EXPECT_EQ(m.device(), at::Device(at::kCPU));
    EXPECT_EQ(m.is_pinned(), device.is_cuda());  // page-locked where CUDA can use it
    if (m.grad().defined()) EXPECT_EQ(m.grad().is_pinned(), device.is_cuda());
  }
  // Offloaded, the step runs in loom's CPU Adam; on a GPU the run without offload steps in torch's
  // CUDA kernel: equal up to their float rounding over 16 steps.
  const double diff = MaxAbsDiff(r.weights, plain.weights);
  EXPECT_LE(diff, device.is_cuda() ? 1e-4 : 1e-5);
  Figure("zero_offload", absl::StrCat("model on ", device.str(), ", ", r.optimizer_params.size(),
                                      " master partition(s) on the CPU, pinned ",
                                      r.optimizer_params.front().is_pinned() ? "yes" : "no",
                                      ", max|dw| vs no offload ", diff));
}

// The most files (and their bytes) seen under a folder at the end of any step.
class SwapProbe : public trainer::TrainerCallback {
 public:
  explicit SwapProbe(std::string dir) : dir_(std::move(dir)) {}
  std::string Name() const override { return "SwapProbe"; }
  absl::Status OnStepEnd(const trainer::Event&) override {
    int64_t files = 0, bytes = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir_)) {
      if (!e.is_regular_file()) continue;
      ++files;
      bytes += static_cast<int64_t>(e.file_size());
    }
    max_files = std::max(max_files, files);
    max_bytes = std::max(max_bytes, bytes);
    return absl::OkStatus();
  }
  int64_t max_files = 0, max_bytes = 0;

 private:
  std::string dir_;
};

TEST(CudaChecks, NvmeOffload) {
  const at::Device device = CheckDevice();
  const std::string swap = Dir("nvme_swap");
  ASSERT_OK_AND_ASSIGN(BertResult plain, TrainBert({.dir = Dir("nvme_plain"),
                                                    .args = {{"optim", "adamw_torch_fused"}}}));
  const std::string config = absl::StrCat(
      R"({"zero_optimization": {"stage": 3, "sub_group_size": 2000,
          "offload_optimizer": {"device": "nvme", "nvme_path": ")",
      swap, R"(", "pin_memory": true, "buffer_count": 2},
          "offload_param": {"device": "nvme", "nvme_path": ")",
      swap, R"(", "pin_memory": true, "buffer_count": 3, "max_in_cpu": 0}}, )", kClip);
  auto probe = std::make_shared<SwapProbe>(swap);
  ASSERT_OK_AND_ASSIGN(BertResult r,
                       TrainBert({.dir = Dir("nvme"),
                                  .args = {{"optim", "adamw_torch_fused"}, {"deepspeed", config}},
                                  .callbacks = {probe}}));
  EXPECT_EQ(r.device, device);
  EXPECT_GT(probe->max_files, 0) << "nothing was swapped to " << swap;
  EXPECT_TRUE(std::filesystem::is_empty(swap)) << "swap files left behind in " << swap;
  // Offloaded, the step runs in loom's CPU Adam; on a GPU the run without offload steps in torch's
  // CUDA kernel: equal up to their float rounding over 16 steps.
  const double diff = MaxAbsDiff(r.weights, plain.weights);
  EXPECT_LE(diff, device.is_cuda() ? 1e-4 : 1e-5);
  Figure("nvme_offload", absl::StrCat("model on ", device.str(), ", up to ", probe->max_files,
                                      " swap files (", probe->max_bytes, " bytes) under ", swap,
                                      " during training, none after; max|dw| vs in memory ", diff));
}

// --- Gradient checkpointing ---

TEST(CudaChecks, GradientCheckpointing) {
  const at::Device device = CheckDevice();
  ASSERT_OK_AND_ASSIGN(BertResult off, TrainBert({.dir = Dir("gc_off"), .dropout = 0.1}));
  ASSERT_OK_AND_ASSIGN(
      BertResult on,
      TrainBert({.dir = Dir("gc_on"), .args = {{"gradient_checkpointing", true}}, .dropout = 0.1}));
  EXPECT_EQ(on.device, device);
  // Recomputation replays the dropout masks. The CPU is bit-exact; CUDA's embedding backward
  // adds with atomics, so the same run twice may differ in the last bits there.
  const double diff = MaxAbsDiff(on.weights, off.weights);
  EXPECT_LE(diff, device.is_cuda() ? 1e-5 : 0.0);
  // Without the masks replayed the runs would part: dropout 0.1 vs 0.2 shows the size.
  ASSERT_OK_AND_ASSIGN(BertResult other, TrainBert({.dir = Dir("gc_other"), .dropout = 0.2}));
  EXPECT_GT(MaxAbsDiff(other.weights, off.weights), 1e-3);
  Figure("gradient_checkpointing",
         absl::StrCat("tiny BERT, dropout 0.1, on ", device.str(), ": max|dw| with vs without ",
                      diff, ", losses ", on.train_loss, " / ", off.train_loss));
}

// --- Checkpoints across devices ---

// Trains 16 steps (save at 8) on `first`, or resumes checkpoint-8 on `second`.
absl::StatusOr<BertResult> CrossDeviceRun(const std::string& dir, bool cpu, bool resume) {
  BertRun run{.dir = dir,
              .args = {{"use_cpu", cpu}, {"save_strategy", "steps"}, {"save_steps", 8}}};
  if (resume) run.resume = trainer::ResumeFrom::Path(dir + "/checkpoint-8");
  return TrainBert(std::move(run));
}

TEST(CudaChecks, CheckpointsMoveBetweenDevices) {
  const at::Device device = CheckDevice();
  std::string figures;
  for (const bool first_on_cpu : {false, true}) {
    const bool second_on_cpu = !first_on_cpu || !device.is_cuda();
    const std::string name = first_on_cpu ? "cpu_then_device" : "device_then_cpu";
    SCOPED_TRACE(name);
    const std::string dir = Dir(name);
    ASSERT_OK_AND_ASSIGN(BertResult whole, CrossDeviceRun(dir, first_on_cpu, false));
    ASSERT_TRUE(std::filesystem::exists(dir + "/checkpoint-8/model.safetensors"));
    ASSERT_OK_AND_ASSIGN(BertResult resumed, CrossDeviceRun(dir, second_on_cpu, true));
    EXPECT_EQ(resumed.device.is_cuda(), !second_on_cpu);
    // Same arithmetic on both devices up to their float rounding: the continuation of 8 AdamW
    // steps stays within 1e-4 of the uninterrupted run (bit-exact when both are the CPU).
    const double diff = MaxAbsDiff(resumed.weights, whole.weights);
    EXPECT_LE(diff, device.is_cuda() ? 1e-4 : 0.0);
    absl::StrAppend(&figures, whole.device.str(), " -> ", resumed.device.str(), ": max|dw| ", diff,
                    "; ");
  }
  Figure("cross_device_resume", figures);
}

}  // namespace
}  // namespace loom
