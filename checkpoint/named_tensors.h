// NamedTensors: an ordered list of (name, tensor) pairs, the C++ shape of a state dict
// (Python's OrderedDict[str, Tensor]) that every checkpoint format in this package reads and
// writes. Order is kept as given; names are expected to be unique (writers check).
//
// Example:
//   NamedTensors sd = {{"linear.weight", w}, {"linear.bias", b}};
//   if (const at::Tensor* t = FindTensor(sd, "linear.bias")) { ... }
#ifndef LOOM_CHECKPOINT_NAMED_TENSORS_H_
#define LOOM_CHECKPOINT_NAMED_TENSORS_H_

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace loom::checkpoint {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// The tensor called `name`, or nullptr. Linear in the number of tensors.
inline const at::Tensor* FindTensor(const NamedTensors& tensors, absl::string_view name) {
  for (const auto& [n, t] : tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_NAMED_TENSORS_H_
