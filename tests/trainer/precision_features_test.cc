// The Trainer's precision and memory features end to end on a CPU: NEFTune noise during Train
// only (within HF's bound, removed afterwards), --auto_find_batch_size on real allocation failures
// (and a resumed run starting from the checkpoint's batch size), --bf16_full_eval, and
// --gradient_checkpointing through the Trainer. (GradScaler skips: tests/resume.)
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/bert/bert_for_sequence_classification.h"
#include "tests/trainer/test_util.h"
#include "tests/trainer/tiny_model.h"
#include "trainer/neftune.h"
#include "trainer/trainer.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::StatusIs;
using models::bert::BertConfig;
using models::bert::BertForSequenceClassification;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Dir(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

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

args::TrainingArguments Args(const std::string& dir, nlohmann::ordered_json more = {}) {
  nlohmann::ordered_json values = {
      {"output_dir", dir},     {"num_train_epochs", 1}, {"per_device_train_batch_size", 4},
      {"learning_rate", 1e-2}, {"save_strategy", "no"}, {"report_to", {"none"}},
      {"disable_tqdm", true}};
  for (auto& [k, v] : more.items()) values[k] = v;
  absl::StatusOr<args::TrainingArguments> a = testing::ParseArgs(values);
  EXPECT_TRUE(a.ok()) << a.status();
  return *a;
}

// Checks, at every step, that the word embeddings' output in training mode is the clean one
// plus noise within HF's bound, and that evaluation mode sees the clean embeddings.
class NoiseProbe : public TrainerCallback {
 public:
  explicit NoiseProbe(std::shared_ptr<BertForSequenceClassification> m) : model_(std::move(m)) {}
  std::string Name() const override { return "NoiseProbe"; }
  absl::Status OnStepEnd(const Event&) override {
    torch::NoGradGuard no_grad;
    const at::Tensor ids = at::randint(1, 30, {3, 8}, at::kLong);
    auto& words = model_->bert->embeddings->word_embeddings;
    const at::Tensor clean = at::embedding(words->weight, ids);
    const bool was_training = model_->is_training();
    model_->train();
    const at::Tensor diff = words->forward(ids) - clean;
    model_->eval();
    evaluation_clean = evaluation_clean && at::equal(words->forward(ids), clean);
    if (was_training) model_->train();
    max_noise = std::max(max_noise, diff.abs().max().item<double>());
    ++steps;
    return absl::OkStatus();
  }
  std::shared_ptr<BertForSequenceClassification> model_;
  double max_noise = 0;
  bool evaluation_clean = true;
  int steps = 0;
};

TEST(PrecisionFeaturesTest, NeftuneNoiseOnlyWhileTraining) {
  ASSERT_OK_AND_ASSIGN(auto model, BertForSequenceClassification::Create(TinyBert(0.0), 3));
  auto probe = std::make_shared<NoiseProbe>(model);
  TrainerOptions o;
  o.model = model;
  o.args = Args(Dir("neftune"), {{"neftune_noise_alpha", 5.0}});
  o.train_dataset = BertData(16, 1);
  o.callbacks = {probe};
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
  ASSERT_OK(trainer->Train().status());
  EXPECT_EQ(probe->steps, 4);
  EXPECT_GT(probe->max_noise, 0.0);
  EXPECT_LE(probe->max_noise, NeftuneMagnitude(8, 16, 5.0) * (1 + 1e-6));
  EXPECT_TRUE(probe->evaluation_clean);
  // After Train() the hook is gone: the forward equals a fresh model's on the same weights.
  EXPECT_EQ(model->bert->embeddings->word_embeddings->hooks.size(), 0u);
  ASSERT_OK_AND_ASSIGN(auto twin, BertForSequenceClassification::Create(TinyBert(0.0), 99));
  {
    torch::NoGradGuard no_grad;
    auto src = model->named_parameters();
    for (auto& p : twin->named_parameters()) p.value().copy_(*src.find(p.key()));
  }
  model->train();
  twin->train();
  const data::Batch batch = {{"input_ids", at::randint(1, 30, {2, 8}, at::kLong)}};
  EXPECT_TRUE(at::equal(model->Forward(batch).Get("logits"), twin->Forward(batch).Get("logits")));
}

TEST(PrecisionFeaturesTest, NeftuneNeedsInputEmbeddings) {
  TrainerOptions o;
  o.model = std::make_shared<testing::TinyClassifier>();
  o.args = Args(Dir("neftune_tiny"), {{"neftune_noise_alpha", 5.0}});
  o.train_dataset = testing::ClassificationDataset(8, 1);
  EXPECT_THAT(Trainer::Create(std::move(o)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--neftune_noise_alpha: TinyClassifier does not expose")));
}

// Allocates a terabyte per example beyond `fits`, so a real CPU allocation fails.
class HungryClassifier : public testing::TinyClassifier {
 public:
  explicit HungryClassifier(int64_t fits) : fits_(fits) {}
  ModelOutput Forward(const data::Batch& in) override {
    const int64_t b = in.at("input_ids").size(0);
    ++calls_by_size[b];
    if (b > fits_) (void)at::empty({b << 38}, at::kFloat);  // 2^40 bytes per example
    return TinyClassifier::Forward(in);
  }
  std::map<int64_t, int> calls_by_size;

 private:
  int64_t fits_;
};

TEST(PrecisionFeaturesTest, AutoFindBatchSizeHalvesOnAllocationFailures) {
  auto model = std::make_shared<HungryClassifier>(/*fits=*/4);
  TrainerOptions o;
  o.model = model;
  o.args =
      Args(Dir("auto_bs"), {{"auto_find_batch_size", true}, {"per_device_train_batch_size", 16}});
  o.train_dataset = testing::ClassificationDataset(32, 1);
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
  ASSERT_OK_AND_ASSIGN(TrainOutput out, trainer->Train());
  EXPECT_EQ(trainer->state().train_batch_size, 4);  // 16 -> 8 -> 4
  EXPECT_EQ(out.global_step, 8);                    // 32 examples / 4
  EXPECT_EQ(model->calls_by_size[16], 1);
  EXPECT_EQ(model->calls_by_size[8], 1);
  EXPECT_EQ(model->calls_by_size[4], 8);
  // The argument itself is unchanged, and so is the next Train's starting point.
  EXPECT_EQ(trainer->args().per_device_train_batch_size(), 16);

  // Without the flag the failure is the run's error; when nothing fits, HF's message.
  TrainerOptions plain;
  plain.model = std::make_shared<HungryClassifier>(4);
  plain.args = Args(Dir("no_auto_bs"), {{"per_device_train_batch_size", 16}});
  plain.train_dataset = testing::ClassificationDataset(32, 1);
  ASSERT_OK_AND_ASSIGN(auto failing, Trainer::Create(std::move(plain)));
  // Out of memory: ResourceExhausted, naming what the model state takes on this rank.
  EXPECT_THAT(failing->Train(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("DefaultCPUAllocator: can't allocate memory"),
                             HasSubstr("data parallelism: single process; model state on this "
                                       "rank: parameters 780 B"))));
  TrainerOptions none;
  none.model = std::make_shared<HungryClassifier>(0);
  none.args = Args(Dir("nothing_fits"), {{"auto_find_batch_size", true}});
  none.train_dataset = testing::ClassificationDataset(8, 1);
  ASSERT_OK_AND_ASSIGN(auto hopeless, Trainer::Create(std::move(none)));
  EXPECT_THAT(hopeless->Train(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("No executable batch size found, reached zero.")));
}

TEST(PrecisionFeaturesTest, AResumedRunStartsFromTheCheckpointsBatchSize) {
  const std::string dir = Dir("auto_bs_resume");
  auto first = std::make_shared<HungryClassifier>(/*fits=*/4);
  TrainerOptions o;
  o.model = first;
  o.args = Args(dir, {{"auto_find_batch_size", true},
                      {"per_device_train_batch_size", 16},
                      {"save_strategy", "steps"},
                      {"save_steps", 4},
                      {"max_steps", 4}});
  o.train_dataset = testing::ClassificationDataset(32, 1);
  ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
  ASSERT_OK(trainer->Train().status());
  EXPECT_EQ(first->calls_by_size[16], 1);
  // A new run of 8 steps resumes from checkpoint-4 with its batch size 4: no attempt at 16.
  auto second = std::make_shared<HungryClassifier>(/*fits=*/4);
  TrainerOptions r;
  r.model = second;
  r.args = Args(dir, {{"auto_find_batch_size", true},
                      {"per_device_train_batch_size", 16},
                      {"save_strategy", "no"},
                      {"max_steps", 8}});
  r.train_dataset = testing::ClassificationDataset(32, 1);
  ASSERT_OK_AND_ASSIGN(auto resumed, Trainer::Create(std::move(r)));
  ASSERT_OK_AND_ASSIGN(TrainOutput out, resumed->Train(ResumeFrom::Latest()));
  EXPECT_EQ(out.global_step, 8);
  EXPECT_EQ(second->calls_by_size.count(16), 0u);
  EXPECT_EQ(second->calls_by_size.count(8), 0u);
  EXPECT_EQ(second->calls_by_size[4], 4);
  EXPECT_EQ(resumed->state().train_batch_size, 4);
}

TEST(PrecisionFeaturesTest, Bf16FullEvalCastsTheModelOutsideTraining) {
  torch::manual_seed(0);
  ASSERT_OK_AND_ASSIGN(auto model, BertForSequenceClassification::Create(TinyBert(0.0), 5));
  auto data = BertData(24, 2);
  TrainerOptions fp32;
  fp32.model = model;
  fp32.args = Args(Dir("eval32"));
  fp32.eval_dataset = data;
  ASSERT_OK_AND_ASSIGN(auto a, Trainer::Create(std::move(fp32)));
  ASSERT_OK_AND_ASSIGN(Metrics m32, a->Evaluate());
  TrainerOptions bf16;
  bf16.model = model;
  bf16.args = Args(Dir("eval16"), {{"bf16_full_eval", true}});
  bf16.eval_dataset = data;
  ASSERT_OK_AND_ASSIGN(auto b, Trainer::Create(std::move(bf16)));
  ASSERT_OK_AND_ASSIGN(Metrics m16, b->Evaluate());
  EXPECT_EQ(model->classifier->weight.scalar_type(), at::kBFloat16);  // HF casts in place
  const double l32 = m32["eval_loss"].get<double>(), l16 = m16["eval_loss"].get<double>();
  EXPECT_NE(l16, l32);
  EXPECT_NEAR(l16, l32, 2e-2 * std::abs(l32));
}

// How many nodes named `name` the autograd graph behind `root` holds.
int CountNodes(const std::shared_ptr<torch::autograd::Node>& root, const std::string& name) {
  std::vector<std::shared_ptr<torch::autograd::Node>> todo = {root};
  std::set<torch::autograd::Node*> seen;
  int count = 0;
  while (!todo.empty()) {
    auto node = todo.back();
    todo.pop_back();
    if (node == nullptr || !seen.insert(node.get()).second) continue;
    count += node->name() == name;
    for (const auto& edge : node->next_edges()) todo.push_back(edge.function);
  }
  return count;
}

TEST(PrecisionFeaturesTest, GradientCheckpointingThroughTheTrainer) {
  // Same seed, dropout on: the run with activation recomputation ends with the same weights,
  // every one of them, bit for bit (recomputation replays the dropout masks).
  std::vector<std::shared_ptr<BertForSequenceClassification>> models;
  for (bool checkpointing : {false, true}) {
    ASSERT_OK_AND_ASSIGN(auto model, BertForSequenceClassification::Create(TinyBert(0.1), 7));
    TrainerOptions o;
    o.model = model;
    o.args = Args(Dir(checkpointing ? "gc_on" : "gc_off"),
                  {{"gradient_checkpointing", checkpointing}, {"seed", 3}});
    o.train_dataset = BertData(16, 4);
    ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(std::move(o)));
    EXPECT_EQ(model->IsGradientCheckpointing(), checkpointing);
    // The training graph really goes through one recomputing node per encoder layer.
    model->train();
    const data::Batch probe = {{"input_ids", at::randint(1, 30, {2, 8}, at::kLong)},
                               {"labels", at::zeros({2}, at::kLong)}};
    EXPECT_EQ(CountNodes(model->Forward(probe).loss.grad_fn(), "CheckpointBackward"),
              checkpointing ? 2 : 0);
    ASSERT_OK(trainer->Train().status());
    models.push_back(model);
  }
  auto checkpointed = models[1]->named_parameters();
  for (const auto& p : models[0]->named_parameters()) {
    SCOPED_TRACE(p.key());
    EXPECT_TRUE(at::equal(p.value(), *checkpointed.find(p.key())));
  }
  // A model without support: HF's message.
  TrainerOptions tiny;
  tiny.model = std::make_shared<testing::TinyClassifier>();
  tiny.args = Args(Dir("gc_tiny"), {{"gradient_checkpointing", true}});
  EXPECT_THAT(Trainer::Create(std::move(tiny)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("TinyClassifier does not support gradient checkpointing.")));
}

}  // namespace
}  // namespace loom::trainer
