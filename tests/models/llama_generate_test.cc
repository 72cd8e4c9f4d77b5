#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "base/status_matchers.h"
#include "generation/generate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/llama/llama_for_causal_lm.h"
#include "models/llama/llama_testing.h"

// GenerateCausal (//generation) driving loom's LlamaForCausalLM (//models/llama): greedy search
// with and without the cache and with left padding, seeded sampling, bad prompts. Lives here
// because generation and models sit side by side and neither depends on the other.
namespace loom::models::llama {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

LlamaConfig Tiny(bool tied = false, int64_t kv_heads = 2) { return TinyLlamaConfig(tied, kv_heads); }

std::shared_ptr<LlamaForCausalLM> Model(const LlamaConfig& c, uint64_t seed = 3) {
  return TinyLlama(c, seed);
}

TEST(LlamaGenerateTest, GreedyGenerationWithAndWithoutCacheAndLeftPaddingAgree) {
  auto model = Model(Tiny());
  model->eval();
  modeling::GenerationConfig g = model->generation_config();
  g.max_new_tokens = 6;
  g.eos_token_id = {};
  const at::Tensor prompt = Ids({5, 6, 7}, 1);
  ASSERT_OK_AND_ASSIGN(at::Tensor cached, generation::GenerateCausal(*model, prompt, {}, g));
  EXPECT_EQ(cached.sizes(), (std::vector<int64_t>{1, 9}));
  EXPECT_TRUE(at::equal(cached.narrow(1, 0, 3), prompt));
  g.use_cache = false;
  ASSERT_OK_AND_ASSIGN(at::Tensor uncached, generation::GenerateCausal(*model, prompt, {}, g));
  EXPECT_TRUE(at::equal(cached, uncached));
  g.use_cache = true;
  // The same prompt left-padded next to a longer one generates the same continuation.
  const at::Tensor batch = Ids({0, 0, 5, 6, 7, 9, 8, 7, 6, 5}, 2);
  const at::Tensor mask = Ids({0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, 2);
  ASSERT_OK_AND_ASSIGN(at::Tensor padded, generation::GenerateCausal(*model, batch, mask, g));
  EXPECT_TRUE(at::equal(padded[0].narrow(0, 5, 6), cached[0].narrow(0, 3, 6)));
  // Without a mask the padding is inferred from the pad token (0, not an eos).
  ASSERT_OK_AND_ASSIGN(at::Tensor inferred, generation::GenerateCausal(*model, batch, {}, g));
  EXPECT_TRUE(at::equal(inferred, padded));
}

TEST(LlamaGenerateTest, SamplingIsReproducibleWithASeededGenerator) {
  auto model = Model(Tiny());
  model->eval();
  modeling::GenerationConfig g = model->generation_config();
  g.max_new_tokens = 8;
  g.eos_token_id = {};
  g.do_sample = true;
  g.num_return_sequences = 3;
  const at::Tensor prompt = Ids({5, 6, 7}, 1);
  auto draw = [&](uint64_t seed) {
    generation::GenerateOptions options;
    options.generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    auto out = generation::GenerateCausal(*model, prompt, {}, g, options);
    EXPECT_TRUE(out.ok()) << out.status();
    return *out;
  };
  const at::Tensor a = draw(1), b = draw(1), c = draw(2);
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{3, 11}));
  EXPECT_TRUE(at::equal(a, b));
  EXPECT_FALSE(at::equal(a, c));
  // top_k 1 leaves one candidate: sampling is greedy search then.
  g.top_k = 1;
  g.num_return_sequences = 1;
  const at::Tensor sampled = draw(3);
  g.do_sample = false;
  ASSERT_OK_AND_ASSIGN(at::Tensor greedy, generation::GenerateCausal(*model, prompt, {}, g));
  EXPECT_TRUE(at::equal(sampled, greedy));
}

// HF's synced_gpus: a rank that finished keeps running the model (with nothing new to feed, a
// cache-less pass) until no rank generates; its sequences are those of a plain run.
TEST(LlamaGenerateTest, AFinishedSyncedRankKeepsStepping) {
  auto model = Model(Tiny());
  model->eval();
  modeling::GenerationConfig g = model->generation_config();
  g.max_new_tokens = 4;
  g.eos_token_id = {};
  const at::Tensor prompt = Ids({5, 6, 7}, 1);
  ASSERT_OK_AND_ASSIGN(at::Tensor plain, generation::GenerateCausal(*model, prompt, {}, g));
  int calls = 0, idle = 3;
  generation::GenerateOptions options;
  options.any_rank_unfinished = [&](bool finished) -> absl::StatusOr<bool> {
    ++calls;
    return !finished || idle-- > 0;
  };
  ASSERT_OK_AND_ASSIGN(at::Tensor synced,
                       generation::GenerateCausal(*model, prompt, {}, g, options));
  EXPECT_TRUE(at::equal(plain, synced));
  EXPECT_EQ(calls, 4 + 3 + 1);  // 4 tokens, 3 idle steps, the last answer "no rank left"
}

TEST(LlamaGenerateTest, AnEmptyPromptIsRefused) {
  auto model = Model(Tiny());
  EXPECT_THAT(generation::GenerateCausal(*model, Ids({}, 1), {}, model->generation_config()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least one token")));
  modeling::GenerationConfig beam_sample = model->generation_config();
  beam_sample.do_sample = true;
  beam_sample.num_beams = 2;
  EXPECT_THAT(generation::GenerateCausal(*model, Ids({1}, 1), {}, beam_sample),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("beam-search multinomial")));
}

}  // namespace
}  // namespace loom::models::llama
