// Trainer behaviours with closed-form expectations (construction errors, HF's nan/inf loss
// filter, example-weighted eval loss, -100 padding of ragged predictions, iterable datasets,
// memory and token metrics). Numerical parity with PyTorch is in tests/trainer/.
#include "trainer/trainer.h"

#include <cmath>
#include <cstdlib>

#include "base/status_matchers.h"
#include "data/sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "logging/log_level.h"
#include "modeling/deferred_init.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

// loss = mean(x) (or mean(input_ids)) + 0 * w: a loss the data fixes, with a zero gradient so
// training never changes it; logits = the input itself.
class EchoModel : public Model {
 public:
  EchoModel() { w_ = register_parameter("w", at::ones({1})); }
  ModelOutput Forward(const data::Batch& in) override {
    at::Tensor x = in.count("x") ? in.at("x") : in.at("input_ids").to(at::kFloat);
    ModelOutput out;
    if (in.count("labels")) out.loss = (w_ * 0).sum() + x.mean();
    out.outputs.push_back({"logits", x * w_});
    return out;
  }

 private:
  at::Tensor w_;
};

TrainerOptions Options(std::shared_ptr<const data::Dataset> train) {
  TrainerOptions o;
  o.model = std::make_shared<EchoModel>();
  o.args.set_output_dir(std::string(std::getenv("TEST_TMPDIR")) + "/out");
  o.args.set_disable_tqdm(true);
  o.args.add_report_to("none");
  o.args.set_save_strategy("no");
  o.train_dataset = std::move(train);
  return o;
}

std::shared_ptr<data::TensorDataset> XDataset(std::vector<float> xs) {
  const int64_t n = static_cast<int64_t>(xs.size());
  return *data::TensorDataset::Create(
      {{"x", at::tensor(xs)}, {"labels", at::zeros({n}, at::kLong)}});
}

TEST(TrainerCreateTest, NeedsModelOrModelInit) {
  TrainerOptions o = Options(nullptr);
  o.model = nullptr;
  EXPECT_THAT(Trainer::Create(std::move(o)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model_init")));
}

// A model whose parameters are deferred (modeling/deferred_init.h) without a fill to make
// them is refused, not run on parameters without bytes.
TEST(TrainerCreateTest, DeferredParametersWithoutFillAreRefused) {
  TrainerOptions o = Options(nullptr);
  auto model = std::make_shared<EchoModel>();
  modeling::DeferParameters(*model);
  o.model = model;
  EXPECT_THAT(Trainer::Create(std::move(o)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("deferred parameters")));
}

// Without parameter sharding the Trainer builds a deferred model whole through its fill, once.
TEST(TrainerCreateTest, DeferredParametersAreBuiltWholeWithoutParameterSharding) {
  TrainerOptions o = Options(nullptr);
  auto model = std::make_shared<EchoModel>();
  modeling::DeferParameters(*model);
  int calls = 0;
  model->set_parameter_fill([&calls](const std::string& name, at::Tensor& dest) {
    ++calls;
    dest.fill_(name == "w" ? 0.25 : -1.0);
    return absl::OkStatus();
  });
  o.model = model;
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
  EXPECT_FALSE(modeling::AnyDeferred(*model));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(model->named_parameters()["w"].item<float>(), 0.25f);
  EXPECT_FALSE(model->parameter_fill());  // dropped once the values are made
}

TEST(TrainerCreateTest, LabelNamedLabelIsRejected) {
  TrainerOptions o = Options(nullptr);
  o.args.add_label_names("label");
  EXPECT_THAT(Trainer::Create(std::move(o)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--label_names")));
}

TEST(TrainerCreateTest, SchedulerWithoutOptimizerIsRejected) {
  TrainerOptions o = Options(nullptr);
  o.args.set_max_steps(1);
  ASSERT_OK_AND_ASSIGN(auto probe, Trainer::Create(Options(XDataset({1, 2}))));
  ASSERT_OK(probe->CreateOptimizerAndScheduler(1));
  EXPECT_NE(probe->lr_scheduler(), nullptr);
  o.lr_scheduler = optim::CreateScheduler(probe->args(), probe->optimizer(), 1).value();
  EXPECT_THAT(Trainer::Create(std::move(o)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("without")));
}

TEST(TrainerCreateTest, AppliesTheProcessLogLevel) {
  // A single process is the main process: --log_level applies; passive keeps the level.
  TrainerOptions o = Options(nullptr);
  o.args.set_log_level("error");
  ASSERT_OK(Trainer::Create(std::move(o)).status());
  EXPECT_EQ(logging::CurrentLogLevel(), 40);
  ASSERT_OK(Trainer::Create(Options(nullptr)).status());
  EXPECT_EQ(logging::CurrentLogLevel(), 40);
  ASSERT_OK(logging::ApplyLogLevel(20));
}

TEST(TrainerTrainTest, NanLossIsReplacedByTheWindowAverageForLogging) {
  // Two one-example steps, logged together: HF adds tr_loss / (1 + steps since the last log)
  // for the nan step instead of the nan.
  TrainerOptions o = Options(XDataset({2.0f, NAN}));
  o.args.set_per_device_train_batch_size(1);
  o.args.set_num_train_epochs(1);
  o.args.set_logging_steps(2);
  o.args.set_learning_rate(0);
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
  ASSERT_OK_AND_ASSIGN(TrainOutput out, trainer->Train());
  const std::vector<int64_t> order = data::RandomSampler(2, 42).Indices(0);
  // nan first: tr_loss 0 + 0/1 = 0, then + 2 -> 2; nan second: 2 + 2/2 = 3.
  const double expected_sum = order[0] == 1 ? 2.0 : 3.0;
  ASSERT_GE(trainer->state().log_history.size(), 2u);
  EXPECT_EQ(trainer->state().log_history[0]["loss"].get<double>(), expected_sum / 2);
  EXPECT_EQ(out.training_loss, expected_sum / 2);
}

TEST(TrainerEvaluateTest, EvalLossWeightsBatchesByTheirSize) {
  TrainerOptions o = Options(nullptr);
  o.eval_dataset = XDataset({1, 2, 3, 4, 5});
  o.args.set_per_device_eval_batch_size(2);
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
  ASSERT_OK_AND_ASSIGN(Metrics m, trainer->Evaluate());
  // Batch means 1.5, 3.5, 5 weighted by 2, 2, 1: the mean of all five examples.
  EXPECT_DOUBLE_EQ(m["eval_loss"].get<double>(), 3.0);
  EXPECT_EQ(m.begin().key(), "eval_loss");
  EXPECT_TRUE(m.contains("eval_runtime"));
  EXPECT_TRUE(m.contains("eval_samples_per_second"));
  EXPECT_TRUE(m.contains("eval_steps_per_second"));
  EXPECT_FALSE(m.contains("eval_mem_cpu_alloc_delta"));  // skip_memory_metrics by default
  EXPECT_EQ(trainer->state().log_history.back()["eval_loss"].get<double>(), 3.0);
}

TEST(TrainerPredictTest, RaggedPredictionsArePaddedWithMinus100) {
  std::vector<data::Example> examples;
  for (int len : {2, 2, 3, 3}) {
    examples.push_back({{"input_ids", at::arange(1, len + 1, at::kLong)},
                        {"labels", at::scalar_tensor(len, at::kLong)}});
  }
  TrainerOptions o = Options(nullptr);
  o.data_collator = std::make_shared<data::PaddingCollator>(
      data::PaddingCollatorOptions().set_return_attention_mask(false));
  o.args.set_per_device_eval_batch_size(2);
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
  ASSERT_OK_AND_ASSIGN(
      PredictionOutput p,
      trainer->Predict(std::make_shared<data::ExampleListDataset>(std::move(examples))));
  ASSERT_EQ(p.predictions.size(), 1u);
  const at::Tensor expected =
      at::tensor({1.f, 2.f, -100.f, 1.f, 2.f, -100.f, 1.f, 2.f, 3.f, 1.f, 2.f, 3.f}).view({4, 3});
  EXPECT_TRUE(p.predictions[0].equal(expected)) << p.predictions[0];
  ASSERT_EQ(p.label_ids.size(), 1u);
  EXPECT_TRUE(p.label_ids[0].equal(at::tensor({2, 2, 3, 3}, at::kLong))) << p.label_ids[0];
  EXPECT_TRUE(p.metrics.contains("test_loss"));
  EXPECT_TRUE(p.metrics.contains("test_runtime"));
}

TEST(TrainerPredictTest, PreprocessLogitsAndPredictionLossOnly) {
  std::vector<data::Example> examples;
  for (int i = 0; i < 5; ++i) {
    examples.push_back({{"input_ids", at::arange(i, i + 3, at::kLong)},
                        {"labels", at::scalar_tensor(i, at::kLong)}});
  }
  auto ds = std::make_shared<data::ExampleListDataset>(std::move(examples));
  TrainerOptions o = Options(nullptr);
  o.args.set_per_device_eval_batch_size(2);
  o.args.set_eval_accumulation_steps(1);
  at::Tensor seen_labels;
  o.preprocess_logits_for_metrics = [&seen_labels](const at::Tensor& logits,
                                                   const at::Tensor& labels) {
    seen_labels = seen_labels.defined() ? at::cat({seen_labels, labels}) : labels;
    return logits.argmax(-1);
  };
  o.compute_metrics = [](const EvalPrediction& p) -> absl::StatusOr<Metrics> {
    Metrics m = Metrics::object();
    m["sum_of_argmax"] = p.predictions.at(0).sum().item<int64_t>();
    return m;
  };
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
  ASSERT_OK_AND_ASSIGN(PredictionOutput p, trainer->Predict(ds));
  // The logits are the inputs, so argmax is the last position (2) for every example.
  EXPECT_TRUE(p.predictions.at(0).equal(at::full({5}, 2, at::kLong)));
  EXPECT_TRUE(seen_labels.equal(at::arange(0, 5, at::kLong)));
  EXPECT_EQ(p.metrics.at("test_sum_of_argmax").get<int64_t>(), 10);
  EXPECT_DOUBLE_EQ(p.metrics.at("test_loss").get<double>(), 3.0);  // mean of all inputs 0..6

  TrainerOptions lo = Options(nullptr);
  lo.args.set_prediction_loss_only(true);
  ASSERT_OK_AND_ASSIGN(auto loss_only, Trainer::Create(std::move(lo)));
  ASSERT_OK_AND_ASSIGN(PredictionOutput q, loss_only->Predict(ds));
  EXPECT_TRUE(q.predictions.empty());
  EXPECT_TRUE(q.label_ids.empty());
  EXPECT_DOUBLE_EQ(q.metrics.at("test_loss").get<double>(), 3.0);
}

TEST(TrainerTrainTest, NumInputTokensSeenCountsTheMainInput) {
  std::vector<data::Example> examples;
  for (int i = 0; i < 6; ++i) {
    examples.push_back({{"input_ids", at::arange(0, 4, at::kLong)}, {"labels", at::tensor(0)}});
  }
  TrainerOptions o = Options(std::make_shared<data::ExampleListDataset>(std::move(examples)));
  o.args.set_per_device_train_batch_size(2);
  o.args.set_num_train_epochs(1);
  o.args.set_logging_steps(1);
  o.args.set_include_num_input_tokens_seen(true);
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
  ASSERT_OK(trainer->Train().status());
  // 2 examples x 4 tokens per step.
  const auto& h = trainer->state().log_history;
  ASSERT_GE(h.size(), 3u);
  for (int step = 1; step <= 3; ++step) {
    EXPECT_EQ(h[step - 1].at("num_input_tokens_seen").get<int64_t>(), 8 * step);
  }
  EXPECT_EQ(trainer->state().num_input_tokens_seen, 24);
}

class CountingStream : public data::IterableDataset {
 public:
  explicit CountingStream(int64_t n) : n_(n) {}
  void SetEpoch(int64_t epoch) override { epochs_.push_back(epoch); }
  absl::StatusOr<std::unique_ptr<data::ExampleIterator>> Iterate() override {
    struct It : data::ExampleIterator {
      int64_t i = 0, n;
      absl::StatusOr<std::optional<data::Example>> Next() override {
        if (i >= n) return std::nullopt;
        return data::Example{{"x", at::tensor(static_cast<float>(i++))},
                             {"labels", at::tensor(int64_t{0})}};
      }
    };
    auto it = std::make_unique<It>();
    it->n = n_;
    return it;
  }
  std::vector<int64_t> epochs_;

 private:
  int64_t n_;
};

TEST(TrainerTrainTest, IterableDatasetsNeedMaxStepsAndRunThatMany) {
  auto stream = std::make_shared<CountingStream>(6);
  TrainerOptions o = Options(nullptr);
  o.train_iterable_dataset = stream;
  o.args.set_per_device_train_batch_size(4);
  ASSERT_OK_AND_ASSIGN(auto no_max, Trainer::Create(std::move(o)));
  EXPECT_THAT(no_max->Train(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--max_steps")));

  TrainerOptions o2 = Options(nullptr);
  o2.train_iterable_dataset = stream;
  o2.args.set_per_device_train_batch_size(4);
  o2.args.set_max_steps(5);
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o2)));
  stream->epochs_.clear();
  ASSERT_OK_AND_ASSIGN(TrainOutput out, trainer->Train());
  EXPECT_EQ(out.global_step, 5);
  // 6 examples in batches of 4: 2 steps per pass, so passes 0, 1, 2 (the last one stops early).
  EXPECT_THAT(stream->epochs_, ::testing::ElementsAre(0, 1, 2));
}

TEST(TrainerTrainTest, MemoryAndTokenMetrics) {
  std::vector<data::Example> examples;
  for (int i = 0; i < 8; ++i) {
    examples.push_back({{"input_ids", at::arange(0, 5, at::kLong)}, {"labels", at::tensor(0)}});
  }
  auto ds = std::make_shared<data::ExampleListDataset>(std::move(examples));
  TrainerOptions o = Options(ds);
  o.eval_dataset = ds;
  o.args.set_per_device_train_batch_size(4);
  o.args.set_num_train_epochs(2);
  o.args.set_skip_memory_metrics(false);
  o.args.set_include_tokens_per_second(true);
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
  ASSERT_OK_AND_ASSIGN(TrainOutput out, trainer->Train());
  const Metrics& m = out.metrics;
  for (const char* key : {"init_mem_cpu_alloc_delta", "init_mem_cpu_peaked_delta",
                          "train_mem_cpu_alloc_delta", "train_mem_cpu_peaked_delta"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_GE(m.at("train_mem_cpu_peaked_delta").get<int64_t>(), 0);
  // 5 tokens per example: tokens/s is 5x samples/s up to the 3-digit rounding.
  ASSERT_TRUE(m.contains("train_tokens_per_second"));
  EXPECT_NEAR(m.at("train_tokens_per_second").get<double>(),
              5 * m.at("train_samples_per_second").get<double>(), 0.01);
  EXPECT_EQ(m.at("train_loss").get<double>(), 2.0);  // mean(0..4)
  EXPECT_EQ(m.at("epoch").get<double>(), 2.0);       // added by Log, as HF's log() does
  ASSERT_OK_AND_ASSIGN(Metrics e, trainer->Evaluate());
  EXPECT_TRUE(e.contains("eval_mem_cpu_alloc_delta"));
  EXPECT_FALSE(e.contains("init_mem_cpu_alloc_delta"));  // reported once, with train
}

}  // namespace
}  // namespace loom::trainer
