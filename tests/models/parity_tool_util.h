// What the C++ halves of the Python-reference parity tests in tests/models share: finding a
// tensor in a file's list, the elementwise tolerance check, and comparing generated ids with
// the reference's files.
//
// Contract:
//   - Find(tensors, name): the tensor or an undefined one.
//   - CompareWithin(what, got, want, tolerance): same shape and |got - want| <= tolerance
//     (1 + |want|) elementwise, else InternalError naming `what` and the worst difference.
//   - RunCase(model, inputs, outputs): `inputs`' input_ids, attention_mask and labels through
//     model.Forward in eval mode, backward of the loss; returns those inputs, the named outputs
//     (detached), "loss" and "grad.<name>" of every parameter (InternalError when a parameter
//     got no gradient).
//   - CompareGenerations(sdir, names): for each name, the "sequences" of
//     sdir/loom_check_gen_<name>.safetensors and sdir/python_gen_<name>.safetensors are equal
//     (shape and ids), else InternalError showing both.
//
// Example:
//   RETURN_IF_ERROR(CompareWithin("case 0 logits", mine, Find(ref, "logits"), 1e-6));
#ifndef LOOM_TESTS_MODELS_PARITY_TOOL_UTIL_H_
#define LOOM_TESTS_MODELS_PARITY_TOOL_UTIL_H_

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/named_tensors.h"
#include "modeling/model.h"

namespace loom::tests {

at::Tensor Find(const checkpoint::NamedTensors& tensors, const std::string& name);
absl::Status CompareWithin(const std::string& what, const at::Tensor& got, const at::Tensor& want,
                           double tolerance);
absl::StatusOr<checkpoint::NamedTensors> RunCase(modeling::Model& model,
                                                 const checkpoint::NamedTensors& inputs,
                                                 const std::vector<std::string>& outputs);
absl::Status CompareGenerations(const std::string& sdir, const std::vector<std::string>& names);

}  // namespace loom::tests

#endif  // LOOM_TESTS_MODELS_PARITY_TOOL_UTIL_H_
