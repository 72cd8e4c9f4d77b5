#include "sharding/strategy_conformance.h"

#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/free_port.h"
#include "base/status_matchers.h"
#include "checkpoint/module_state.h"
#include "checkpoint/optimizer_state.h"
#include "checkpoint/torch_pickle.h"
#include "distributed/collectives.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modeling/model.h"
#include "modeling/unit_runner.h"
#include "optim/clip_grad.h"
#include "precision/training_precision.h"
#include "sharding/create_strategy.h"
#include "sharding/replicated.h"

namespace loom::sharding::testing {
namespace {

using base::PickFreePort;
using distributed::testing::JoinGroup;
using distributed::testing::RunRanks;

constexpr int kSteps = 4;
constexpr int kGlobalRows = 8;  // rows of one micro-batch over all ranks
constexpr int kIn = 6;
constexpr int kHidden = 5;
constexpr int kOut = 3;
constexpr double kLr = 0.05;
constexpr double kWeightDecay = 0.01;

// A small MLP with one frozen parameter (requires_grad = false) and one trainable parameter of
// its own (outside its layers), initialised from a fixed seed. Its two Linear layers are wrap
// units (a parameter-sharding strategy runs them through its UnitRunner).
struct Mlp : modeling::Model {
  Mlp() {
    torch::manual_seed(11);
    frozen = register_parameter("frozen", torch::full({kOut}, 0.25), /*requires_grad=*/false);
    shift = register_parameter("shift", torch::full({kOut}, 0.1));
    a = register_module("a", torch::nn::Linear(kIn, kHidden));
    b = register_module("b", torch::nn::Linear(kHidden, kOut));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = modeling::RunUnit(runner, *a, [&] { return a(x); });
    return modeling::RunUnit(runner, *b, [&] { return b(torch::tanh(h)); }) + frozen + shift;
  }
  modeling::ModelOutput Forward(const data::Batch&) override { return {}; }
  std::vector<std::string> UnitClassNames() const override { return {"Linear"}; }
  absl::Status SetUnitRunner(modeling::UnitRunner* r) override {
    runner = r;
    return absl::OkStatus();
  }

  torch::nn::Linear a{nullptr}, b{nullptr};
  at::Tensor frozen, shift;
  modeling::UnitRunner* runner = nullptr;
};

// The whole run's data: micro-batch k is rows [k * kGlobalRows, (k + 1) * kGlobalRows).
std::pair<at::Tensor, at::Tensor> Data(int ga) {
  at::Generator gen = at::detail::createCPUGenerator(5);
  const int64_t rows = int64_t{kSteps} * ga * kGlobalRows;
  return {at::randn({rows, kIn}, gen), at::randn({rows, kOut}, gen)};
}

std::unique_ptr<torch::optim::AdamW> Optimizer(Mlp& model) {
  return std::make_unique<torch::optim::AdamW>(
      TrainableParameters(model), torch::optim::AdamWOptions(kLr).weight_decay(kWeightDecay));
}

struct RunResult {
  std::vector<double> losses;
  std::vector<std::optional<double>> norms;
  std::vector<float> params;  // every parameter (frozen too), flattened in parameters() order
};

std::vector<float> FlatParams(Mlp& model) {
  std::vector<float> out;
  for (const at::Tensor& p : model.parameters()) {
    at::Tensor flat = p.detach().to(at::kFloat).contiguous().view(-1);
    out.insert(out.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  }
  return out;
}

bool WriteResult(const std::string& path, const RunResult& r) {
  std::ofstream f(path);
  f << r.losses.size() << " " << r.params.size() << "\n";
  for (size_t i = 0; i < r.losses.size(); ++i) {
    f << absl::StrFormat("%a %d %a\n", r.losses[i], r.norms[i].has_value() ? 1 : 0,
                         r.norms[i].value_or(0.0));
  }
  for (float v : r.params) f << absl::StrFormat("%a\n", static_cast<double>(v));
  return static_cast<bool>(f);
}

std::optional<RunResult> ReadResult(const std::string& path) {
  std::ifstream f(path);
  size_t steps = 0, params = 0;
  if (!(f >> steps >> params)) return std::nullopt;
  RunResult r;
  std::string loss, norm;
  int has = 0;
  for (size_t i = 0; i < steps; ++i) {
    if (!(f >> loss >> has >> norm)) return std::nullopt;
    r.losses.push_back(std::strtod(loss.c_str(), nullptr));
    r.norms.push_back(has ? std::optional<double>(std::strtod(norm.c_str(), nullptr))
                          : std::nullopt);
  }
  std::string v;
  for (size_t i = 0; i < params; ++i) {
    if (!(f >> v)) return std::nullopt;
    r.params.push_back(static_cast<float>(std::strtod(v.c_str(), nullptr)));
  }
  return r;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name, "_", getpid());
}

// The unsharded reference: one process, the full global micro-batch, no strategy.
int ReferenceChild(int ga, double max_norm, const std::string& out) {
  const int rank = 0;
  Mlp model;
  auto opt = Optimizer(model);
  const auto [x, y] = Data(ga);
  const std::vector<at::Tensor> params = TrainableParameters(model);
  RunResult r;
  for (int step = 0; step < kSteps; ++step) {
    double loss_sum = 0;
    for (int m = 0; m < ga; ++m) {
      const int64_t row = (int64_t{step} * ga + m) * kGlobalRows;
      at::Tensor loss = torch::mse_loss(model.forward(x.slice(0, row, row + kGlobalRows)),
                                        y.slice(0, row, row + kGlobalRows));
      (loss / ga).backward();
      loss_sum += loss.item<double>();
    }
    r.losses.push_back(loss_sum / ga);
    r.norms.push_back(max_norm > 0 ? std::optional<double>(optim::ClipGradNorm(params, max_norm))
                                   : std::nullopt);
    opt->step();
    model.zero_grad();
  }
  r.params = FlatParams(model);
  CHILD_CHECK(WriteResult(out, r));
  return 0;
}

args::TrainingArguments CaseArgs(const ConformanceCase& c) {
  args::TrainingArguments args;
  if (c.configure) c.configure(args);
  return args;
}

// One rank's pieces for a case: its process group (several ranks), the MLP, AdamW, fp32
// precision and the strategy CreateStrategy picks for the case's arguments.
struct Rank {
  std::optional<distributed::ProcessGroup> pg;
  std::unique_ptr<Mlp> model;
  std::unique_ptr<torch::optim::AdamW> opt;
  std::unique_ptr<precision::TrainingPrecision> precision;
  args::TrainingArguments args;
  std::unique_ptr<ShardingStrategy> strategy;

  // Joins the group (several ranks) unless this rank already has one (a second set-up in the
  // same process keeps it: a group is created once per process).
  absl::Status SetUp(const ConformanceCase& c, int rank, int port) {
    if (c.world_size > 1 && !pg) {
      absl::StatusOr<distributed::ProcessGroup> joined = JoinGroup(rank, c.world_size, port);
      if (!joined.ok()) return joined.status();
      pg = std::move(*joined);
    }
    strategy.reset();
    model = std::make_unique<Mlp>();
    opt = Optimizer(*model);
    absl::StatusOr<std::unique_ptr<precision::TrainingPrecision>> p =
        precision::TrainingPrecision::Create(precision::PrecisionPolicy{});
    if (!p.ok()) return p.status();
    precision = std::move(*p);
    args = CaseArgs(c);
    absl::StatusOr<std::unique_ptr<ShardingStrategy>> created =
        CreateStrategy(StrategyOptions()
                           .set_args(&args)
                           .set_model(model.get())
                           .set_optimizer(opt.get())
                           .set_precision(precision.get())
                           .set_process_group(pg ? &*pg : nullptr));
    if (!created.ok()) return created.status();
    strategy = std::move(*created);
    return absl::OkStatus();
  }
};

// Optimizer steps [from, to) of the suite's run on this rank, appended to `r`; 0 or the
// failing line (CHILD_CHECK).
int RunSteps(const ConformanceCase& c, Rank& setup, int rank, int ga, double max_norm, int from,
             int to, RunResult& r) {
  Mlp& model = *setup.model;
  ShardingStrategy& strategy = *setup.strategy;
  CHILD_CHECK(strategy.Name() == c.strategy_name);
  const auto [x, y] = Data(ga);
  const int64_t rows = kGlobalRows / c.world_size;
  for (int step = from; step < to; ++step) {
    double loss_sum = 0;
    for (int m = 0; m < ga; ++m) {
      const int64_t row = (int64_t{step} * ga + m) * kGlobalRows + rank * rows;
      CHILD_CHECK_OK(strategy.BeforeForward(/*closes_window=*/m == ga - 1));
      at::Tensor loss =
          torch::mse_loss(model.forward(x.slice(0, row, row + rows)), y.slice(0, row, row + rows));
      (loss / ga).backward();
      CHILD_CHECK_OK(strategy.AfterBackward());
      loss_sum += loss.item<double>();
    }
    at::Tensor mean = at::full({}, loss_sum / ga / c.world_size, at::kDouble);
    if (setup.pg) CHILD_CHECK_OK(distributed::AllReduce(*setup.pg, mean));
    r.losses.push_back(mean.item<double>());
    auto norm = strategy.ClipGradients(max_norm);
    CHILD_CHECK_OK(norm.status());
    r.norms.push_back(*norm);
    auto stepped = strategy.OptimizerStep();
    CHILD_CHECK_OK(stepped.status());
    CHILD_CHECK(*stepped);
    strategy.ZeroGrad();
  }
  CHILD_CHECK_OK(strategy.BeginFullParameters());
  r.params = FlatParams(model);
  CHILD_CHECK_OK(strategy.EndFullParameters(/*write_back=*/false));
  return 0;
}

int StrategyChild(const ConformanceCase& c, int rank, int port, int ga, double max_norm,
                  const std::string& out) {
  Rank setup;
  CHILD_CHECK_OK(setup.SetUp(c, rank, port));
  RunResult r;
  if (int rc = RunSteps(c, setup, rank, ga, max_norm, 0, kSteps, r); rc != 0) return rc;
  CHILD_CHECK(WriteResult(absl::StrCat(out, ".rank", rank), r));
  return 0;
}

// Half the steps, a checkpoint as the Trainer writes one (rank 0: the weights, and the
// optimizer state unless the strategy owns it; every rank: the strategy's SaveState), a new
// model, optimizer and strategy from scratch, the checkpoint loaded back, the other half.
int ResumeChild(const ConformanceCase& c, int rank, int port, const std::string& folder,
                const std::string& out) {
  constexpr int kGa = 1;
  constexpr double kMaxNorm = 0.05;
  Rank setup;
  CHILD_CHECK_OK(setup.SetUp(c, rank, port));
  RunResult r;
  if (int rc = RunSteps(c, setup, rank, kGa, kMaxNorm, 0, kSteps / 2, r); rc != 0) return rc;
  const bool owns = setup.strategy->OwnsOptimizerState();
  CHILD_CHECK_OK(setup.strategy->BeginFullParameters());
  if (rank == 0) {
    CHILD_CHECK_OK(checkpoint::SaveTorchStateDict(folder + "/weights.bin",
                                                  checkpoint::ModuleStateDict(*setup.model)));
    if (!owns) CHILD_CHECK_OK(checkpoint::SaveOptimizerState(folder + "/optimizer.pt", *setup.opt));
  }
  CHILD_CHECK_OK(setup.strategy->EndFullParameters(/*write_back=*/false));
  CHILD_CHECK_OK(setup.strategy->SaveState(folder, StrategySaveInfo{.global_step = kSteps / 2}));
  if (setup.pg) CHILD_CHECK_OK(distributed::Barrier(*setup.pg));
  // From scratch: the initial weights again, a fresh optimizer and strategy.
  CHILD_CHECK_OK(setup.SetUp(c, rank, port));
  auto weights = checkpoint::LoadTorchStateDict(folder + "/weights.bin");
  CHILD_CHECK_OK(weights.status());
  CHILD_CHECK_OK(setup.strategy->BeginFullParameters());
  CHILD_CHECK_OK(checkpoint::LoadStateDict(*setup.model, *weights).status());
  CHILD_CHECK_OK(setup.strategy->EndFullParameters(/*write_back=*/true));
  if (owns) {
    CHILD_CHECK_OK(setup.strategy->LoadState(folder));
  } else {
    CHILD_CHECK_OK(checkpoint::LoadOptimizerState(folder + "/optimizer.pt", *setup.opt));
  }
  if (int rc = RunSteps(c, setup, rank, kGa, kMaxNorm, kSteps / 2, kSteps, r); rc != 0) {
    return rc;
  }
  CHILD_CHECK(WriteResult(absl::StrCat(out, ".rank", rank), r));
  return 0;
}

void ExpectNear(const RunResult& got, const RunResult& want, int rank);

void RunResumes(const ConformanceCase& c) {
  const std::string ref_path = TempPath(absl::StrCat(c.name, "_resume_reference"));
  ASSERT_THAT(
      RunRanks(1, absl::Seconds(60), [&](int) { return ReferenceChild(1, 0.05, ref_path); }),
      ::testing::Each(0));
  std::optional<RunResult> want = ReadResult(ref_path);
  ASSERT_TRUE(want.has_value());
  const std::string folder = TempPath(absl::StrCat(c.name, "_checkpoint"));
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  const std::string out = TempPath(absl::StrCat(c.name, "_resumed"));
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_THAT(RunRanks(c.world_size, absl::Seconds(90),
                       [&](int rank) { return ResumeChild(c, rank, port, folder, out); }),
              ::testing::Each(0));
  for (int rank = 0; rank < c.world_size; ++rank) {
    std::optional<RunResult> got = ReadResult(absl::StrCat(out, ".rank", rank));
    ASSERT_TRUE(got.has_value()) << "rank " << rank;
    ExpectNear(*got, *want, rank);
  }
}

void ExpectNear(const RunResult& got, const RunResult& want, int rank) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < want.losses.size(); ++i) {
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-6)
        << "loss of step " << i + 1 << ", rank " << rank;
    ASSERT_EQ(got.norms[i].has_value(), want.norms[i].has_value()) << "step " << i + 1;
    if (want.norms[i]) {
      EXPECT_NEAR(*got.norms[i], *want.norms[i], 1e-6 * std::max(1.0, *want.norms[i]))
          << "grad norm of step " << i + 1 << ", rank " << rank;
    }
  }
  ASSERT_EQ(got.params.size(), want.params.size());
  for (size_t i = 0; i < want.params.size(); ++i) {
    EXPECT_NEAR(got.params[i], want.params[i], 1e-6)
        << "parameter element " << i << ", rank " << rank;
  }
}

void RunMatchesUnsharded(const ConformanceCase& c, int ga, double max_norm) {
  ASSERT_EQ(kGlobalRows % c.world_size, 0) << "world size must divide " << kGlobalRows;
  const std::string ref_path = TempPath(absl::StrCat(c.name, "_reference_", ga, "_", max_norm));
  ASSERT_THAT(
      RunRanks(1, absl::Seconds(60), [&](int) { return ReferenceChild(ga, max_norm, ref_path); }),
      ::testing::Each(0));
  std::optional<RunResult> want = ReadResult(ref_path);
  ASSERT_TRUE(want.has_value());
  if (max_norm > 0) {
    // The case must clip for real: the reference's first norm is above max_norm.
    ASSERT_GT(*want->norms[0], max_norm);
  }
  const std::string out = TempPath(absl::StrCat(c.name, "_strategy_", ga, "_", max_norm));
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_THAT(RunRanks(c.world_size, absl::Seconds(90),
                       [&](int rank) { return StrategyChild(c, rank, port, ga, max_norm, out); }),
              ::testing::Each(0));
  for (int rank = 0; rank < c.world_size; ++rank) {
    std::optional<RunResult> got = ReadResult(absl::StrCat(out, ".rank", rank));
    ASSERT_TRUE(got.has_value()) << "rank " << rank;
    ExpectNear(*got, *want, rank);
    // The frozen parameter (the module's own first one: 3 elements of 0.25) never moved.
    for (size_t i = 0; i < kOut; ++i) {
      EXPECT_EQ(got->params[i], 0.25f);
    }
  }
}

int StateBytesChild(const ConformanceCase& c, int rank, int port, const std::string& out) {
  Rank setup;
  CHILD_CHECK_OK(setup.SetUp(c, rank, port));
  Mlp& model = *setup.model;
  ShardingStrategy& strategy = *setup.strategy;
  const auto [x, y] = Data(1);
  const int64_t rows = kGlobalRows / c.world_size;
  CHILD_CHECK_OK(strategy.BeforeForward(true));
  torch::mse_loss(model.forward(x.slice(0, rank * rows, (rank + 1) * rows)),
                  y.slice(0, rank * rows, (rank + 1) * rows))
      .backward();
  CHILD_CHECK_OK(strategy.AfterBackward());
  CHILD_CHECK_OK(strategy.ClipGradients(1.0).status());
  CHILD_CHECK_OK(strategy.OptimizerStep().status());
  const ModelStateBytes b = strategy.StateBytes();
  std::ofstream f(absl::StrCat(out, ".rank", rank));
  f << b.parameters << " " << b.gradients << " " << b.optimizer_states << " " << b.master_weights
    << "\n";
  CHILD_CHECK(static_cast<bool>(f));
  return 0;
}

void RunStateBytes(const ConformanceCase& c) {
  ASSERT_TRUE(c.expected_bytes) << "the case must declare expected_bytes";
  SuiteModel m;
  m.unit_numels = {kIn * kHidden + kHidden, kHidden * kOut + kOut};
  m.root_trainable_numel = kOut;
  m.frozen_numel = kOut;
  m.trainable_numel = m.unit_numels[0] + m.unit_numels[1] + m.root_trainable_numel;
  m.all_numel = m.trainable_numel + m.frozen_numel;
  m.trainable_tensors = 5;
  m.world_size = c.world_size;
  const std::string out = TempPath(absl::StrCat(c.name, "_bytes"));
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_THAT(RunRanks(c.world_size, absl::Seconds(60),
                       [&](int rank) { return StateBytesChild(c, rank, port, out); }),
              ::testing::Each(0));
  int64_t optimizer_total = 0;
  for (int rank = 0; rank < c.world_size; ++rank) {
    std::ifstream f(absl::StrCat(out, ".rank", rank));
    ModelStateBytes b;
    ASSERT_TRUE(f >> b.parameters >> b.gradients >> b.optimizer_states >> b.master_weights);
    m.rank = rank;
    const ModelStateBytes want = c.expected_bytes(m);
    EXPECT_EQ(b.parameters, want.parameters) << "rank " << rank;
    EXPECT_EQ(b.gradients, want.gradients) << "rank " << rank;
    EXPECT_EQ(b.optimizer_states, want.optimizer_states) << "rank " << rank;
    EXPECT_EQ(b.master_weights, want.master_weights) << "rank " << rank;
    optimizer_total += b.optimizer_states;
  }
  EXPECT_GE(optimizer_total, 8 * m.trainable_numel) << "some optimizer state is held by no rank";
}

class ConformanceTest : public ::testing::Test {
 public:
  explicit ConformanceTest(std::function<void()> body) : body_(std::move(body)) {}
  void TestBody() override { body_(); }

 private:
  std::function<void()> body_;
};

void Register(const ConformanceCase& c, const std::string& test, std::function<void()> body) {
  ::testing::RegisterTest(absl::StrCat("StrategyConformance/", c.name).c_str(), test.c_str(),
                          nullptr, nullptr, __FILE__, __LINE__,
                          [body]() -> ::testing::Test* { return new ConformanceTest(body); });
}

}  // namespace

void RegisterStrategyConformanceTests(const ConformanceCase& c) {
  for (int ga : {1, 2}) {
    for (bool clip : {true, false}) {
      Register(c, absl::StrCat("MatchesUnshardedGa", ga, "Clip", clip ? "On" : "Off"),
               [c, ga, clip] { RunMatchesUnsharded(c, ga, clip ? 0.05 : 0.0); });
    }
  }
  Register(c, "StateBytesAfterAStep", [c] { RunStateBytes(c); });
  Register(c, "ResumesFromItsCheckpoint", [c] { RunResumes(c); });
  Register(c, "RefusesMissingPieces", [c] {
    const args::TrainingArguments args = CaseArgs(c);
    for (int missing = 0; missing < 3; ++missing) {
      const int rank = 0;
      std::vector<int> codes = RunRanks(1, absl::Seconds(30), [&](int) {
        Mlp model;
        auto opt = Optimizer(model);
        auto precision = precision::TrainingPrecision::Create(precision::PrecisionPolicy{});
        CHILD_CHECK_OK(precision.status());
        StrategyOptions o;
        o.set_args(&args);
        if (missing != 0) o.set_model(&model);
        if (missing != 1) o.set_optimizer(opt.get());
        if (missing != 2) o.set_precision(precision->get());
        auto created = CreateStrategy(o);
        CHILD_CHECK(created.status().code() == absl::StatusCode::kInvalidArgument);
        return 0;
      });
      EXPECT_THAT(codes, ::testing::Each(0)) << "missing piece " << missing;
      (void)rank;
    }
  });
}

}  // namespace loom::sharding::testing
