// Seq2SeqTrainer on a tiny T5: predictions are generate()'s sequences padded as HF's
// prediction_step pads them, gen_kwargs precedence (call > arguments > the model's generation
// config), --generation_config, and the refusal of models that cannot generate.
#include "trainer/seq2seq_trainer.h"

#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "generation/generate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/t5/t5_for_conditional_generation.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::shared_ptr<models::t5::T5ForConditionalGeneration> TinyT5() {
  models::t5::T5Config c;
  c.vocab_size = 24;
  c.d_model = 16;
  c.d_kv = 4;
  c.d_ff = 16;
  c.num_layers = 1;
  c.num_heads = 2;
  c.relative_attention_num_buckets = 4;
  c.decoder_start_token_id = 0;
  auto model = *models::t5::T5ForConditionalGeneration::Create(c, 5);
  torch::NoGradGuard no_grad;
  model->body->shared->weight.mul_(3.0);  // less uniform choices, so eos comes at times
  return model;
}

// Five examples of source length 4 (one padded) and target length 3.
std::shared_ptr<data::TensorDataset> Data() {
  at::Tensor ids = torch::tensor({{3, 4, 5, 1}, {6, 7, 1, 0}, {8, 9, 10, 1}, {11, 12, 13, 1},
                                  {14, 15, 16, 1}}, torch::kLong);
  return *data::TensorDataset::Create({{"input_ids", ids},
                                       {"attention_mask", (ids != 0).to(torch::kLong)},
                                       {"labels", ids.narrow(1, 0, 3).clone()}});
}

TrainerOptions Options(std::shared_ptr<Model> model) {
  TrainerOptions o;
  o.model = std::move(model);
  o.args.set_output_dir(std::string(std::getenv("TEST_TMPDIR")) + "/s2s");
  o.args.set_disable_tqdm(true);
  o.args.add_report_to("none");
  o.args.set_save_strategy("no");
  o.args.set_per_device_eval_batch_size(2);
  o.args.set_predict_with_generate(true);
  return o;
}

// generate() on every example, each row padded with 0 to `width` (HF's
// _pad_tensors_to_max_len to the model's max_length).
at::Tensor Expected(models::t5::T5ForConditionalGeneration& model,
                    const modeling::GenerationConfig& config, int64_t width) {
  auto data = Data();
  at::Tensor out = torch::zeros({5, width}, torch::kLong);
  for (int64_t start = 0; start < 5; start += 2) {
    const int64_t n = std::min<int64_t>(2, 5 - start);
    at::Tensor ids = data->columns().at("input_ids").narrow(0, start, n);
    at::Tensor mask = data->columns().at("attention_mask").narrow(0, start, n);
    at::Tensor g = *generation::Generate(model, ids, mask, config);
    out.narrow(0, start, n).narrow(1, 0, g.size(1)).copy_(g);
  }
  return out;
}

TEST(Seq2SeqTrainerTest, PredictionsAreGenerateOutputsPaddedToTheModelsMaxLength) {
  auto model = TinyT5();
  model->eval();
  const modeling::GenerationConfig base = model->generation_config();
  ASSERT_OK_AND_ASSIGN(auto trainer, Seq2SeqTrainer::Create(Options(model)));
  ASSERT_OK_AND_ASSIGN(PredictionOutput p, trainer->Predict(Data()));
  ASSERT_EQ(p.predictions.size(), 1u);
  // Every batch is padded to the model's max_length 20 (generation_config default).
  EXPECT_TRUE(p.predictions[0].equal(Expected(*model, base, 20))) << p.predictions[0];
  ASSERT_EQ(p.label_ids.size(), 1u);
  at::Tensor labels = torch::zeros({5, 20}, torch::kLong);
  labels.narrow(1, 0, 3).copy_(Data()->columns().at("labels"));
  EXPECT_TRUE(p.label_ids[0].equal(labels));
  EXPECT_TRUE(p.metrics.contains("test_loss"));
  EXPECT_FALSE(model->generation_config().from_model_config);  // HF clears the flag
}

TEST(Seq2SeqTrainerTest, GenKwargsOverrideArgumentsWhichOverrideTheModel) {
  auto model = TinyT5();
  model->eval();
  TrainerOptions o = Options(model);
  o.args.set_generation_num_beams(3);
  o.args.set_generation_max_length(6);
  ASSERT_OK_AND_ASSIGN(auto trainer, Seq2SeqTrainer::Create(std::move(o)));
  modeling::GenerationConfig args_config = model->generation_config();
  args_config.num_beams = 3;
  args_config.max_length = 6;
  ASSERT_OK_AND_ASSIGN(PredictionOutput by_args, trainer->Predict(Data()));
  EXPECT_TRUE(by_args.predictions[0].equal(Expected(*model, args_config, 20)));
  modeling::GenerationConfig call_config = args_config;
  call_config.num_beams = 2;
  call_config.max_length = 20;
  call_config.max_new_tokens = 4;  // a call's max_new_tokens keeps generation_max_length out
  ASSERT_OK_AND_ASSIGN(PredictionOutput by_call,
                       trainer->PredictWithGeneration(Data(), {}, "test",
                                                      {{"num_beams", 2}, {"max_new_tokens", 4}}));
  EXPECT_TRUE(by_call.predictions[0].equal(Expected(*model, call_config, 20)));
}

TEST(Seq2SeqTrainerTest, GenerationConfigArgumentReplacesTheModels) {
  auto model = TinyT5();
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/genconf";
  std::filesystem::create_directories(dir);
  ASSERT_OK(base::WriteFileAtomically(dir + "/generation_config.json",
                                      R"({"decoder_start_token_id": 0, "eos_token_id": 1,
                                          "pad_token_id": 0, "num_beams": 2, "max_length": 7})"));
  TrainerOptions o = Options(model);
  o.args.set_generation_config(dir);
  ASSERT_OK(Seq2SeqTrainer::Create(std::move(o)).status());
  EXPECT_EQ(model->generation_config().num_beams, 2);
  EXPECT_EQ(model->generation_config().max_length, 7);
}

class NotAGenerator : public Model {
 public:
  NotAGenerator() { w_ = register_parameter("w", at::ones({1})); }
  ModelOutput Forward(const data::Batch&) override { return {}; }

 private:
  at::Tensor w_;
};

TEST(Seq2SeqTrainerTest, RefusesModelsThatCannotGenerate) {
  EXPECT_THAT(Seq2SeqTrainer::Create(Options(std::make_shared<NotAGenerator>())),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("--predict_with_generate needs a model that can generate")));
}

}  // namespace
}  // namespace loom::trainer
