// Pieces transformer models share, with transformers 4.41's semantics: ACT2FN's activations,
// nn.Linear as Python calls it, and torch.finfo(dtype).min for additive attention masks.
//
// Contract:
//   - ApplyActivation(name, x) is ACT2FN[name](x) for every name in SupportedActivations()
//     ("gelu", "gelu_new", "relu", ...); the composite ones create their ops in the order
//     Python evaluates HF's expressions, so gradients round as in Python. Other names throw
//     std::invalid_argument (configs check SupportedActivations() first and return a Status).
//   - Dense(layer, x) is at::linear(x, weight, bias): one addmm as Python's nn.Linear (LibTorch
//     1.13's C++ Linear::forward adds the bias separately for 3-D inputs, which rounds
//     differently in bf16).
//   - FinfoMin(dtype) is torch.finfo(dtype).min for float, double, half and bfloat16.
//   - TorchDtypeName(dtype) is str(dtype) without "torch." (config.json's torch_dtype).
//   - NonEmbeddingParameterCount(module) is num_parameters(exclude_embeddings=True): every
//     parameter but the weights of nn.Embedding submodules (what floating_point_ops counts).
//
// Example:
//   at::Tensor h = modeling::ApplyActivation("gelu_new", modeling::Dense(wi, x));
#ifndef LOOM_MODELING_LAYERS_H_
#define LOOM_MODELING_LAYERS_H_

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <set>
#include <string>

namespace loom::modeling {

const std::set<std::string>& SupportedActivations();
at::Tensor ApplyActivation(const std::string& name, const at::Tensor& x);
at::Tensor Dense(const torch::nn::Linear& layer, const at::Tensor& x);
double FinfoMin(c10::ScalarType dtype);
// config.json's torch_dtype spelling: "float32", "float16", "bfloat16", "float64".
std::string TorchDtypeName(c10::ScalarType dtype);
int64_t NonEmbeddingParameterCount(const torch::nn::Module& module);

}  // namespace loom::modeling

#endif  // LOOM_MODELING_LAYERS_H_
