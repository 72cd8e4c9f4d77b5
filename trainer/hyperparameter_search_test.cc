// Trainer::HyperparameterSearch on a one-weight model whose training is closed-form enough to
// check what each trial trained with: the search's bad inputs, each trial's run folder and
// TrainerState (trial_params, max_steps from the sampled epochs and batch size), the journal,
// hp_search.json and the BestRun, and pruning as the median rule says.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/file_util.h"
#include "base/python_json.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hpsearch/journal.h"
#include "trainer/trainer.h"
#include "trainer/trainer_state.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

// prediction = w * x, loss = mean((w x - y)^2) with y = 2x: the evaluation loss falls as w
// approaches 2, faster with a larger learning rate.
class LineModel : public Model {
 public:
  LineModel() { w_ = register_parameter("w", at::zeros({1})); }
  ModelOutput Forward(const data::Batch& in) override {
    at::Tensor pred = in.at("x") * w_;
    ModelOutput out;
    if (in.count("labels")) out.loss = (pred - in.at("labels")).pow(2).mean();
    out.outputs.push_back({"logits", pred});
    return out;
  }

 private:
  at::Tensor w_;
};

std::shared_ptr<data::TensorDataset> Line(int64_t n) {
  at::Tensor x = at::linspace(0.1, 1.0, n);
  return *data::TensorDataset::Create({{"x", x}, {"labels", 2 * x}});
}

std::string Dir(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

TrainerOptions Options(const std::string& out) {
  TrainerOptions o;
  o.model_init = []() -> absl::StatusOr<std::shared_ptr<Model>> {
    return std::make_shared<LineModel>();
  };
  o.args.set_output_dir(out);
  o.args.set_disable_tqdm(true);
  o.args.add_report_to("none");
  o.args.set_save_strategy("no");
  o.args.set_logging_strategy("no");
  o.train_dataset = Line(20);
  o.eval_dataset = Line(10);
  return o;
}

hpsearch::SearchSpace Space() {
  return *hpsearch::ParseSearchSpace(
      R"({"learning_rate": {"type": "float", "low": 1e-3, "high": 0.3, "log": true},
          "num_train_epochs": {"type": "int", "low": 1, "high": 3},
          "per_device_train_batch_size": {"type": "categorical", "choices": [4, 8]}})");
}

TEST(HyperparameterSearch, EachTrialTrainsWithItsValuesInItsRunFolder) {
  const std::string out = Dir("search");
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(Options(out)));
  HpSearchOptions o;
  o.hp_space = Space();
  o.n_trials = 6;
  o.backend = "random";
  ASSERT_OK_AND_ASSIGN(BestRun best, trainer->HyperparameterSearch(o));
  ASSERT_OK_AND_ASSIGN(std::string text, base::ReadFile(out + "/hp_search.json"));
  ASSERT_OK_AND_ASSIGN(nlohmann::ordered_json report, base::ParsePythonJson(text));
  ASSERT_EQ(report["trials"].size(), 6u);
  double best_seen = INFINITY;
  std::string best_id;
  for (const auto& t : report["trials"]) {
    const int64_t number = t["number"].get<int64_t>();
    EXPECT_EQ(t["run_name"], "run-" + std::to_string(number));
    EXPECT_EQ(t["state"], "complete");
    ASSERT_OK_AND_ASSIGN(
        TrainerState state,
        TrainerState::LoadFromJson(out + "/run-" + std::to_string(number) + "/trainer_state.json"));
    EXPECT_TRUE(state.is_hyper_param_search);
    EXPECT_FALSE(state.trial_name.has_value());  // HF: only with hp_name
    EXPECT_EQ(state.trial_params, t["params"]);
    // The sampled epochs and batch size are what the trial trained with: 20 samples.
    const int64_t bs = t["params"]["per_device_train_batch_size"].get<int64_t>();
    const int64_t epochs = t["params"]["num_train_epochs"].get<int64_t>();
    EXPECT_EQ(state.train_batch_size, bs);
    EXPECT_EQ(state.max_steps, epochs * ((20 + bs - 1) / bs));
    // No evaluation during training: the objective is eval_loss after it (HF).
    const double objective = t["objective"].get<double>();
    EXPECT_GT(objective, 0);
    if (objective < best_seen) best_seen = objective, best_id = std::to_string(number);
  }
  EXPECT_EQ(best.run_id, best_id);
  EXPECT_EQ(best.objective, best_seen);
  EXPECT_EQ(best.hyperparameters, report["best_run"]["hyperparameters"]);
  EXPECT_TRUE(best.run_summary.is_null());
  // The arguments are the caller's again after the search.
  EXPECT_EQ(trainer->args().learning_rate(), 5e-5);
}

TEST(HyperparameterSearch, CheckpointsGoUnderTheRunFolderAndHpNameNamesIt) {
  const std::string out = Dir("named");
  TrainerOptions options = Options(out);
  options.args.set_save_strategy("steps");
  options.args.set_save_steps(2);
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(options)));
  HpSearchOptions o;
  o.hp_space = *hpsearch::ParseSearchSpace(
      R"({"learning_rate": {"type": "float", "low": 0.01, "high": 0.1}})");
  o.n_trials = 2;
  o.backend = "tpe";
  o.hp_name = [](const hpsearch::TrialRun& r) { return "trial_" + std::to_string(r.number); };
  ASSERT_OK(trainer->HyperparameterSearch(o).status());
  for (int n : {0, 1}) {
    const std::string run = out + "/trial_" + std::to_string(n);
    EXPECT_TRUE(std::filesystem::is_directory(run + "/checkpoint-2")) << run;
    ASSERT_OK_AND_ASSIGN(TrainerState state,
                         TrainerState::LoadFromJson(run + "/trainer_state.json"));
    EXPECT_EQ(state.trial_name, "trial_" + std::to_string(n));
  }
  EXPECT_FALSE(std::filesystem::exists(out + "/checkpoint-2"));
}

// optuna's MedianPruner through the loop: every evaluation during training reports the
// objective at its step; a trial worse than the median of the completed trials there stops.
TEST(HyperparameterSearch, PrunedTrialsAreWorseThanTheMedianAtTheirLastStep) {
  const std::string out = Dir("pruning");
  TrainerOptions options = Options(out);
  options.args.set_eval_strategy("steps");
  options.args.set_eval_steps(1);
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(options)));
  HpSearchOptions o;
  o.hp_space = *hpsearch::ParseSearchSpace(
      R"({"learning_rate": {"type": "float", "low": 1e-4, "high": 0.3, "log": true},
          "num_train_epochs": {"type": "int", "low": 1, "high": 2}})");
  o.n_trials = 14;
  o.backend = "random";
  ASSERT_OK(trainer->HyperparameterSearch(o).status());
  ASSERT_OK_AND_ASSIGN(auto journal,
                       hpsearch::JournalFile::OpenReadOnly(out + "/hp_search.journal"));
  ASSERT_OK_AND_ASSIGN(auto ops, journal.Read());
  ASSERT_OK_AND_ASSIGN(hpsearch::JournalState state, hpsearch::Replay(ops));
  std::vector<hpsearch::FrozenTrial> trials = state.TrialsOf(*state.FindStudy("hp_search"));
  ASSERT_EQ(trials.size(), 14u);
  int pruned = 0;
  for (size_t i = 0; i < trials.size(); ++i) {
    const hpsearch::FrozenTrial& t = trials[i];
    if (t.state != hpsearch::TrialState::kPruned) {
      EXPECT_EQ(t.state, hpsearch::TrialState::kComplete);
      continue;
    }
    ++pruned;
    // The completed trials before it, at its last step: it was above their median.
    const int64_t step = *t.last_step();
    std::vector<double> at_step;
    for (size_t j = 0; j < i; ++j) {
      if (trials[j].state == hpsearch::TrialState::kComplete &&
          trials[j].intermediate_values.count(step)) {
        at_step.push_back(trials[j].intermediate_values.at(step));
      }
    }
    ASSERT_GE(at_step.size(), 1u);
    std::sort(at_step.begin(), at_step.end());
    const size_t n = at_step.size();
    const double median = n % 2 ? at_step[n / 2] : (at_step[n / 2 - 1] + at_step[n / 2]) / 2;
    double best_so_far = INFINITY;
    for (const auto& [s, v] : t.intermediate_values) best_so_far = std::min(best_so_far, v);
    EXPECT_GT(best_so_far, median) << "trial " << t.number;
    EXPECT_EQ(t.value, t.intermediate_values.at(step));
  }
  EXPECT_GT(pruned, 0);
}

TEST(HyperparameterSearch, RefusesBadInputBeforeAnyTrial) {
  const std::string out = Dir("bad");
  TrainerOptions with_model = Options(out);
  with_model.model_init = nullptr;
  with_model.model = std::make_shared<LineModel>();
  ASSERT_OK_AND_ASSIGN(auto fixed, Trainer::Create(std::move(with_model)));
  EXPECT_THAT(fixed->HyperparameterSearch({}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("you need to pass your model through a model_init")));
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(Options(out)));
  HpSearchOptions o;
  o.backend = "ray";
  EXPECT_THAT(trainer->HyperparameterSearch(o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("grid, random, tpe")));
  o.backend = "hyperopt";
  EXPECT_THAT(trainer->HyperparameterSearch(o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown hyperparameter")));
  o = {};
  o.direction = {"minimize", "maximize"};
  EXPECT_THAT(trainer->HyperparameterSearch(o),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("multi-objective")));
  o = {};
  o.hp_space =
      *hpsearch::ParseSearchSpace(R"({"dropout": {"type": "float", "low": 0, "high": 1}})");
  EXPECT_THAT(trainer->HyperparameterSearch(o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"dropout\" is not a TrainingArguments field")));
  o.hp_space = *hpsearch::ParseSearchSpace(
      R"({"per_device_train_batch_size": {"type": "categorical", "choices": ["big"]}})");
  EXPECT_FALSE(trainer->HyperparameterSearch(o).ok());
  o = {};
  o.backend = "grid";
  o.hp_space =
      *hpsearch::ParseSearchSpace(R"({"learning_rate": {"type": "float", "low": 0.1, "high": 1}})");
  EXPECT_THAT(trainer->HyperparameterSearch(o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("grid")));
  // Nothing was trained or written for any of them.
  EXPECT_FALSE(std::filesystem::exists(out + "/run-0"));
}

}  // namespace
}  // namespace loom::trainer
