#include "modeling/layers.h"

#include <ATen/Dispatch.h>
#include <torch/nn/modules/embedding.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "absl/strings/str_cat.h"

namespace loom::modeling {

const std::set<std::string>& SupportedActivations() {
  static const auto* names = new std::set<std::string>{
      "gelu", "gelu_python", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "quick_gelu",
      "relu", "silu",        "swish",    "tanh",      "sigmoid",           "linear"};
  return *names;
}

at::Tensor ApplyActivation(const std::string& name, const at::Tensor& x) {
  constexpr double kPi = 3.14159265358979323846;
  // The composite activations create their ops in the order Python evaluates HF's expressions
  // (left to right), so their gradients reach x in the same order (it matters in bf16).
  if (name == "gelu") return at::gelu(x);
  if (name == "gelu_python") {  // input * 0.5 * (1.0 + torch.erf(input / math.sqrt(2.0)))
    const at::Tensor half_x = x * 0.5;
    const at::Tensor erf = at::erf(x / std::sqrt(2.0));
    return half_x * (1.0 + erf);
  }
  if (name == "gelu_new") {
    // 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 *
    // torch.pow(input, 3.0))))
    const at::Tensor half_x = 0.5 * x;
    const at::Tensor cubic = 0.044715 * at::pow(x, 3.0);
    const at::Tensor inner = std::sqrt(2.0 / kPi) * (x + cubic);
    return half_x * (1.0 + at::tanh(inner));
  }
  if (name == "gelu_fast") {
    // 0.5 * input * (1.0 + torch.tanh(input * 0.7978845608 * (1.0 + 0.044715 * input * input)))
    const at::Tensor half_x = 0.5 * x;
    const at::Tensor scaled = x * 0.7978845608;
    const at::Tensor quadratic = 0.044715 * x * x;
    return half_x * (1.0 + at::tanh(scaled * (1.0 + quadratic)));
  }
  if (name == "gelu_pytorch_tanh") return at::gelu(x, "tanh");
  if (name == "quick_gelu") return x * at::sigmoid(1.702 * x);
  if (name == "relu") return at::relu(x);
  if (name == "silu" || name == "swish") return at::silu(x);
  if (name == "tanh") return at::tanh(x);
  if (name == "sigmoid") return at::sigmoid(x);
  if (name == "linear") return x;
  throw std::invalid_argument(absl::StrCat("hidden_act \"", name, "\" is not implemented"));
}

at::Tensor Dense(const torch::nn::Linear& layer, const at::Tensor& x) {
  return at::linear(x, layer->weight, layer->bias);
}

double FinfoMin(c10::ScalarType dtype) {
  double min = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "FinfoMin", [&] {
    min = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
  });
  return min;
}

std::string TorchDtypeName(c10::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    default:
      return std::string(c10::toString(type));
  }
}

int64_t NonEmbeddingParameterCount(const torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  for (const auto& m : module.modules(/*include_self=*/false)) {
    if (auto* e = m->as<torch::nn::Embedding>()) total -= e->weight.numel();
  }
  return total;
}

}  // namespace loom::modeling
