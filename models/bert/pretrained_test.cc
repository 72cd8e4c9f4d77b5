#include "models/bert/pretrained.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "base/file_util.h"
#include "base/status_matchers.h"
#include "base/torch_compat.h"
#include "checkpoint/module_state.h"
#include "checkpoint/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::models::bert {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

BertConfig TinyConfig(int64_t num_labels) {
  BertConfig c;
  c.vocab_size = 40;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 37;
  c.max_position_embeddings = 16;
  c.set_num_labels(num_labels);
  return c;
}

std::string TempDir(const std::string& name) {
  std::string dir =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::shared_ptr<BertForSequenceClassification> Make(int64_t num_labels, uint64_t seed) {
  auto m = BertForSequenceClassification::Create(TinyConfig(num_labels), seed);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

at::Tensor Logits(BertForSequenceClassification& model) {
  model.eval();
  at::Tensor ids = torch::tensor({{3, 7, 11, 2}, {5, 1, 0, 0}}, at::kLong);
  at::Tensor mask = torch::tensor({{1, 1, 1, 1}, {1, 1, 0, 0}}, at::kLong);
  return model.Forward({{"input_ids", ids}, {"attention_mask", mask}}).Get("logits");
}

// Writes config.json for `model` and `tensors` as model.safetensors.
void WriteFolder(const std::string& dir, const BertForSequenceClassification& model,
                 const checkpoint::NamedTensors& tensors) {
  ASSERT_OK(base::WriteFileAtomically(dir + "/config.json", model.ConfigJson()));
  ASSERT_OK(checkpoint::SaveModelWeights(dir, tensors).status());
}

TEST(PretrainedTest, SaveThenLoadGivesTheSameModel) {
  auto model = Make(3, 1);
  const std::string dir = TempDir("roundtrip");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> files,
                       SaveBertForSequenceClassification(*model, dir));
  EXPECT_TRUE(std::filesystem::exists(dir + "/config.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(checkpoint::SafetensorsFile file,
                       checkpoint::LoadSafetensors(dir + "/model.safetensors"));
  EXPECT_EQ(file.tensors.size(), checkpoint::ModuleStateDict(*model).size());
  EXPECT_EQ(file.metadata, checkpoint::kHfSafetensorsMetadata);

  BertLoadOptions options;
  options.seed = 99;  // any seed: every weight comes from the file
  ASSERT_OK_AND_ASSIGN(LoadedBert loaded, LoadBertForSequenceClassification(dir, options));
  EXPECT_THAT(loaded.report.newly_initialized_keys, IsEmpty());
  EXPECT_THAT(loaded.report.unused_keys, IsEmpty());
  EXPECT_EQ(loaded.Report(), "");
  EXPECT_EQ(loaded.report.source, dir + "/model.safetensors");
  EXPECT_TRUE(at::equal(Logits(*loaded.model), Logits(*model)));
  EXPECT_EQ(loaded.model->config().num_labels(), 3);
}

// from_pretrained(..., attn_implementation=...) wins over config.json's "_attn_implementation",
// which wins over the default; sdpa on LibTorch < 2.1.1 is refused naming attn_implementation.
TEST(PretrainedTest, AttnImplementationFromTheOptionOrConfigJson) {
  auto model = Make(3, 1);
  const std::string dir = TempDir("attn_implementation");
  ASSERT_OK(SaveBertForSequenceClassification(*model, dir).status());
  ASSERT_OK_AND_ASSIGN(std::string text, base::ReadFile(dir + "/config.json"));
  ASSERT_OK(base::WriteFileAtomically(dir + "/config.json",
                                      "{\"_attn_implementation\": \"sdpa\"," + text.substr(1)));
  BertLoadOptions eager;
  eager.attn_implementation = AttnImplementation::kEager;
  ASSERT_OK_AND_ASSIGN(LoadedBert loaded, LoadBertForSequenceClassification(dir, eager));
  EXPECT_EQ(loaded.model->bert->attn_implementation(), AttnImplementation::kEager);
  EXPECT_EQ(loaded.model->config().attn_implementation, AttnImplementation::kEager);
  absl::StatusOr<LoadedBert> sdpa = LoadBertForSequenceClassification(dir);
  if (base::kHasScaledDotProductAttention) {
    ASSERT_OK(sdpa.status());
    EXPECT_EQ(sdpa->model->bert->attn_implementation(), AttnImplementation::kSdpa);
    EXPECT_TRUE(at::allclose(Logits(*sdpa->model), Logits(*loaded.model), 1e-5, 1e-5));
  } else {
    EXPECT_THAT(sdpa, StatusIs(absl::StatusCode::kFailedPrecondition,
                               AllOf(HasSubstr("attn_implementation=\"sdpa\""),
                                     HasSubstr("without --config=debian"))));
  }
}

TEST(PretrainedTest, TorchPickleAndShardedFoldersLoad) {
  auto model = Make(2, 2);
  const std::string bin = TempDir("bin");
  checkpoint::SaveModelWeightsOptions pickle;
  pickle.safe_serialization = false;
  ASSERT_OK(SaveBertForSequenceClassification(*model, bin, pickle).status());
  ASSERT_OK_AND_ASSIGN(LoadedBert a, LoadBertForSequenceClassification(bin));
  EXPECT_EQ(a.report.source, bin + "/pytorch_model.bin");
  EXPECT_TRUE(at::equal(Logits(*a.model), Logits(*model)));

  const std::string sharded = TempDir("sharded");
  checkpoint::SaveModelWeightsOptions shards;
  shards.max_shard_size = 20000;
  ASSERT_OK(SaveBertForSequenceClassification(*model, sharded, shards).status());
  EXPECT_TRUE(std::filesystem::exists(sharded + "/model.safetensors.index.json"));
  ASSERT_OK_AND_ASSIGN(LoadedBert b, LoadBertForSequenceClassification(sharded));
  EXPECT_TRUE(at::equal(Logits(*b.model), Logits(*model)));
}

TEST(PretrainedTest, PretrainingCheckpointGetsAFreshClassifier) {
  auto source = Make(2, 3);
  checkpoint::NamedTensors tensors;
  for (const auto& [k, t] : checkpoint::ModuleStateDict(*source)) {
    if (!absl::StartsWith(k, "classifier.")) tensors.emplace_back(k, t);
  }
  // What a BertForPreTraining file adds: heads, and in older files the position_ids buffer.
  tensors.emplace_back("cls.predictions.bias", torch::zeros({40}));
  tensors.emplace_back("cls.seq_relationship.weight", torch::zeros({2, 32}));
  tensors.emplace_back("bert.embeddings.position_ids", torch::arange(16).unsqueeze(0));
  const std::string dir = TempDir("pretraining");
  WriteFolder(dir, *source, tensors);

  BertLoadOptions options;
  options.num_labels = 5;
  options.finetuning_task = "mnli";
  ASSERT_OK_AND_ASSIGN(LoadedBert loaded, LoadBertForSequenceClassification(dir, options));
  EXPECT_THAT(loaded.report.newly_initialized_keys,
              ElementsAre("classifier.bias", "classifier.weight"));
  EXPECT_THAT(loaded.report.unused_keys,
              ElementsAre("cls.predictions.bias", "cls.seq_relationship.weight"));
  EXPECT_THAT(loaded.Report(),
              AllOf(HasSubstr("['cls.predictions.bias', 'cls.seq_relationship.weight']"),
                    HasSubstr("['classifier.bias', 'classifier.weight']"),
                    HasSubstr(dir + "/model.safetensors")));
  EXPECT_EQ(loaded.model->classifier->weight.size(0), 5);
  EXPECT_TRUE(
      at::equal(loaded.model->bert->pooler->dense->weight, source->bert->pooler->dense->weight));
  EXPECT_EQ(loaded.model->config().finetuning_task, "mnli");
  // The fresh classifier is HF's init from the seed: zero bias.
  EXPECT_TRUE(loaded.model->classifier->bias.eq(0).all().item<bool>());
  // HF's fast init: the classifier's weight takes the first draws of the seeded generator
  // (transformers 4.38 from_pretrained right after set_seed(options.seed), 42).
  at::Generator gen = at::detail::createCPUGenerator(42);
  at::Tensor want = at::empty({5, 32}).normal_(0.0, 0.02, gen);
  EXPECT_TRUE(at::equal(loaded.model->classifier->weight, want));
}

TEST(PretrainedTest, BareBertModelKeysLoadUnderBert) {
  auto source = Make(2, 4);
  checkpoint::NamedTensors tensors;
  for (const auto& [k, t] : checkpoint::ModuleStateDict(*source->bert)) tensors.emplace_back(k, t);
  ASSERT_EQ(tensors.front().first, "embeddings.word_embeddings.weight");
  const std::string dir = TempDir("bare");
  WriteFolder(dir, *source, tensors);
  ASSERT_OK_AND_ASSIGN(LoadedBert loaded, LoadBertForSequenceClassification(dir));
  EXPECT_THAT(loaded.report.newly_initialized_keys,
              ElementsAre("classifier.bias", "classifier.weight"));
  EXPECT_THAT(loaded.report.unused_keys, IsEmpty());
  EXPECT_TRUE(at::equal(loaded.model->bert->embeddings->word_embeddings->weight,
                        source->bert->embeddings->word_embeddings->weight));
}

TEST(PretrainedTest, ClassifierOfAnotherSizeIsAnErrorUnlessIgnored) {
  auto source = Make(2, 5);
  const std::string dir = TempDir("mismatch");
  ASSERT_OK(SaveBertForSequenceClassification(*source, dir).status());
  BertLoadOptions options;
  options.num_labels = 3;
  EXPECT_THAT(
      LoadBertForSequenceClassification(dir, options),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr(dir + "/model.safetensors"),
                     HasSubstr("size mismatch for classifier.weight: copying a param with shape "
                               "torch.Size([2, 32]) from checkpoint, the shape in current model "
                               "is torch.Size([3, 32])."),
                     HasSubstr("size mismatch for classifier.bias"),
                     HasSubstr("ignore_mismatched_sizes"))));
  options.ignore_mismatched_sizes = true;
  ASSERT_OK_AND_ASSIGN(LoadedBert loaded, LoadBertForSequenceClassification(dir, options));
  ASSERT_EQ(loaded.report.mismatched_keys.size(), 2u);
  EXPECT_EQ(loaded.report.mismatched_keys[0].key, "classifier.bias");
  EXPECT_EQ(loaded.report.mismatched_keys[1].key, "classifier.weight");
  EXPECT_EQ(loaded.report.mismatched_keys[1].checkpoint_shape, (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(loaded.report.mismatched_keys[1].model_shape, (std::vector<int64_t>{3, 32}));
  EXPECT_THAT(loaded.report.newly_initialized_keys, IsEmpty());
  EXPECT_THAT(loaded.Report(),
              HasSubstr("classifier.weight: torch.Size([2, 32]) in the checkpoint, "
                        "torch.Size([3, 32]) in the model"));
}

TEST(PretrainedTest, LabelOverridesAndErrors) {
  auto source = Make(2, 6);
  const std::string dir = TempDir("labels");
  ASSERT_OK(SaveBertForSequenceClassification(*source, dir).status());
  BertLoadOptions options;
  options.id2label = std::map<int64_t, std::string>{{0, "neg"}, {1, "pos"}};
  options.label2id = std::map<std::string, int64_t>{{"neg", 0}, {"pos", 1}};
  options.problem_type = "single_label_classification";
  ASSERT_OK_AND_ASSIGN(LoadedBert loaded, LoadBertForSequenceClassification(dir, options));
  EXPECT_EQ(loaded.model->config().id2label.at(1), "pos");
  EXPECT_THAT(loaded.model->ConfigJson(), HasSubstr("\"label2id\": {\n    \"neg\": 0,"));

  options.problem_type = "ranking";
  EXPECT_THAT(LoadBertForSequenceClassification(dir, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("problem_type")));
  EXPECT_THAT(LoadBertForSequenceClassification(TempDir("empty")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("config.json")));

  const std::string other = TempDir("not_bert");
  ASSERT_OK(base::WriteFileAtomically(other + "/config.json", source->ConfigJson()));
  ASSERT_OK(checkpoint::SaveModelWeights(other, {{"transformer.wte.weight", torch::zeros({2})}})
                .status());
  EXPECT_THAT(
      LoadBertForSequenceClassification(other),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr(other + "/model.safetensors"),
                                                         HasSubstr("is this a BERT checkpoint"))));
  const std::string no_weights = TempDir("no_weights");
  ASSERT_OK(base::WriteFileAtomically(no_weights + "/config.json", source->ConfigJson()));
  EXPECT_THAT(LoadBertForSequenceClassification(no_weights),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(no_weights)));
}

}  // namespace
}  // namespace loom::models::bert
