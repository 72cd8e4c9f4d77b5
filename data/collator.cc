#include "data/collator.h"

#include <ATen/ATen.h>

#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/torch_status.h"

namespace loom::data {
namespace {

std::string ShapeString(const at::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

absl::Status CheckSameFields(const std::vector<Example>& examples) {
  if (examples.empty()) {
    return absl::InvalidArgumentError("collating an empty list of examples; batches need >= 1");
  }
  const Example& first = examples[0];
  for (size_t i = 1; i < examples.size(); ++i) {
    for (const auto& [name, unused] : examples[i]) {
      if (first.count(name) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("field '", name, "' is in example ", i,
                         " but not in example 0; every example needs the same fields"));
      }
    }
    for (const auto& [name, unused] : first) {
      if (examples[i].count(name) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("field '", name, "' is in example 0 but missing from example ", i,
                         "; every example needs the same fields"));
      }
    }
  }
  return absl::OkStatus();
}

// The field's tensors, checked to be defined and of one dtype (and, when `same_shape`, of one
// shape; otherwise of one shape after dim 0, with at least one dimension).
absl::StatusOr<std::vector<at::Tensor>> FieldTensors(const std::vector<Example>& examples,
                                                     const std::string& name, bool same_shape) {
  std::vector<at::Tensor> tensors;
  tensors.reserve(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    const at::Tensor& t = examples[i].at(name);
    if (!t.defined()) {
      return absl::InvalidArgumentError(absl::StrCat("field '", name, "' is undefined in example ",
                                                     i, "; give it a tensor or drop the field"));
    }
    if (!same_shape && t.dim() == 0) {
      return absl::InvalidArgumentError(absl::StrCat("field '", name, "' of example ", i,
                                                     " is a scalar; padded fields need a length"));
    }
    if (i > 0) {
      const at::Tensor& t0 = tensors[0];
      if (t.scalar_type() != t0.scalar_type()) {
        return absl::InvalidArgumentError(
            absl::StrCat("field '", name, "' is ", c10::toString(t0.scalar_type()),
                         " in example 0 but ", c10::toString(t.scalar_type()), " in example ", i,
                         "; give every example the same dtype"));
      }
      const bool shapes_match =
          same_shape ? t.sizes() == t0.sizes()
                     : t.dim() == t0.dim() && t.sizes().slice(1) == t0.sizes().slice(1);
      if (!shapes_match) {
        return absl::InvalidArgumentError(absl::StrCat(
            "field '", name, "' has shape ", ShapeString(t0), " in example 0 but ", ShapeString(t),
            " in example ", i,
            same_shape ? "; pad ragged fields with PaddingCollator (or its extra_pad_values)"
                       : "; only dim 0 may differ between examples"));
      }
    }
    tensors.push_back(t);
  }
  return tensors;
}

absl::StatusOr<at::Tensor> StackField(const std::vector<Example>& examples,
                                      const std::string& name) {
  ASSIGN_OR_RETURN(std::vector<at::Tensor> tensors, FieldTensors(examples, name, true));
  try {
    return at::stack(tensors);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument,
                                    absl::StrCat("stacking field '", name, "'"));
  }
}

// Right-pads every example's `name` along dim 0 to `target` with `value` and stacks them.
absl::StatusOr<at::Tensor> PadField(const std::vector<Example>& examples, const std::string& name,
                                    int64_t target, const at::Scalar& value) {
  ASSIGN_OR_RETURN(std::vector<at::Tensor> tensors, FieldTensors(examples, name, false));
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].size(0) > target) {
      return absl::InvalidArgumentError(
          absl::StrCat("field '", name, "' of example ", i, " has length ", tensors[i].size(0),
                       ", longer than the padded length ", target,
                       " of the batch's input field; it must not be longer than the input"));
    }
  }
  try {
    std::vector<int64_t> shape = {static_cast<int64_t>(tensors.size()), target};
    for (int64_t d = 1; d < tensors[0].dim(); ++d) shape.push_back(tensors[0].size(d));
    at::Tensor out = at::full(shape, value, tensors[0].options());
    for (size_t i = 0; i < tensors.size(); ++i) {
      out.select(0, static_cast<int64_t>(i)).narrow(0, 0, tensors[i].size(0)).copy_(tensors[i]);
    }
    return out;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument,
                                    absl::StrCat("padding field '", name, "'"));
  }
}

// HF moves "label" and then "label_ids" to "labels" (DataCollatorWithPadding.__call__).
void RenameLabels(Batch& batch) {
  for (const char* name : {"label", "label_ids"}) {
    auto node = batch.extract(name);
    if (!node.empty()) batch.insert_or_assign("labels", std::move(node.mapped()));
  }
}

}  // namespace

Collator::~Collator() = default;

absl::StatusOr<Batch> DefaultCollator::Collate(const std::vector<Example>& examples) const {
  RETURN_IF_ERROR(CheckSameFields(examples));
  const Example& first = examples[0];
  Batch batch;
  const auto defined = [&](const char* name) {
    auto it = first.find(name);
    return it != first.end() && it->second.defined();
  };
  if (defined("label")) {
    if (first.at("label").numel() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "field 'label' has ", first.at("label").numel(),
          " elements per example; DefaultCollator expects one label per example (name the "
          "field 'label_ids' for several)"));
    }
    ASSIGN_OR_RETURN(at::Tensor labels, StackField(examples, "label"));
    const at::ScalarType type = labels.scalar_type();
    if (!at::isIntegralType(type, /*includeBool=*/true) && !at::isFloatingType(type)) {
      return absl::InvalidArgumentError(absl::StrCat("field 'label' has dtype ",
                                                     c10::toString(type),
                                                     "; labels must be integer, bool or float"));
    }
    batch["labels"] =
        labels.reshape({labels.size(0)}).to(at::isFloatingType(type) ? at::kFloat : at::kLong);
  } else if (defined("label_ids")) {
    ASSIGN_OR_RETURN(batch["labels"], StackField(examples, "label_ids"));
  }
  for (const auto& [name, tensor] : first) {
    if (name == "label" || name == "label_ids" || !tensor.defined()) continue;
    ASSIGN_OR_RETURN(batch[name], StackField(examples, name));
  }
  return batch;
}

absl::StatusOr<Batch> PaddingCollator::Collate(const std::vector<Example>& examples) const {
  RETURN_IF_ERROR(CheckSameFields(examples));
  const PaddingCollatorOptions& o = options_;
  if (o.pad_to_multiple_of.has_value() && *o.pad_to_multiple_of < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PaddingCollator: pad_to_multiple_of must be >= 1 or unset, got ", *o.pad_to_multiple_of));
  }
  if (examples[0].count(o.model_input_name) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("PaddingCollator: the examples have no '", o.model_input_name,
                     "' field to pad; set PaddingCollatorOptions::model_input_name"));
  }
  ASSIGN_OR_RETURN(const std::vector<at::Tensor> inputs,
                   FieldTensors(examples, o.model_input_name, false));
  int64_t target = 0;
  for (const at::Tensor& t : inputs) target = std::max(target, t.size(0));
  if (o.pad_to_multiple_of.has_value() && target % *o.pad_to_multiple_of != 0) {
    target = (target / *o.pad_to_multiple_of + 1) * *o.pad_to_multiple_of;
  }

  std::vector<Example> padded_view = examples;  // maps of shared tensors; cheap
  if (o.return_attention_mask && examples[0].count("attention_mask") == 0) {
    for (size_t i = 0; i < padded_view.size(); ++i) {
      padded_view[i]["attention_mask"] = at::ones({inputs[i].size(0)}, at::kLong);
    }
  }
  std::map<std::string, at::Scalar> pad_values = {
      {o.model_input_name, o.pad_token_id},
      {"attention_mask", 0},
      {"token_type_ids", o.pad_token_type_id},
      {"special_tokens_mask", 1},
  };
  if (o.pad_labels) {
    for (const char* name : {"label", "labels", "label_ids"})
      pad_values[name] = o.label_pad_token_id;
  }
  for (const auto& [name, value] : o.extra_pad_values) pad_values[name] = value;

  Batch batch;
  for (const auto& [name, unused] : padded_view[0]) {
    auto pad = pad_values.find(name);
    if (pad != pad_values.end()) {
      ASSIGN_OR_RETURN(batch[name], PadField(padded_view, name, target, pad->second));
    } else {
      ASSIGN_OR_RETURN(batch[name], StackField(padded_view, name));
    }
  }
  RenameLabels(batch);
  return batch;
}

}  // namespace loom::data
