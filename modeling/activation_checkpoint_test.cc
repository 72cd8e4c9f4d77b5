#include "modeling/activation_checkpoint.h"

#include <torch/torch.h>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "precision/autocast.h"

namespace loom::modeling {
namespace {

using ::loom::base::testing::StatusIs;

struct Block : torch::nn::Module {
  Block() {
    fc1 = register_module("fc1", torch::nn::Linear(8, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 8));
    drop = register_module("drop", torch::nn::Dropout(0.3));
  }
  at::Tensor Forward(const at::Tensor& x, const at::Tensor& shift) {
    at::Tensor h = drop->forward(at::gelu(fc1->forward(x)));
    return fc2->forward(h) + shift;
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};
};

struct Result {
  std::vector<at::Tensor> grads;  // input, then parameters
  at::Tensor out;
  at::Tensor next_draw;  // the generator stream after backward
};

Result Train(bool checkpoint, CheckpointingOptions options = {}, bool autocast = false) {
  torch::manual_seed(7);
  auto a = std::make_shared<Block>();
  auto b = std::make_shared<Block>();
  at::Tensor x = torch::randn({4, 8}).set_requires_grad(true);
  at::Tensor shift = torch::randn({4, 8});  // an input that needs no grad
  torch::manual_seed(123);  // the dropout masks
  std::optional<precision::AutocastSpec> spec;
  if (autocast) spec = precision::AutocastSpec();
  at::Tensor out;
  {
    precision::AutocastGuard guard(spec);
    at::Tensor h = x * 2;
    for (auto& block : {a, b}) {
      if (checkpoint) {
        h = Checkpoint([block](const std::vector<at::Tensor>& in) { return block->Forward(in[0], in[1]); },
                       {h, shift}, block->parameters(), options);
      } else {
        h = block->Forward(h, shift);
      }
    }
    out = h.to(at::kFloat);
  }
  out.pow(2).sum().backward();
  Result r;
  r.out = out.detach();
  r.grads.push_back(x.grad());
  for (auto& block : {a, b}) {
    for (const at::Tensor& p : block->parameters()) r.grads.push_back(p.grad());
  }
  r.next_draw = torch::rand({3});
  return r;
}

void ExpectSame(const Result& a, const Result& b) {
  EXPECT_TRUE(torch::equal(a.out, b.out));
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(a.grads[i].defined() && b.grads[i].defined());
    EXPECT_TRUE(torch::equal(a.grads[i], b.grads[i]));  // the same ops: bit for bit
  }
  EXPECT_TRUE(torch::equal(a.next_draw, b.next_draw));
}

TEST(ActivationCheckpointTest, DropoutGradientsEqualTheUncheckpointedOnes) {
  ExpectSame(Train(false), Train(true));
}

TEST(ActivationCheckpointTest, AutocastIsReplayed) { ExpectSame(Train(false, {}, true), Train(true, {}, true)); }

TEST(ActivationCheckpointTest, WithoutRngPreservationTheMasksDiffer) {
  CheckpointingOptions no_rng;
  no_rng.preserve_rng_state = false;
  const Result plain = Train(false);
  const Result loose = Train(true, no_rng);
  EXPECT_TRUE(torch::equal(plain.out, loose.out));  // the forward is the same
  float worst = 0;
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    worst = std::max(worst, (plain.grads[i] - loose.grads[i]).abs().max().item<float>());
  }
  EXPECT_GT(worst, 1e-3);  // recomputed with other masks
}

TEST(ActivationCheckpointTest, ParametersGetGradientsWhenNoInputNeedsOne) {
  // Frozen inputs (e.g. frozen embeddings), an undefined optional input: the parameters still
  // get the gradients they get without checkpointing.
  auto block = std::make_shared<Block>();
  const at::Tensor x = torch::randn({4, 8});  // requires no grad
  auto fn = [block](const std::vector<at::Tensor>& in) {
    return block->fc2->forward(at::gelu(block->fc1->forward(in[0])));
  };
  fn({x}).pow(2).sum().backward();
  std::vector<at::Tensor> plain;
  for (const at::Tensor& p : block->parameters()) plain.push_back(p.grad().clone());
  block->zero_grad();
  Checkpoint(fn, {x, at::Tensor()}, block->parameters()).pow(2).sum().backward();
  size_t i = 0;
  for (const at::Tensor& p : block->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_TRUE(torch::equal(p.grad(), plain[i++]));
  }
}

TEST(ActivationCheckpointTest, NoGradModeJustRuns) {
  torch::NoGradGuard no_grad;
  int calls = 0;
  at::Tensor w = torch::ones({2}).set_requires_grad(true);
  at::Tensor out = Checkpoint([&](const std::vector<at::Tensor>& in) { ++calls; return in[0] * w; },
                              {torch::ones({2})}, {w});
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(out.requires_grad());
}

TEST(ActivationCheckpointTest, Kwargs) {
  ASSERT_OK_AND_ASSIGN(CheckpointingOptions d, CheckpointingOptions::FromKwargs(""));
  EXPECT_TRUE(d.preserve_rng_state);
  EXPECT_TRUE(d.use_reentrant);
  ASSERT_OK_AND_ASSIGN(CheckpointingOptions o, CheckpointingOptions::FromKwargs(
                                                   R"({"use_reentrant": false, "preserve_rng_state": false})"));
  EXPECT_FALSE(o.use_reentrant);
  EXPECT_FALSE(o.preserve_rng_state);
  EXPECT_THAT(CheckpointingOptions::FromKwargs(R"({"determinism_check": "default"})"),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("determinism_check")));
  EXPECT_THAT(CheckpointingOptions::FromKwargs(R"({"use_reentrant": 1})"),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("true or false")));
}

}  // namespace
}  // namespace loom::modeling
