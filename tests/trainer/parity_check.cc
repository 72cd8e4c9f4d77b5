// Trains every scenario of parity_scenarios.json through loom::trainer::Trainer and compares
// it with what trainer_reference.py (HF 4.38's loop in Python, torch 1.13) computed from the
// same initial weights and data (parity_test.sh runs the three steps).
//
// Compared per scenario:
//   - each micro-batch's loss / GA (recorded unrounded by overriding TrainingStep) and each
//     optimizer step's loss = the sum over its micro-batches;
//   - the log history (logging_steps = 1): per step "loss" (rounded to 4 digits), "grad_norm"
//     (pre-clip), "learning_rate", "epoch" (rounded to 2); eval_loss when evaluating;
//   - max_steps, global_step, the final train_loss metric and epoch, and every final parameter.
//
// Tolerance: 1e-5 relative (|a - b| <= 1e-5 * |b|). Both sides run the same
// float32 LibTorch 1.13 kernels on one thread; what may differ is the order of a few float
// reductions (e.g. the eval loss mean: numpy float32 in HF, double here), which moves values
// by ~1e-7 relative. Parameters are compared element by element, relative to
// max(|expected|, 1e-3): an element near zero (a bias crossing 0) has no meaningful relative
// error, and 1e-8 absolute is far below any real mistake (one wrong decay or lr step moves a
// parameter by >= 1e-6). Rounded logged losses must equal Python's round(x, 4) of the
// reference value, except when the reference value lies within the tolerance of a rounding
// midpoint (then either neighbour is right).
//
//   usage: parity_check SCENARIOS_JSON DATA_DIR EXPECTED_JSON EXPECTED_PARAMS_PT [--gtest_*]
// EXPECTED_PARAMS_PT is Python's torch.save of a plain dict (read with torch::pickle_load),
// so the test also checks that direction of the file interop (C++ -> Python: DATA_DIR).
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "args/parser.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "data/dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"
#include "tests/trainer/tiny_model.h"
#include "trainer/resume_position.h"
#include "trainer/trainer.h"

namespace loom::trainer::testing {
namespace {

using json = nlohmann::ordered_json;

constexpr double kRelTol = 1e-5;
constexpr double kParamFloor = 1e-3;

struct Inputs {
  json spec;
  json expected;
  data::TensorMap weights;
  data::TensorMap train;
  data::TensorMap eval;
  // "<scenario>/<parameter>" -> final value, written by Python's torch.save.
  data::TensorMap expected_params;
  std::string out_dir;
  std::string data_dir;  // DATA_DIR (the reference's HF checkpoints are under hf_checkpoints/)
};
Inputs* g_inputs = nullptr;

std::vector<std::string> ScenarioNames() {
  std::vector<std::string> names;
  for (const json& s : g_inputs->spec.at("scenarios")) names.push_back(s.at("name"));
  return names;
}

// Records each micro-batch's loss / GA with the optimizer step it belongs to.
class RecordingTrainer : public Trainer {
 public:
  using Trainer::Trainer;
  absl::StatusOr<at::Tensor> TrainingStep(Model& model, data::Batch& inputs) override {
    absl::StatusOr<at::Tensor> loss = Trainer::TrainingStep(model, inputs);
    if (loss.ok()) micro_losses.push_back({state().global_step + 1, loss->item<double>()});
    return loss;
  }
  std::vector<std::pair<int64_t, double>> micro_losses;
};

// The largest relative difference seen per quantity, for the summary line.
class Diffs {
 public:
  // Expects |actual - expected| <= kRelTol * max(|expected|, floor).
  void Check(const std::string& what, const std::string& where, double actual, double expected,
             double floor = 1e-12) {
    const double diff = std::fabs(actual - expected);
    const double rel = diff == 0 ? 0 : diff / std::max(std::fabs(expected), floor);
    double& worst = max_[what];
    worst = std::max(worst, rel);
    EXPECT_LE(rel, kRelTol) << where << ": " << what << " is " << absl::StrFormat("%.9g", actual)
                            << ", the reference has " << absl::StrFormat("%.9g", expected);
  }
  std::string Summary() const {
    std::string out;
    for (const auto& [what, rel] : max_)
      absl::StrAppend(&out, " ", what, "=", absl::StrFormat("%.2e", rel));
    return out;
  }

 private:
  std::map<std::string, double> max_;
};

// True when `rounded` is a correct 4-digit rounding of a value within the tolerance of
// `reference`.
bool IsRoundingOf(double rounded, double reference) {
  const double lo = reference - kRelTol * std::fabs(reference);
  const double hi = reference + kRelTol * std::fabs(reference);
  const double r_lo = std::nearbyint(lo * 1e4) / 1e4;
  const double r_hi = std::nearbyint(hi * 1e4) / 1e4;
  const double r_mid = std::nearbyint(reference * 1e4) / 1e4;
  auto same = [&](double v) { return std::fabs(v - rounded) < 1e-12; };
  return same(r_mid) || same(r_lo) || same(r_hi);
}

double Round2(double x) { return std::nearbyint(x * 100) / 100; }

const json& Scenario(const std::string& name) {
  for (const json& s : g_inputs->spec.at("scenarios")) {
    if (s.at("name") == name) return s;
  }
  ADD_FAILURE() << "no scenario " << name;
  static const json kNone = json::object();
  return kNone;
}

// The scenario's model (its dropout) with the initial weights, and a RecordingTrainer over it
// with the scenario's TrainingArguments writing to `output_dir`.
struct ScenarioRun {
  std::shared_ptr<TinyClassifier> model;
  std::unique_ptr<RecordingTrainer> trainer;
};
absl::StatusOr<ScenarioRun> MakeRun(const json& scenario, const std::string& output_dir) {
  const std::string name = scenario.at("name");
  json arg_values = g_inputs->spec.at("base");
  arg_values.update(scenario.at("args"));
  arg_values["output_dir"] = output_dir;
  args::TrainingArguments targs;
  args::ArgParser parser({.program = "parity_check"});
  parser.AddGroup("TrainingArguments", &targs);
  RETURN_IF_ERROR(parser.ParseJson(arg_values, name));
  ScenarioRun run;
  run.model = std::make_shared<TinyClassifier>(
      scenario.value("model", json::object()).value("dropout", 0.0));
  RETURN_IF_ERROR(run.model->LoadWeights(g_inputs->weights));
  TrainerOptions options;
  options.model = run.model;
  options.args = targs;
  ASSIGN_OR_RETURN(options.train_dataset, data::TensorDataset::Create(g_inputs->train));
  ASSIGN_OR_RETURN(options.eval_dataset, data::TensorDataset::Create(g_inputs->eval));
  ASSIGN_OR_RETURN(run.trainer, Trainer::Create<RecordingTrainer>(std::move(options)));
  return run;
}

// Every final parameter against the reference's, then torch's global CPU generator against
// torch.get_rng_state() at the reference's end: equal bytes mean both made the same draws
// (seeding, DataLoader base seeds, dropout masks) in the same number.
void CheckFinalState(const std::string& name, const TinyClassifier& model, Diffs& diffs) {
  for (const auto& [param, tensor] : model.Weights()) {
    auto it = g_inputs->expected_params.find(name + "/" + param);
    ASSERT_NE(it, g_inputs->expected_params.end()) << "no reference value of " << param;
    ASSERT_EQ(it->second.sizes(), tensor.sizes()) << param;
    const at::Tensor got = tensor.flatten().to(at::kDouble).contiguous();
    const at::Tensor ref = it->second.flatten().to(at::kDouble).contiguous();
    for (int64_t i = 0; i < got.numel(); ++i) {
      diffs.Check("params", absl::StrCat(param, "[", i, "]"), got.data_ptr<double>()[i],
                  ref.data_ptr<double>()[i], kParamFloor);
    }
  }
  auto rng = g_inputs->expected_params.find(name + "/cpu_rng_state");
  ASSERT_NE(rng, g_inputs->expected_params.end()) << "no reference generator state";
  EXPECT_TRUE(at::equal(at::detail::getDefaultCPUGenerator().get_state(), rng->second))
      << name << ": the global CPU generator ends in another state than HF's";
}

class TrainerParityTest : public ::testing::TestWithParam<std::string> {};

// One piece on purpose: a scenario's run and its step-by-step comparison with the Python
// reference's log, in the order the reference writes it.
TEST_P(TrainerParityTest, MatchesPythonReference) {
  const std::string name = GetParam();
  ASSERT_TRUE(g_inputs->expected.contains(name)) << "trainer_reference.py wrote no " << name;
  const json& want = g_inputs->expected.at(name);
  ASSERT_OK_AND_ASSIGN(ScenarioRun run, MakeRun(Scenario(name), g_inputs->out_dir + "/" + name));
  const std::unique_ptr<RecordingTrainer>& trainer = run.trainer;
  ASSERT_OK_AND_ASSIGN(TrainOutput out, trainer->Train());
  const TrainerState& state = trainer->state();
  Diffs diffs;

  EXPECT_EQ(state.max_steps, want.at("max_steps").get<int64_t>());
  ASSERT_EQ(state.global_step, want.at("global_step").get<int64_t>());

  // Micro-batch losses, then per optimizer step sums.
  const json& micro = want.at("micro_losses");
  ASSERT_EQ(trainer->micro_losses.size(), micro.size()) << "number of micro-batches";
  std::vector<double> step_losses(state.global_step, 0.0);
  for (size_t i = 0; i < micro.size(); ++i) {
    const auto& [step, value] = trainer->micro_losses[i];
    diffs.Check("micro_loss", absl::StrCat("micro-batch ", i), value, micro[i].get<double>());
    if (step <= state.global_step) step_losses[step - 1] += value;
  }
  const json& want_steps = want.at("step_losses");
  ASSERT_EQ(want_steps.size(), step_losses.size());
  for (size_t k = 0; k < step_losses.size(); ++k) {
    diffs.Check("step_loss", absl::StrCat("step ", k + 1), step_losses[k],
                want_steps[k].get<double>());
  }

  // Log history: training logs, evaluation logs, the final metrics.
  std::vector<const Metrics*> train_logs, eval_logs, final_logs;
  for (const Metrics& entry : state.log_history) {
    if (entry.contains("train_loss")) {
      final_logs.push_back(&entry);
    } else if (entry.contains("eval_loss")) {
      eval_logs.push_back(&entry);
    } else if (entry.contains("loss")) {
      train_logs.push_back(&entry);
    } else {
      ADD_FAILURE() << "unexpected log entry " << entry.dump();
    }
  }
  const json& want_logs = want.at("logs");
  ASSERT_EQ(train_logs.size(), want_logs.size());
  for (size_t i = 0; i < want_logs.size(); ++i) {
    const Metrics& got = *train_logs[i];
    const json& w = want_logs[i];
    const std::string where = absl::StrCat("log of step ", w.at("step").get<int64_t>());
    EXPECT_EQ(got.at("step").get<int64_t>(), w.at("step").get<int64_t>()) << where;
    EXPECT_TRUE(IsRoundingOf(got.at("loss").get<double>(), w.at("loss_unrounded").get<double>()))
        << where << ": loss " << got.at("loss") << ", the reference has " << w.at("loss")
        << " (unrounded " << absl::StrFormat("%.9g", w.at("loss_unrounded").get<double>()) << ")";
    EXPECT_EQ(got.at("epoch").get<double>(), w.at("epoch").get<double>()) << where;
    diffs.Check("learning_rate", where, got.at("learning_rate").get<double>(),
                w.at("learning_rate").get<double>());
    ASSERT_TRUE(got.contains("grad_norm")) << where;
    diffs.Check("grad_norm", where, got.at("grad_norm").get<double>(),
                w.at("grad_norm").get<double>());
  }
  const json& want_evals = want.at("evals");
  ASSERT_EQ(eval_logs.size(), want_evals.size());
  for (size_t i = 0; i < want_evals.size(); ++i) {
    EXPECT_EQ(eval_logs[i]->at("step").get<int64_t>(), want_evals[i].at("step").get<int64_t>());
    diffs.Check("eval_loss", absl::StrCat("evaluation ", i),
                eval_logs[i]->at("eval_loss").get<double>(),
                want_evals[i].at("eval_loss").get<double>());
  }
  ASSERT_EQ(final_logs.size(), 1u);
  diffs.Check("train_loss", "final metrics", out.metrics.at("train_loss").get<double>(),
              want.at("train_loss").get<double>());
  diffs.Check("train_loss", "TrainOutput", out.training_loss, want.at("train_loss").get<double>());
  EXPECT_EQ(final_logs[0]->at("epoch").get<double>(), Round2(want.at("epoch").get<double>()));
  ASSERT_TRUE(out.metrics.contains("epoch")) << "HF's log() adds epoch to the train metrics";
  EXPECT_EQ(out.metrics.at("epoch").get<double>(), Round2(want.at("epoch").get<double>()));

  CheckFinalState(name, *run.model, diffs);
  std::cout << "[parity] " << name << ": max relative difference" << diffs.Summary() << "\n";
}

INSTANTIATE_TEST_SUITE_P(Scenarios, TrainerParityTest, ::testing::ValuesIn(ScenarioNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// "<scenario>/<step>" for every HF checkpoint the reference wrote.
std::vector<std::string> HfCheckpoints() {
  std::vector<std::string> names;
  for (const json& s : g_inputs->spec.at("scenarios")) {
    for (const json& step : s.value("hf_checkpoint_steps", json::array())) {
      names.push_back(absl::StrCat(s.at("name").get<std::string>(), "/", step.get<int64_t>()));
    }
  }
  return names;
}

class HfCheckpointResumeTest : public ::testing::TestWithParam<std::string> {};

// Resumes from the folder the reference wrote as HF's Trainer does (pytorch_model.bin,
// optimizer.pt, scheduler.pt, rng_state.pth with Python's random / numpy states, 4.38's
// trainer_state.json; no loom file) and must go on with the reference's own uninterrupted
// numbers: every micro-batch loss after the checkpoint, the later evaluations, the final
// parameters and the generator state at the end.
TEST_P(HfCheckpointResumeTest, ContinuesThePythonRun) {
  const std::vector<std::string> parts = absl::StrSplit(GetParam(), '/');
  ASSERT_EQ(parts.size(), 2u);
  const std::string& name = parts[0];
  int64_t step = 0;
  ASSERT_TRUE(absl::SimpleAtoi(parts[1], &step));
  const json& scenario = Scenario(name);
  const json& want = g_inputs->expected.at(name);
  const std::string folder =
      absl::StrCat(g_inputs->data_dir, "/hf_checkpoints/", name, "/checkpoint-", step);
  ASSERT_OK_AND_ASSIGN(ScenarioRun run, MakeRun(scenario, absl::StrCat(g_inputs->out_dir, "/",
                                                                       name, "_from_hf_", step)));
  ASSERT_OK_AND_ASSIGN(TrainOutput out, run.trainer->Train(ResumeFrom::Path(folder)));
  ASSERT_EQ(run.trainer->state().global_step, want.at("global_step").get<int64_t>());
  Diffs diffs;
  // Micro-batches of the steps after the checkpoint (no window straddles an epoch here).
  const json& micro = want.at("micro_losses");
  const size_t done = micro.size() - run.trainer->micro_losses.size();
  ASSERT_EQ(done, static_cast<size_t>(step * run.trainer->args().gradient_accumulation_steps()));
  for (size_t i = 0; i < run.trainer->micro_losses.size(); ++i) {
    diffs.Check("micro_loss", absl::StrCat("micro-batch ", done + i),
                run.trainer->micro_losses[i].second, micro[done + i].get<double>());
  }
  std::vector<const Metrics*> evals;
  for (const Metrics& entry : run.trainer->state().log_history) {
    if (entry.contains("eval_loss") && entry.at("step").get<int64_t>() > step) {
      evals.push_back(&entry);
    }
  }
  std::vector<const json*> want_evals;
  for (const json& e : want.at("evals")) {
    if (e.at("step").get<int64_t>() > step) want_evals.push_back(&e);
  }
  ASSERT_EQ(evals.size(), want_evals.size());
  for (size_t i = 0; i < evals.size(); ++i) {
    diffs.Check("eval_loss", absl::StrCat("evaluation at step ", evals[i]->at("step").get<int64_t>()),
                evals[i]->at("eval_loss").get<double>(), want_evals[i]->at("eval_loss").get<double>());
  }
  CheckFinalState(name, *run.model, diffs);
  std::cout << "[hf resume] " << name << " from step " << step << ": max relative difference" << diffs.Summary() << "\n";
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, HfCheckpointResumeTest,
                         ::testing::ValuesIn(HfCheckpoints()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return absl::StrReplaceAll(info.param, {{"/", "_step"}});
                         });

absl::StatusOr<json> ReadJson(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return text.status();
  json value = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return absl::InvalidArgumentError(path + " is not valid JSON");
  return value;
}

absl::Status Load(const std::string& scenarios, const std::string& dir, const std::string& expected,
                  const std::string& expected_params, Inputs* inputs) {
  absl::StatusOr<json> spec = ReadJson(scenarios);
  if (!spec.ok()) return spec.status();
  inputs->spec = *std::move(spec);
  absl::StatusOr<json> want = ReadJson(expected);
  if (!want.ok()) return want.status();
  inputs->expected = *std::move(want);
  for (auto [file, target] :
       {std::pair{"weights.pt", &inputs->weights}, std::pair{"train.pt", &inputs->train},
        std::pair{"eval.pt", &inputs->eval}}) {
    absl::StatusOr<data::TensorMap> map = LoadTensorMap(dir + "/" + file);
    if (!map.ok()) return map.status();
    *target = *std::move(map);
  }
  absl::StatusOr<data::TensorMap> params = LoadTensorMap(expected_params);
  if (!params.ok()) return params.status();
  inputs->expected_params = *std::move(params);
  inputs->out_dir = dir + "/runs";
  inputs->data_dir = dir;
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::trainer::testing

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  using loom::trainer::testing::g_inputs;
  if (argc < 5) {
    std::cerr << "usage: parity_check SCENARIOS_JSON DATA_DIR EXPECTED_JSON EXPECTED_PARAMS_PT "
                 "[--gtest_* flags]\n";
    return 2;
  }
  at::set_num_threads(1);
  g_inputs = new loom::trainer::testing::Inputs();
  absl::Status status = loom::trainer::testing::Load(argv[1], argv[2], argv[3], argv[4], g_inputs);
  if (!status.ok()) {
    std::cerr << "parity_check: " << status << "\n";
    return 1;
  }
  // The scenario list must be loaded before InitGoogleTest instantiates the tests.
  argv[4] = argv[0];
  int rest = argc - 4;
  ::testing::InitGoogleTest(&rest, argv + 4);
  return RUN_ALL_TESTS();
}
