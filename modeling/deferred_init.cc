#include "modeling/deferred_init.h"

#include <c10/core/StorageImpl.h>

#include <exception>

#include "absl/strings/str_cat.h"
#include "base/torch_status.h"

namespace loom::modeling {
namespace {

size_t NeededBytes(const at::Tensor& t) {
  return static_cast<size_t>(t.storage_offset() + t.numel()) * t.element_size();
}

}  // namespace

bool IsDeferred(const at::Tensor& t) {
  return t.defined() && t.numel() > 0 && t.storage().nbytes() < NeededBytes(t);
}

void DeferParameters(torch::nn::Module& module) {
  for (at::Tensor& p : module.parameters(/*recurse=*/true)) {
    if (IsDeferred(p)) continue;
    c10::StorageImpl* storage = p.storage().unsafeGetStorageImpl();
    storage->set_data_ptr_noswap(at::DataPtr(nullptr, p.device()));
    storage->set_nbytes(0);
  }
}

bool AnyDeferred(const torch::nn::Module& module) {
  for (const at::Tensor& p : module.parameters(/*recurse=*/true)) {
    if (IsDeferred(p)) return true;
  }
  return false;
}

int64_t DeferredBytes(const torch::nn::Module& module) {
  int64_t bytes = 0;
  for (const at::Tensor& p : module.parameters(/*recurse=*/true)) {
    if (IsDeferred(p)) bytes += static_cast<int64_t>(NeededBytes(p));
  }
  return bytes;
}

absl::Status MaterializeParameter(const std::string& name, at::Tensor& p,
                                  const ParameterFill& fill) {
  if (!IsDeferred(p)) return absl::OkStatus();
  try {
    c10::StorageImpl* storage = p.storage().unsafeGetStorageImpl();
    const size_t nbytes = NeededBytes(p);
    storage->set_data_ptr_noswap(storage->allocator()->allocate(nbytes));
    storage->set_nbytes(nbytes);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kResourceExhausted,
                                    absl::StrCat("materialising ", name));
  }
  at::NoGradGuard no_grad;
  return fill(name, p);
}

absl::Status MaterializeParameters(torch::nn::Module& module, const std::string& prefix,
                                   const ParameterFill& fill) {
  for (auto& item : module.named_parameters(/*recurse=*/true)) {
    if (absl::Status s = MaterializeParameter(prefix + item.key(), item.value(), fill); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace loom::modeling
