// The model contract (transformers 4.38's Trainer docs: the model returns its loss as the first
// output when labels are given; modeling/README.md): a
// torch::nn::Module whose Forward takes a named batch and returns a ModelOutput whose loss is
// present when the batch carries the labels. Models (models/) implement it and the Trainer
// (trainer/) trains it; it depends on neither.
//
// Contract:
//   - Forward(inputs) runs the model on a Batch (field name -> tensor, data/batch.h). When all
//     of LabelNames() are present in `inputs`, the returned loss is defined (a scalar, the mean
//     over the batch); otherwise it may be undefined.
//   - ModelOutput::outputs holds the other outputs in order, "logits" first by convention
//     (HF's ModelOutput order: loss, logits, hidden states, ...).
//   - LabelNames() is HF's default label_names: the forward inputs that carry targets
//     ({"labels"} unless the model says otherwise; TrainingArguments.label_names overrides it).
//     As HF requires, none of them may be named "label".
//   - MainInputName() is the input whose numel counts tokens (include_num_input_tokens_seen).
//   - ConfigJson() is the config.json saved with the weights (none when empty).
//   - InputEmbeddingHooks() is HF's get_input_embeddings() for hooks: the forward hooks of
//     the module that maps input ids to vectors (modeling/hooked_embedding.h), null when the
//     model has none (NEFTune then refuses it).
//   - EnableGradientCheckpointing(options) / DisableGradientCheckpointing() are HF's
//     gradient_checkpointing_enable/disable: recompute activations in backward
//     (modeling/activation_checkpoint.h) while training. The default refuses with HF's
//     "<Class> does not support gradient checkpointing."
//   - FloatingPointOps(inputs) is HF's floating_point_ops: forward+backward FLOPs of one batch
//     (PreTrainedModel: 6 * non-embedding parameters * tokens). The default returns 0, as HF
//     does for plain nn.Modules.
//   - parameter_fill(): for a model built with deferred parameters (deferred_init.h), how each
//     one's values are made when it gets its bytes (its initialisation, or a checkpoint's
//     tensor): a parameter-sharding strategy materialises one wrap unit at a time through it,
//     anything else the whole model (runtime/strategy_setup.h). Empty for other models.
//
// Example:
//   class Regressor : public loom::modeling::Model {
//    public:
//     Regressor() { linear_ = register_module("linear", torch::nn::Linear(4, 1)); }
//     ModelOutput Forward(const data::Batch& in) override {
//       ModelOutput out;
//       at::Tensor pred = linear_->forward(in.at("x")).squeeze(-1);
//       if (in.count("labels")) out.loss = at::mse_loss(pred, in.at("labels"));
//       out.outputs.push_back({"logits", pred});
//       return out;
//     }
//    private:
//     torch::nn::Linear linear_{nullptr};
//   };
#ifndef LOOM_MODELING_MODEL_H_
#define LOOM_MODELING_MODEL_H_

#include <torch/nn/module.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "data/batch.h"
#include "modeling/activation_checkpoint.h"
#include "modeling/deferred_init.h"
#include "modeling/forward_hooks.h"
#include "modeling/unit_runner.h"

namespace loom::modeling {

struct ModelOutput {
  // Scalar loss; undefined when the model computed none.
  at::Tensor loss;
  // Every other output, in the model's order ("logits" first by convention).
  std::vector<std::pair<std::string, at::Tensor>> outputs;

  // The output named `name`, or an undefined tensor.
  at::Tensor Get(const std::string& name) const {
    for (const auto& [key, value] : outputs) {
      if (key == name) return value;
    }
    return at::Tensor();
  }
};

class Model : public torch::nn::Module {
 public:
  ~Model() override = default;

  virtual ModelOutput Forward(const data::Batch& inputs) = 0;

  virtual std::vector<std::string> LabelNames() const { return {"labels"}; }
  virtual std::string MainInputName() const { return "input_ids"; }
  virtual double FloatingPointOps(const data::Batch& inputs) const { return 0.0; }
  // The model's config.json text (HF PretrainedConfig), written next to its weights; empty
  // (the default, as for plain nn.Modules in HF) writes none.
  virtual std::string ConfigJson() const { return ""; }
  // generation_config.json's text for models that generate (HF's save_pretrained writes it
  // when model.can_generate()); empty (the default) writes none.
  virtual std::string GenerationConfigJson() const { return ""; }

  virtual ForwardHooks* InputEmbeddingHooks() { return nullptr; }
  // The repeating layer types a sharding strategy may wrap ("BertLayer"; unit_runner.h), and
  // the runner the model runs each of them through (nullptr: none). Models without units:
  // none listed, SetUnitRunner Unimplemented.
  virtual std::vector<std::string> UnitClassNames() const { return {}; }
  virtual absl::Status SetUnitRunner(UnitRunner* runner);
  virtual absl::Status EnableGradientCheckpointing(const CheckpointingOptions& options);
  virtual void DisableGradientCheckpointing() {}
  virtual bool IsGradientCheckpointing() const { return false; }
  // The class name without namespaces ("BertForSequenceClassification"), for messages.
  std::string ClassName() const;

  const ParameterFill& parameter_fill() const { return parameter_fill_; }
  void set_parameter_fill(ParameterFill fill) { parameter_fill_ = std::move(fill); }

 private:
  ParameterFill parameter_fill_;
};

}  // namespace loom::modeling

#endif  // LOOM_MODELING_MODEL_H_
