// Test-only models for the model contract (model.h): tests of the training loops use them so
// that what is checked is the loop, not the model.
//
// LinearRegressor(in_features): logits = Linear(in_features, 1)(x).squeeze(-1) from batch "x";
// with "labels", loss = MSE(logits, labels). Its weights come from LibTorch's default
// generator: seed it (torch::manual_seed) first for the same model in every process.
//
// LinearLayer(in, out): torch::nn::Linear(in, out) as a loom Model, for tests of what is built
// around a model (strategies, checkpoints): the same parameters ("weight", "bias"), drawn as
// LibTorch's Linear draws them (its own Linear is constructed, then its tensors registered), and
// forward(x) = x W^T + b. Its Forward(batch) reads "x" and returns "logits".
//
// Example:
//   torch::manual_seed(0);
//   auto model = std::make_shared<loom::modeling::testing::LinearRegressor>(4);
//   auto layer = std::make_shared<loom::modeling::testing::LinearLayer>(3, 2);
//   at::Tensor y = layer->forward(torch::ones({4, 3}));
#ifndef LOOM_MODELING_TESTING_MODELS_H_
#define LOOM_MODELING_TESTING_MODELS_H_

#include <torch/nn/modules/linear.h>

#include "modeling/model.h"

namespace loom::modeling::testing {

class LinearRegressor : public Model {
 public:
  explicit LinearRegressor(int64_t in_features) {
    linear_ = register_module("linear", torch::nn::Linear(in_features, 1));
  }
  ModelOutput Forward(const data::Batch& in) override {
    ModelOutput out;
    at::Tensor pred = linear_->forward(in.at("x")).squeeze(-1);
    if (in.count("labels")) out.loss = at::mse_loss(pred, in.at("labels"));
    out.outputs.push_back({"logits", pred});
    return out;
  }

 private:
  torch::nn::Linear linear_{nullptr};
};

class LinearLayer : public Model {
 public:
  LinearLayer(int64_t in_features, int64_t out_features) {
    torch::nn::Linear drawn(in_features, out_features);
    weight = register_parameter("weight", drawn->weight.detach().clone());
    bias = register_parameter("bias", drawn->bias.detach().clone());
  }
  at::Tensor forward(const at::Tensor& x) { return at::linear(x, weight, bias); }
  ModelOutput Forward(const data::Batch& in) override {
    ModelOutput out;
    out.outputs.push_back({"logits", forward(in.at("x"))});
    return out;
  }

  at::Tensor weight;
  at::Tensor bias;
};

}  // namespace loom::modeling::testing

#endif  // LOOM_MODELING_TESTING_MODELS_H_
