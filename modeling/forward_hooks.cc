#include "modeling/forward_hooks.h"

namespace loom::modeling {

ForwardHookHandle ForwardHooks::Register(Hook hook) {
  const int64_t id = next_id_++;
  hooks_.emplace(id, std::move(hook));
  return ForwardHookHandle(this, id);
}

at::Tensor ForwardHooks::Run(at::Tensor output, bool training) const {
  for (const auto& [id, hook] : hooks_) output = hook(output, training);
  return output;
}

ForwardHookHandle& ForwardHookHandle::operator=(ForwardHookHandle&& other) noexcept {
  if (this != &other) {
    Remove();
    owner_ = other.owner_;
    id_ = other.id_;
    other.owner_ = nullptr;
  }
  return *this;
}

void ForwardHookHandle::Remove() {
  if (owner_ != nullptr) owner_->Remove(id_);
  owner_ = nullptr;
}

}  // namespace loom::modeling
