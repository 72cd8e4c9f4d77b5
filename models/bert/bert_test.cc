#include <torch/torch.h>

#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "base/status_matchers.h"
#include "base/torch_compat.h"
#include "checkpoint/module_state.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/bert/bert_for_sequence_classification.h"

namespace loom::models::bert {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kHidden = 32, kInter = 37, kVocab = 50, kMaxPos = 16, kLayers = 2;

BertConfig TinyConfig(int64_t num_labels = 3) {
  BertConfig c;
  c.vocab_size = kVocab;
  c.hidden_size = kHidden;
  c.num_hidden_layers = kLayers;
  c.num_attention_heads = 4;
  c.intermediate_size = kInter;
  c.max_position_embeddings = kMaxPos;
  c.set_num_labels(num_labels);
  return c;
}

std::shared_ptr<BertForSequenceClassification> Tiny(const BertConfig& c, uint64_t seed = 7) {
  auto model = BertForSequenceClassification::Create(c, seed);
  EXPECT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  return *model;
}

at::Tensor Ids(int64_t batch, int64_t seq, int64_t seed = 1) {
  return torch::randint(1, kVocab, {batch, seq}, at::detail::createCPUGenerator(seed), at::kLong);
}

// The state_dict() keys of HF's BertForSequenceClassification with 2 layers, in order
// (written out from modeling_bert.py's module tree; position_ids / token_type_ids are
// non-persistent buffers and not saved).
std::vector<std::string> HfKeys() {
  std::vector<std::string> keys = {
      "bert.embeddings.word_embeddings.weight",
      "bert.embeddings.position_embeddings.weight",
      "bert.embeddings.token_type_embeddings.weight",
      "bert.embeddings.LayerNorm.weight",
      "bert.embeddings.LayerNorm.bias",
  };
  for (int i = 0; i < 2; ++i) {
    const std::string p = "bert.encoder.layer." + std::to_string(i) + ".";
    for (const char* k :
         {"attention.self.query.weight", "attention.self.query.bias", "attention.self.key.weight",
          "attention.self.key.bias", "attention.self.value.weight", "attention.self.value.bias",
          "attention.output.dense.weight", "attention.output.dense.bias",
          "attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias",
          "intermediate.dense.weight", "intermediate.dense.bias", "output.dense.weight",
          "output.dense.bias", "output.LayerNorm.weight", "output.LayerNorm.bias"}) {
      keys.push_back(p + k);
    }
  }
  for (const char* k : {"bert.pooler.dense.weight", "bert.pooler.dense.bias", "classifier.weight",
                        "classifier.bias"}) {
    keys.push_back(k);
  }
  return keys;
}

TEST(BertTest, StateDictHasExactlyHfKeysAndShapes) {
  auto model = Tiny(TinyConfig());
  checkpoint::NamedTensors sd = checkpoint::ModuleStateDict(*model);
  std::vector<std::string> keys;
  for (const auto& [k, t] : sd) keys.push_back(k);
  EXPECT_EQ(keys, HfKeys());
  auto shape = [&](const std::string& k) { return checkpoint::FindTensor(sd, k)->sizes().vec(); };
  using V = std::vector<int64_t>;
  EXPECT_EQ(shape("bert.embeddings.word_embeddings.weight"), (V{kVocab, kHidden}));
  EXPECT_EQ(shape("bert.embeddings.position_embeddings.weight"), (V{kMaxPos, kHidden}));
  EXPECT_EQ(shape("bert.embeddings.token_type_embeddings.weight"), (V{2, kHidden}));
  EXPECT_EQ(shape("bert.encoder.layer.1.attention.self.key.weight"), (V{kHidden, kHidden}));
  EXPECT_EQ(shape("bert.encoder.layer.0.intermediate.dense.weight"), (V{kInter, kHidden}));
  EXPECT_EQ(shape("bert.encoder.layer.0.output.dense.weight"), (V{kHidden, kInter}));
  EXPECT_EQ(shape("bert.encoder.layer.0.output.LayerNorm.bias"), (V{kHidden}));
  EXPECT_EQ(shape("classifier.weight"), (V{3, kHidden}));
  EXPECT_EQ(shape("classifier.bias"), (V{3}));
  EXPECT_TRUE(model->named_buffers().is_empty());
}

TEST(BertTest, InitialisationFollowsHfInitWeights) {
  BertConfig c = TinyConfig();
  c.initializer_range = 0.5;
  auto model = Tiny(c, 3);
  checkpoint::NamedTensors sd = checkpoint::ModuleStateDict(*model);
  for (const auto& [k, t] : sd) {
    if (absl::EndsWith(k, "LayerNorm.weight")) {
      EXPECT_TRUE(t.eq(1).all().item<bool>()) << k;
    } else if (absl::EndsWith(k, ".bias")) {
      EXPECT_TRUE(t.eq(0).all().item<bool>()) << k;
    }
  }
  at::Tensor word = model->bert->embeddings->word_embeddings->weight;
  EXPECT_TRUE(word[0].eq(0).all().item<bool>());  // pad_token_id 0
  at::Tensor rest = word.slice(0, 1);
  EXPECT_NEAR(rest.std().item<double>(), 0.5, 0.05);
  EXPECT_NEAR(rest.mean().item<double>(), 0.0, 0.05);
  // Same seed, same weights; another seed, other weights.
  auto same = Tiny(c, 3), other = Tiny(c, 4);
  EXPECT_TRUE(at::equal(same->classifier->weight, model->classifier->weight));
  EXPECT_FALSE(at::equal(other->classifier->weight, model->classifier->weight));
}

// Cross entropy, MSE and BCE-with-logits written from their definitions.
double ManualCrossEntropy(const at::Tensor& logits, const at::Tensor& labels) {
  at::Tensor lse = logits.exp().sum(1).log();
  return (lse - logits.gather(1, labels.unsqueeze(1)).squeeze(1)).mean().item<double>();
}

TEST(BertTest, SingleLabelLossIsCrossEntropyAndProblemTypeIsRecorded) {
  auto model = Tiny(TinyConfig(3));
  at::Tensor labels = torch::tensor({0, 2, 1, 2}, at::kLong);
  ASSERT_OK_AND_ASSIGN(modeling::ModelOutput out,
                       model->TryForward({{"input_ids", Ids(4, 6)}, {"labels", labels}}));
  at::Tensor logits = out.Get("logits");
  EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{4, 3}));
  EXPECT_NEAR(out.loss.item<double>(), ManualCrossEntropy(logits.to(at::kDouble), labels), 1e-6);
  EXPECT_EQ(model->config().problem_type, "single_label_classification");
  EXPECT_THAT(model->ConfigJson(), HasSubstr("\"problem_type\": \"single_label_classification\""));
  // Ignored labels (-100) do not count, as in CrossEntropyLoss.
  ASSERT_OK_AND_ASSIGN(
      modeling::ModelOutput masked,
      model->TryForward({{"input_ids", Ids(4, 6)}, {"labels", torch::tensor({0, -100, 1, -100})}}));
  EXPECT_NEAR(masked.loss.item<double>(),
              ManualCrossEntropy(logits.index({torch::tensor({0, 2})}).to(at::kDouble),
                                 torch::tensor({0, 1})),
              1e-6);
}

TEST(BertTest, RegressionLossIsMseOnSqueezedLogits) {
  auto model = Tiny(TinyConfig(1));
  at::Tensor labels = torch::tensor({0.5, -1.0, 2.0}, at::kFloat);
  ASSERT_OK_AND_ASSIGN(modeling::ModelOutput out,
                       model->TryForward({{"input_ids", Ids(3, 5)}, {"labels", labels}}));
  at::Tensor logits = out.Get("logits");
  EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{3, 1}));
  const double expected = (logits.squeeze(1) - labels).pow(2).mean().item<double>();
  EXPECT_NEAR(out.loss.item<double>(), expected, 1e-6);
  EXPECT_EQ(model->config().problem_type, "regression");
}

TEST(BertTest, FloatLabelsWithSeveralLabelsAreMultiLabel) {
  auto model = Tiny(TinyConfig(4));
  at::Tensor labels = torch::tensor({{1.0, 0.0, 1.0, 0.0}, {0.0, 0.0, 0.0, 1.0}});
  ASSERT_OK_AND_ASSIGN(modeling::ModelOutput out,
                       model->TryForward({{"input_ids", Ids(2, 7)}, {"labels", labels}}));
  at::Tensor x = out.Get("logits").to(at::kDouble), y = labels.to(at::kDouble);
  const double expected =
      (x.clamp_min(0) - x * y + (1 + (-x.abs()).exp()).log()).mean().item<double>();
  EXPECT_NEAR(out.loss.item<double>(), expected, 1e-6);
  EXPECT_EQ(model->config().problem_type, "multi_label_classification");
}

TEST(BertTest, ExplicitProblemTypeWins) {
  BertConfig c = TinyConfig(2);
  ASSERT_OK(c.set_problem_type("regression"));
  auto model = Tiny(c);
  at::Tensor labels = torch::tensor({{0.1, 0.2}, {0.3, -0.4}});
  ASSERT_OK_AND_ASSIGN(modeling::ModelOutput out,
                       model->TryForward({{"input_ids", Ids(2, 4)}, {"labels", labels}}));
  EXPECT_NEAR(out.loss.item<double>(), (out.Get("logits") - labels).pow(2).mean().item<double>(),
              1e-6);
}

TEST(BertTest, PaddedPositionsDoNotChangeTheLogits) {
  auto model = Tiny(TinyConfig());
  at::Tensor short_ids = Ids(1, 5, 11);
  ASSERT_OK_AND_ASSIGN(modeling::ModelOutput alone, model->TryForward({{"input_ids", short_ids}}));
  for (int64_t seed : {12, 13}) {
    at::Tensor padded = torch::cat({short_ids, Ids(1, 4, seed)}, 1);  // junk after the text
    at::Tensor mask =
        torch::cat({torch::ones({1, 5}, at::kLong), torch::zeros({1, 4}, at::kLong)}, 1);
    ASSERT_OK_AND_ASSIGN(modeling::ModelOutput out,
                         model->TryForward({{"input_ids", padded}, {"attention_mask", mask}}));
    EXPECT_TRUE(at::allclose(out.Get("logits"), alone.Get("logits"), 1e-5, 1e-6))
        << out.Get("logits") << alone.Get("logits");
  }
  // Without the mask the junk does change them.
  at::Tensor padded = torch::cat({short_ids, Ids(1, 4, 12)}, 1);
  ASSERT_OK_AND_ASSIGN(modeling::ModelOutput unmasked, model->TryForward({{"input_ids", padded}}));
  EXPECT_FALSE(at::allclose(unmasked.Get("logits"), alone.Get("logits"), 1e-5, 1e-6));
}

TEST(BertTest, DefaultsEqualExplicitInputs) {
  auto model = Tiny(TinyConfig());
  at::Tensor ids = Ids(2, 6);
  ASSERT_OK_AND_ASSIGN(modeling::ModelOutput plain, model->TryForward({{"input_ids", ids}}));
  ASSERT_OK_AND_ASSIGN(modeling::ModelOutput explicit_inputs,
                       model->TryForward({{"input_ids", ids},
                                          {"attention_mask", torch::ones({2, 6}, at::kLong)},
                                          {"token_type_ids", torch::zeros({2, 6}, at::kLong)},
                                          {"position_ids", torch::arange(6).unsqueeze(0)}}));
  EXPECT_TRUE(at::equal(plain.Get("logits"), explicit_inputs.Get("logits")));
  ASSERT_OK_AND_ASSIGN(
      modeling::ModelOutput typed,
      model->TryForward({{"input_ids", ids}, {"token_type_ids", torch::ones({2, 6}, at::kLong)}}));
  EXPECT_FALSE(at::equal(plain.Get("logits"), typed.Get("logits")));
}

// Two eval() forwards of `c`'s model are equal and two train() forwards differ (dropout draws).
void ExpectDropoutOnlyInTraining(const BertConfig& c) {
  auto model = Tiny(c);
  at::Tensor ids = Ids(2, 6);
  at::Tensor a = model->Forward({{"input_ids", ids}}).Get("logits");
  EXPECT_TRUE(at::equal(a, model->Forward({{"input_ids", ids}}).Get("logits")));
  model->train();
  EXPECT_FALSE(at::equal(model->Forward({{"input_ids", ids}}).Get("logits"),
                         model->Forward({{"input_ids", ids}}).Get("logits")));
}

TEST(BertTest, DropoutFollowsTrainAndEvalMode) {
  BertConfig c = TinyConfig();
  c.hidden_dropout_prob = 0.5;
  ExpectDropoutOnlyInTraining(c);
}

TEST(BertTest, PaddingRowGetsNoGradient) {
  auto model = Tiny(TinyConfig());
  at::Tensor ids = torch::tensor({{5, 9, 0, 0}}, at::kLong);
  model->Forward({{"input_ids", ids}, {"labels", torch::tensor({1})}}).loss.backward();
  at::Tensor grad = model->bert->embeddings->word_embeddings->weight.grad();
  EXPECT_TRUE(grad[0].eq(0).all().item<bool>());
  EXPECT_FALSE(grad[5].eq(0).all().item<bool>());
}

TEST(BertTest, FloatingPointOpsExcludeEmbeddings) {
  auto model = Tiny(TinyConfig(3));
  const int64_t h = kHidden, i = kInter;
  const int64_t per_layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h;
  const int64_t non_embedding = 2 * h + kLayers * per_layer + (h * h + h) + (h * 3 + 3);
  EXPECT_DOUBLE_EQ(model->FloatingPointOps({{"input_ids", Ids(4, 6)}}),
                   6.0 * 24 * static_cast<double>(non_embedding));
  EXPECT_EQ(model->FloatingPointOps({{"x", Ids(4, 6)}}), 0.0);
}

TEST(BertTest, ConfigJsonNamesTheArchitectureAndDtype) {
  auto model = Tiny(TinyConfig());
  const std::string json = model->ConfigJson();
  EXPECT_THAT(json, HasSubstr("\"architectures\": [\n    \"BertForSequenceClassification\"\n  ]"));
  EXPECT_THAT(json, HasSubstr("\"torch_dtype\": \"float32\""));
  EXPECT_THAT(json, HasSubstr("\"model_type\": \"bert\""));
  ASSERT_OK_AND_ASSIGN(BertConfig back, BertConfig::FromJson(json, "config.json"));
  EXPECT_EQ(back.num_labels(), 3);
  EXPECT_EQ(back.hidden_size, kHidden);
}

TEST(BertTest, BadInputsAreErrorsNotCrashes) {
  auto model = Tiny(TinyConfig(3));
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(model->TryForward({{"attention_mask", Ids(1, 3)}}),
              StatusIs(kInvalid, AllOf(HasSubstr("input_ids"), HasSubstr("attention_mask"))));
  EXPECT_THAT(model->TryForward({{"input_ids", torch::ones({3})}}),
              StatusIs(kInvalid, HasSubstr("[batch, sequence]")));
  EXPECT_THAT(model->TryForward({{"input_ids", torch::full({1, 3}, kVocab, at::kLong)}}),
              StatusIs(kInvalid, HasSubstr("vocab_size = 50")));
  EXPECT_THAT(model->TryForward({{"input_ids", Ids(1, kMaxPos + 1)}}),
              StatusIs(kInvalid, HasSubstr("max_position_embeddings = 16")));
  EXPECT_THAT(model->TryForward({{"input_ids", Ids(2, 3)}, {"attention_mask", Ids(2, 4)}}),
              StatusIs(kInvalid, HasSubstr("attention_mask has shape [2, 4]")));
  EXPECT_THAT(
      model->TryForward({{"input_ids", Ids(2, 3)}, {"token_type_ids", torch::full({2, 3}, 2)}}),
      StatusIs(kInvalid, HasSubstr("type_vocab_size = 2")));
  EXPECT_THAT(model->TryForward({{"input_ids", Ids(2, 3)}, {"position_ids", Ids(2, 2)}}),
              StatusIs(kInvalid, HasSubstr("position_ids")));
  EXPECT_THAT(model->TryForward({{"input_ids", Ids(2, 3)}, {"labels", torch::tensor({0, 3})}}),
              StatusIs(kInvalid, HasSubstr("num_labels = 3")));
  EXPECT_THAT(model->TryForward({{"input_ids", Ids(2, 3)}, {"labels", torch::tensor({0, 1, 2})}}),
              StatusIs(kInvalid, HasSubstr("one integer label per example")));
  EXPECT_THAT(model->TryForward({{"input_ids", Ids(2, 3)}, {"labels", torch::ones({2, 2})}}),
              StatusIs(kInvalid, HasSubstr("multi_label_classification")));
  EXPECT_THROW(model->Forward({{"input_ids", torch::ones({3})}}), std::invalid_argument);
  BertConfig bad = TinyConfig();
  bad.num_attention_heads = 5;
  EXPECT_THAT(BertForSequenceClassification::Create(bad, 0),
              StatusIs(kInvalid, HasSubstr("num_attention_heads")));
}

TEST(BertTest, ActivationsMatchTheirFormulas) {
  at::Tensor x = torch::linspace(-3, 3, 13, at::kDouble);
  const double pi = 3.14159265358979323846;
  EXPECT_TRUE(
      at::allclose(ApplyActivation("gelu", x), 0.5 * x * (1 + torch::erf(x / std::sqrt(2.0)))));
  EXPECT_TRUE(
      at::allclose(ApplyActivation("gelu_new", x),
                   0.5 * x * (1 + torch::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x)))));
  EXPECT_TRUE(
      at::allclose(ApplyActivation("gelu_pytorch_tanh", x), ApplyActivation("gelu_new", x)));
  EXPECT_TRUE(at::allclose(ApplyActivation("relu", x), x.clamp_min(0)));
  EXPECT_TRUE(at::allclose(ApplyActivation("silu", x), x / (1 + (-x).exp())));
  EXPECT_THROW(ApplyActivation("mish", x), std::invalid_argument);
}

// The wrap-unit hook point (modeling/unit_runner.h): every BertLayer, in order, runs through
// the installed runner — with and without gradient checkpointing — and the results and
// gradients are those of a run without one.
struct UnitRecorder : modeling::UnitRunner {
  at::Tensor Run(torch::nn::Module& unit, const std::function<at::Tensor()>& forward) override {
    units.push_back(&unit);
    return forward();
  }
  std::vector<const torch::nn::Module*> units;
};

TEST(BertTest, EachLayerRunsThroughTheUnitRunner) {
  auto model = Tiny(TinyConfig());
  EXPECT_EQ(model->UnitClassNames(), std::vector<std::string>{"BertLayer"});
  ASSERT_OK_AND_ASSIGN(std::vector<modeling::FoundUnit> found,
                       modeling::FindUnits(*model, model->UnitClassNames()));
  ASSERT_EQ(found.size(), static_cast<size_t>(kLayers));
  EXPECT_EQ(found[1].name, "bert.encoder.layer.1");
  const at::Tensor labels = torch::tensor({0, 2});
  for (bool checkpointing : {false, true}) {
    model->train();
    if (checkpointing) {
      ASSERT_OK(model->EnableGradientCheckpointing({}));
    }
    torch::manual_seed(3);
    ASSERT_OK_AND_ASSIGN(modeling::ModelOutput plain,
                         model->TryForward({{"input_ids", Ids(2, 5)}, {"labels", labels}}));
    plain.loss.backward();
    std::vector<at::Tensor> plain_grads;
    for (const at::Tensor& p : model->parameters()) plain_grads.push_back(p.grad().clone());
    model->zero_grad();
    UnitRecorder recorder;
    ASSERT_OK(model->SetUnitRunner(&recorder));
    torch::manual_seed(3);
    ASSERT_OK_AND_ASSIGN(modeling::ModelOutput run,
                         model->TryForward({{"input_ids", Ids(2, 5)}, {"labels", labels}}));
    run.loss.backward();
    ASSERT_OK(model->SetUnitRunner(nullptr));
    EXPECT_TRUE(at::equal(run.loss, plain.loss));
    ASSERT_EQ(recorder.units.size(), static_cast<size_t>(kLayers));
    for (int i = 0; i < kLayers; ++i) EXPECT_EQ(recorder.units[i], found[i].module.get());
    size_t k = 0;
    for (const at::Tensor& p : model->parameters()) {
      EXPECT_TRUE(at::equal(p.grad(), plain_grads[k++])) << "checkpointing " << checkpointing;
    }
    model->zero_grad();
    model->DisableGradientCheckpointing();
  }
}

// transformers 4.41 `_autoset_attn_implementation`: sdpa by default where torch has it, eager
// otherwise; an explicit request is kept (or refused, below).
TEST(BertAttnImplementationTest, DefaultIsSdpaExactlyWhereLibTorchHasIt) {
  const AttnImplementation expected =
      base::kHasScaledDotProductAttention ? AttnImplementation::kSdpa : AttnImplementation::kEager;
  EXPECT_THAT(ResolveAttnImplementation(std::nullopt), IsOkAndHolds(expected));
  EXPECT_THAT(ResolveAttnImplementation(AttnImplementation::kEager),
              IsOkAndHolds(AttnImplementation::kEager));
  auto model = Tiny(TinyConfig());
  EXPECT_EQ(model->config().attn_implementation, expected);
  EXPECT_EQ(model->bert->attn_implementation(), expected);
  // The resolved value is never saved (to_dict drops it).
  EXPECT_THAT(model->ConfigJson(), Not(HasSubstr("attn_implementation")));
  BertConfig eager = TinyConfig();
  eager.attn_implementation = AttnImplementation::kEager;
  EXPECT_EQ(Tiny(eager)->bert->attn_implementation(), AttnImplementation::kEager);
}

// transformers 4.41 `_prepare_4d_attention_mask_for_sdpa`.
TEST(BertAttnImplementationTest, SdpaMaskIsNoneForAllOnesElseExpandedMinimum) {
  EXPECT_FALSE(SdpaAttentionMask(torch::ones({2, 5}, at::kLong), at::kFloat).defined());
  at::Tensor mask = torch::tensor({{1, 1, 1}, {1, 1, 0}}, at::kLong);
  at::Tensor sdpa = SdpaAttentionMask(mask, at::kFloat);
  ASSERT_EQ(sdpa.sizes(), (at::IntArrayRef{2, 1, 3, 3}));
  EXPECT_EQ(sdpa.scalar_type(), at::kFloat);
  at::Tensor expected = ExtendedAttentionMask(mask, at::kFloat).expand({2, 1, 3, 3});
  EXPECT_TRUE(at::equal(sdpa, expected)) << sdpa;
  EXPECT_EQ(sdpa[1][0][2][2].item<float>(), std::numeric_limits<float>::lowest());
  EXPECT_EQ(SdpaAttentionMask(mask, at::kBFloat16).scalar_type(), at::kBFloat16);
}

// LibTorch >= 2.1.1: the sdpa model computes what the eager one does (within 1e-5 in fp32),
// with a padding mask and without, outputs and gradients. Older LibTorch: an explicit sdpa
// request is refused, naming attn_implementation and the build to use.
TEST(BertAttnImplementationTest, SdpaMatchesEagerOrIsRefused) {
  BertConfig eager_config = TinyConfig();
  eager_config.attn_implementation = AttnImplementation::kEager;
  BertConfig sdpa_config = TinyConfig();
  sdpa_config.attn_implementation = AttnImplementation::kSdpa;
  if (!base::kHasScaledDotProductAttention) {
    const auto refused =
        AllOf(HasSubstr("attn_implementation=\"sdpa\""), HasSubstr("LibTorch >= 2.1.1"),
              HasSubstr("without --config=debian"), HasSubstr(base::kLibTorchVersion));
    EXPECT_THAT(BertForSequenceClassification::Create(sdpa_config, 7),
                StatusIs(absl::StatusCode::kFailedPrecondition, refused));
    EXPECT_THAT(ResolveAttnImplementation(AttnImplementation::kSdpa),
                StatusIs(absl::StatusCode::kFailedPrecondition, refused));
    EXPECT_THROW(BertModel{sdpa_config}, std::invalid_argument);
    return;
  }
  auto eager = Tiny(eager_config, 7);
  auto sdpa = Tiny(sdpa_config, 7);
  ASSERT_EQ(sdpa->bert->attn_implementation(), AttnImplementation::kSdpa);
  at::Tensor ids = Ids(3, 7, 5);
  at::Tensor padding = torch::tensor(
      {{1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 0, 0, 0}, {1, 1, 0, 0, 0, 0, 0}}, at::kLong);
  for (const bool masked : {true, false}) {
    SCOPED_TRACE(masked ? "padding mask" : "no mask");
    data::Batch batch = {{"input_ids", ids}, {"labels", torch::tensor({0, 2, 1})}};
    if (masked) batch["attention_mask"] = padding;
    eager->zero_grad();
    sdpa->zero_grad();
    modeling::ModelOutput a = eager->Forward(batch);
    modeling::ModelOutput b = sdpa->Forward(batch);
    EXPECT_LE((a.Get("logits") - b.Get("logits")).abs().max().item<double>(), 1e-5);
    EXPECT_LE((a.loss - b.loss).abs().item<double>(), 1e-5);
    a.loss.backward();
    b.loss.backward();
    const auto eager_params = eager->named_parameters();
    for (const auto& item : sdpa->named_parameters()) {
      const at::Tensor& want = eager_params[item.key()].grad();
      EXPECT_LE((item.value().grad() - want).abs().max().item<double>(), 1e-5) << item.key();
    }
  }
}

// BertSdpaSelfAttention passes dropout_p = attention_probs_dropout_prob only in training.
TEST(BertAttnImplementationTest, SdpaAttentionDropoutOnlyInTraining) {
  if (!base::kHasScaledDotProductAttention) {
    EXPECT_THAT(ResolveAttnImplementation(std::nullopt), IsOkAndHolds(AttnImplementation::kEager));
    return;
  }
  BertConfig c = TinyConfig();
  c.attn_implementation = AttnImplementation::kSdpa;
  c.hidden_dropout_prob = 0.0;
  c.attention_probs_dropout_prob = 0.5;
  ExpectDropoutOnlyInTraining(c);
}

}  // namespace
}  // namespace loom::models::bert
