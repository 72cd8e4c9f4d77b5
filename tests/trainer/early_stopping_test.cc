// Early stopping and named evaluation datasets through the whole Trainer (transformers 4.41
// EarlyStoppingCallback, Trainer(eval_dataset=dict) and Trainer.evaluate's metric prefixes,
// load_best_model_at_end).
//
// HF's rules the expectations are derived from (transformers 4.38):
//   - EarlyStoppingCallback.on_evaluate compares the metric with state.best_metric: the
//     patience counter resets when the value is better (np.greater / np.less per
//     greater_is_better) AND differs from best_metric by more than the threshold; otherwise it
//     grows; at `patience` it sets should_training_stop.
//   - state.best_metric is updated by _save_checkpoint, which runs AFTER on_evaluate in
//     _maybe_log_save_evaluate, and with no threshold (any strictly better value). So a
//     below-threshold improvement raises the bar for the next evaluation.
//   - A dict of eval datasets evaluates each one with metric_key_prefix "eval_<name>":
//     metrics "eval_<name>_loss", "eval_<name>_<compute_metrics key>", and the speed metrics;
//     one log entry per dataset. eval_<name>_loss is the mean over examples of each batch's
//     mean loss (sequential batches).
#include <ATen/ATen.h>
#include <torch/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/trainer/test_util.h"
#include "tests/trainer/tiny_model.h"
#include "trainer/flow_callbacks.h"
#include "trainer/trainer.h"

namespace loom::trainer::testing {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

std::string FreshDir(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/", name);
  std::filesystem::remove_all(dir);
  return dir;
}

// compute_metrics returning the next value of `script` (per dataset size, so each named
// dataset has its own sequence) under `key`.
ComputeMetricsFn Scripted(std::string key, std::map<int64_t, std::vector<double>> script,
                          std::shared_ptr<int> calls) {
  auto next = std::make_shared<std::map<int64_t, size_t>>();
  return [=](const EvalPrediction& p) -> absl::StatusOr<Metrics> {
    ++*calls;
    const int64_t n = p.predictions.at(0).size(0);
    const std::vector<double>& values = script.at(n);
    size_t& i = (*next)[n];
    if (i >= values.size()) return absl::OutOfRangeError("script exhausted");
    Metrics m = Metrics::object();
    m[key] = values[i++];
    return m;
  };
}

// Values of `key` in the evaluation log entries, in order.
std::vector<double> Logged(const TrainerState& state, const std::string& key) {
  std::vector<double> out;
  for (const Metrics& entry : state.log_history) {
    if (entry.contains(key)) out.push_back(entry.at(key).get<double>());
  }
  return out;
}

nlohmann::ordered_json EarlyStoppingArgs(const std::string& dir) {
  return {{"output_dir", dir},
          {"per_device_train_batch_size", 4},
          {"per_device_eval_batch_size", 4},
          {"max_steps", 12},
          {"learning_rate", 0.01},
          {"logging_steps", 1},
          {"eval_strategy", "steps"},
          {"eval_steps", 1},
          {"save_strategy", "steps"},
          {"save_steps", 1},
          {"load_best_model_at_end", true},
          {"report_to", "none"},
          {"disable_tqdm", true}};
}

// accuracy (greater is better), patience 2, threshold 0.01:
//   eval 1: 0.50  best none          -> counter 0; saved: best 0.50
//   eval 2: 0.49  not better         -> counter 1; best stays 0.50
//   eval 3: 0.60  +0.10 > 0.01       -> counter 0; best 0.60
//   eval 4: 0.605 better by 0.005    -> counter 1; saved: best 0.605 (no threshold there)
//   eval 5: 0.612 better by 0.007    -> counter 2 = patience: stop at step 5; best 0.612.
// (A callback measuring against its own last qualifying improvement, 0.60, would see +0.012
// at eval 5 and go on.)
TEST(EarlyStoppingTest, StopsAtTheStepThePatienceRuleImplies) {
  const std::string dir = FreshDir("early_stopping_accuracy");
  nlohmann::ordered_json values = EarlyStoppingArgs(dir);
  values["metric_for_best_model"] = "accuracy";
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments args, ParseArgs(values));
  auto calls = std::make_shared<int>(0);
  auto early = std::make_shared<EarlyStoppingCallback>(/*patience=*/2, /*threshold=*/0.01);
  TrainerOptions options;
  options.model = std::make_shared<TinyClassifier>();
  options.args = args;
  options.train_dataset = ClassificationDataset(21, /*seed=*/1);
  options.eval_dataset = ClassificationDataset(7, /*seed=*/2);
  options.compute_metrics =
      Scripted("accuracy", {{7, {0.50, 0.49, 0.60, 0.605, 0.612, 0.2, 0.2, 0.2, 0.2}}}, calls);
  options.callbacks.push_back(early);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(options)));
  ASSERT_OK(trainer->Train());

  const TrainerState& state = trainer->state();
  EXPECT_EQ(state.global_step, 5);
  EXPECT_EQ(*calls, 5);
  EXPECT_EQ(early->patience_counter(), 2);
  EXPECT_THAT(Logged(state, "eval_accuracy"), ElementsAre(0.50, 0.49, 0.60, 0.605, 0.612));
  ASSERT_TRUE(state.best_metric.has_value());
  EXPECT_DOUBLE_EQ(*state.best_metric, 0.612);
  EXPECT_EQ(state.best_model_checkpoint, dir + "/checkpoint-5");
  for (int step = 1; step <= 5; ++step) {
    EXPECT_TRUE(std::filesystem::is_directory(absl::StrCat(dir, "/checkpoint-", step))) << step;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoint-6"));
}

// A lower-is-better metric (greater_is_better false), patience 1, threshold 0:
//   0.50 -> counter 0 (best 0.50); 0.40 -> counter 0 (best 0.40); 0.45 -> counter 1: stop at 3.
TEST(EarlyStoppingTest, LowerIsBetterWithPatienceOne) {
  const std::string dir = FreshDir("early_stopping_error");
  nlohmann::ordered_json values = EarlyStoppingArgs(dir);
  values["metric_for_best_model"] = "error";
  values["greater_is_better"] = false;
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments args, ParseArgs(values));
  auto calls = std::make_shared<int>(0);
  TrainerOptions options;
  options.model = std::make_shared<TinyClassifier>();
  options.args = args;
  options.train_dataset = ClassificationDataset(21, /*seed=*/1);
  options.eval_dataset = ClassificationDataset(7, /*seed=*/2);
  options.compute_metrics = Scripted("error", {{7, {0.50, 0.40, 0.45, 0.30, 0.20, 0.10}}}, calls);
  options.callbacks.push_back(std::make_shared<EarlyStoppingCallback>(/*patience=*/1));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(options)));
  ASSERT_OK(trainer->Train());
  EXPECT_EQ(trainer->state().global_step, 3);
  EXPECT_THAT(Logged(trainer->state(), "eval_error"), ElementsAre(0.50, 0.40, 0.45));
  EXPECT_DOUBLE_EQ(trainer->state().best_metric.value_or(-1), 0.40);
  EXPECT_EQ(trainer->state().best_model_checkpoint, dir + "/checkpoint-2");
}

// With named eval datasets, metric_for_best_model "alpha_accuracy" tracks eval_alpha_accuracy
// only: alpha repeats 0.5 (no improvement at eval 2 -> stop with patience 1) while beta keeps
// improving (stopping on it would never happen).
TEST(EarlyStoppingTest, TracksTheNamedDatasetsMetric) {
  const std::string dir = FreshDir("early_stopping_named");
  nlohmann::ordered_json values = EarlyStoppingArgs(dir);
  values["metric_for_best_model"] = "alpha_accuracy";
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments args, ParseArgs(values));
  auto calls = std::make_shared<int>(0);
  TrainerOptions options;
  options.model = std::make_shared<TinyClassifier>();
  options.args = args;
  options.train_dataset = ClassificationDataset(21, /*seed=*/1);
  options.eval_datasets = {{"alpha", ClassificationDataset(5, /*seed=*/2)},
                           {"beta", ClassificationDataset(3, /*seed=*/3)}};
  options.compute_metrics =
      Scripted("accuracy", {{5, {0.5, 0.5, 0.9, 0.9}}, {3, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6}}}, calls);
  options.callbacks.push_back(std::make_shared<EarlyStoppingCallback>(/*patience=*/1));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(options)));
  ASSERT_OK(trainer->Train());
  EXPECT_EQ(trainer->state().global_step, 2);
  EXPECT_EQ(*calls, 4);
  EXPECT_THAT(Logged(trainer->state(), "eval_alpha_accuracy"), ElementsAre(0.5, 0.5));
  EXPECT_THAT(Logged(trainer->state(), "eval_beta_accuracy"), ElementsAre(0.1, 0.2));
  EXPECT_EQ(trainer->state().best_model_checkpoint, dir + "/checkpoint-1");
}

// The eval loss HF reports, computed here directly from the model: sequential batches, each
// batch's mean cross-entropy weighted by its size, divided by the number of examples.
double ExpectedEvalLoss(TinyClassifier& model, const data::Dataset& dataset, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  model.eval();
  const auto& columns = dynamic_cast<const data::TensorDataset&>(dataset).columns();
  const int64_t n = dataset.Size();
  double sum = 0;
  for (int64_t start = 0; start < n; start += batch_size) {
    const int64_t len = std::min(batch_size, n - start);
    data::Batch batch = {{"input_ids", columns.at("input_ids").narrow(0, start, len)},
                         {"labels", columns.at("labels").narrow(0, start, len)}};
    sum += model.Forward(batch).loss.item<double>() * len;
  }
  return sum / n;
}

TEST(EvalDatasetsTest, MetricsArePrefixedWithTheDatasetName) {
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments args,
                       ParseArgs({{"output_dir", FreshDir("eval_datasets")},
                                  {"per_device_eval_batch_size", 2},
                                  {"report_to", "none"},
                                  {"disable_tqdm", true}}));
  torch::manual_seed(3);
  auto model = std::make_shared<TinyClassifier>();
  auto alpha = ClassificationDataset(5, /*seed=*/2);
  auto beta = ClassificationDataset(3, /*seed=*/3);
  TrainerOptions options;
  options.model = model;
  options.args = args;
  options.eval_datasets = {{"alpha", alpha}, {"beta", beta}};
  // Accuracy of the predictions, so the value depends on the dataset it was computed on.
  options.compute_metrics = [](const EvalPrediction& p) -> absl::StatusOr<Metrics> {
    Metrics m = Metrics::object();
    m["accuracy"] =
        p.predictions.at(0).argmax(-1).eq(p.label_ids.at(0)).to(at::kDouble).mean().item<double>();
    return m;
  };
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(options)));
  ASSERT_OK_AND_ASSIGN(Metrics metrics, trainer->Evaluate());

  std::vector<std::string> keys;
  for (auto it = metrics.begin(); it != metrics.end(); ++it) keys.push_back(it.key());
  // HF evaluation_loop: the loss first, then compute_metrics' keys (prefixed), then the speed
  // metrics of evaluate(); dataset after dataset in the dict's order.
  EXPECT_THAT(keys, ElementsAreArray<std::string>(
                        {"eval_alpha_loss", "eval_alpha_accuracy", "eval_alpha_runtime",
                         "eval_alpha_samples_per_second", "eval_alpha_steps_per_second",
                         "eval_beta_loss", "eval_beta_accuracy", "eval_beta_runtime",
                         "eval_beta_samples_per_second", "eval_beta_steps_per_second"}));
  EXPECT_NEAR(metrics.at("eval_alpha_loss").get<double>(), ExpectedEvalLoss(*model, *alpha, 2),
              1e-6);
  EXPECT_NEAR(metrics.at("eval_beta_loss").get<double>(), ExpectedEvalLoss(*model, *beta, 2), 1e-6);

  // Accuracy computed directly from the model's logits.
  for (const auto& [name, ds] : {std::pair{"alpha", alpha}, std::pair{"beta", beta}}) {
    torch::NoGradGuard no_grad;
    model->eval();
    const auto& cols = dynamic_cast<const data::TensorDataset&>(*ds).columns();
    const double accuracy = model->Forward({{"input_ids", cols.at("input_ids")}})
                                .Get("logits")
                                .argmax(-1)
                                .eq(cols.at("labels"))
                                .to(at::kDouble)
                                .mean()
                                .item<double>();
    EXPECT_THAT(metrics.at(absl::StrCat("eval_", name, "_accuracy")).get<double>(),
                DoubleEq(accuracy))
        << name;
  }
  // One log entry per dataset, none with an unprefixed eval_loss.
  const auto& history = trainer->state().log_history;
  ASSERT_EQ(history.size(), 2u);
  EXPECT_TRUE(history[0].contains("eval_alpha_loss"));
  EXPECT_FALSE(history[0].contains("eval_beta_loss"));
  EXPECT_TRUE(history[1].contains("eval_beta_loss"));
  for (const Metrics& entry : history) EXPECT_FALSE(entry.contains("eval_loss"));
}

}  // namespace
}  // namespace loom::trainer::testing
