#include "modeling/activation_checkpoint.h"

#include <ATen/Context.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/types.h>

#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "precision/autocast.h"

namespace loom::modeling {
namespace {

using torch::autograd::variable_list;

// A generator's state, saved and restored under its lock.
struct GeneratorStates {
  std::vector<std::pair<at::Generator, at::Tensor>> saved;

  static GeneratorStates Capture(const std::vector<at::Tensor>& inputs) {
    GeneratorStates s;
    s.Add(at::globalContext().defaultGenerator(at::Device(at::kCPU)));
    std::vector<c10::DeviceIndex> gpus;
    for (const at::Tensor& t : inputs) {
      if (!t.defined() || !t.is_cuda()) continue;
      if (std::find(gpus.begin(), gpus.end(), t.get_device()) != gpus.end()) continue;
      gpus.push_back(t.get_device());
      s.Add(at::globalContext().defaultGenerator(t.device()));
    }
    return s;
  }

  void Add(at::Generator gen) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    saved.emplace_back(gen, gen.get_state());
  }

  void Restore() const {
    for (const auto& [gen, state] : saved) {
      at::Generator g = gen;
      std::lock_guard<std::mutex> lock(g.mutex());
      g.set_state(state);
    }
  }
};

class CheckpointBackward : public torch::autograd::Node {
 public:
  CheckpointBackward(CheckpointFn fn, std::vector<at::Tensor> inputs, std::vector<at::Tensor> params,
                     std::optional<GeneratorStates> rng, precision::AutocastState autocast)
      : fn_(std::move(fn)),
        inputs_(std::move(inputs)),
        params_(std::move(params)),
        rng_(std::move(rng)),
        autocast_(autocast) {}

  std::string name() const override { return "CheckpointBackward"; }

  variable_list apply(variable_list&& grads) override {
    TORCH_CHECK(fn_, "CheckpointBackward: backward through a checkpointed region twice "
                     "(its saved inputs are freed after the first backward)");
    std::optional<GeneratorStates> live;
    if (rng_) {
      live = GeneratorStates::Capture(inputs_);  // torch.random.fork_rng
      rng_->Restore();
    }
    std::vector<at::Tensor> detached;
    detached.reserve(inputs_.size());
    for (const at::Tensor& t : inputs_) {
      if (!t.defined()) {
        detached.push_back(t);
        continue;
      }
      at::Tensor d = t.detach();
      d.set_requires_grad(t.requires_grad());
      detached.push_back(d);
    }
    at::Tensor out;
    try {
      torch::AutoGradMode grad_on(true);
      precision::AutocastStateGuard autocast(autocast_);
      out = fn_(detached);
    } catch (...) {
      if (live) live->Restore();
      throw;
    }
    if (live) live->Restore();
    // Gradients of everything that needs one: the inputs, then the parameters (the order of
    // this node's next edges).
    std::vector<at::Tensor> wrt;
    std::vector<size_t> slot;
    const size_t n = inputs_.size() + params_.size();
    for (size_t i = 0; i < n; ++i) {
      const at::Tensor& t = i < inputs_.size() ? detached[i] : params_[i - inputs_.size()];
      if (t.defined() && t.requires_grad()) {
        wrt.push_back(t);
        slot.push_back(i);
      }
    }
    variable_list result(n);
    if (!wrt.empty() && out.requires_grad()) {
      variable_list got = torch::autograd::grad({out}, wrt, {grads[0]}, /*retain_graph=*/false,
                                                /*create_graph=*/false, /*allow_unused=*/true);
      for (size_t k = 0; k < got.size(); ++k) result[slot[k]] = got[k];
    }
    return result;
  }

  void release_variables() override {
    fn_ = nullptr;
    inputs_.clear();
    params_.clear();
  }

 private:
  CheckpointFn fn_;
  std::vector<at::Tensor> inputs_;
  std::vector<at::Tensor> params_;
  std::optional<GeneratorStates> rng_;
  precision::AutocastState autocast_;
};

}  // namespace

absl::StatusOr<CheckpointingOptions> CheckpointingOptions::FromKwargs(const std::string& text) {
  CheckpointingOptions o;
  if (text.empty()) return o;
  const nlohmann::json kwargs = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!kwargs.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gradient_checkpointing_kwargs: not a JSON object: ", text));
  }
  for (const auto& [key, value] : kwargs.items()) {
    bool* target = key == "use_reentrant"        ? &o.use_reentrant
                   : key == "preserve_rng_state" ? &o.preserve_rng_state
                                                 : nullptr;
    if (target == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--gradient_checkpointing_kwargs: unknown key \"", key,
          "\" (loom's checkpoint takes use_reentrant and preserve_rng_state)"));
    }
    if (!value.is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat("--gradient_checkpointing_kwargs: \"", key,
                                                     "\" must be true or false"));
    }
    *target = value.get<bool>();
  }
  return o;
}

at::Tensor Checkpoint(CheckpointFn fn, const std::vector<at::Tensor>& inputs,
                      const std::vector<at::Tensor>& params, const CheckpointingOptions& options) {
  bool needs_grad = false;
  if (torch::GradMode::is_enabled()) {
    for (const auto* list : {&inputs, &params}) {
      for (const at::Tensor& t : *list) needs_grad = needs_grad || (t.defined() && t.requires_grad());
    }
  }
  if (!needs_grad) return fn(inputs);
  std::optional<GeneratorStates> rng;
  if (options.preserve_rng_state) rng = GeneratorStates::Capture(inputs);
  const precision::AutocastState autocast = precision::CurrentAutocastState();
  at::Tensor out;
  {
    torch::NoGradGuard no_grad;
    out = fn(inputs);
  }
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), params.begin(), params.end());
  auto node = std::shared_ptr<CheckpointBackward>(
      new CheckpointBackward(std::move(fn), inputs, params, std::move(rng), autocast),
      torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(at::ArrayRef<at::Tensor>(all)));
  torch::autograd::set_history(out, node);
  return out;
}

}  // namespace loom::modeling
