// Forward hooks for loom's modules: HF's `module.register_forward_hook(fn)` for the modules a
// model exposes (e.g. its input embeddings), since LibTorch's C++ modules have no hooks.
//
// Contract:
//   - A module that offers hooks owns a ForwardHooks and passes its output through Run() at
//     the end of its forward; Run(output, training) applies the hooks in registration order,
//     each receiving the previous one's result and the module's training flag.
//   - Register(hook) returns a handle; the hook is removed by handle.Remove() or when the
//     handle is destroyed (so a failed run never leaves a hook behind). A handle must not
//     outlive its ForwardHooks.
//   - Not thread-safe: register and remove while no forward runs.
//
// Example:
//   ForwardHooks* hooks = model.InputEmbeddings();
//   ForwardHookHandle handle = hooks->Register(
//       [](const at::Tensor& out, bool training) { return training ? out * 2 : out; });
//   ...                      // forwards pass through the hook
//   handle.Remove();         // or let it go out of scope
#ifndef LOOM_MODELING_FORWARD_HOOKS_H_
#define LOOM_MODELING_FORWARD_HOOKS_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <map>

namespace loom::modeling {

class ForwardHookHandle;

class ForwardHooks {
 public:
  using Hook = std::function<at::Tensor(const at::Tensor& output, bool training)>;

  ForwardHookHandle Register(Hook hook);
  at::Tensor Run(at::Tensor output, bool training) const;
  size_t size() const { return hooks_.size(); }

 private:
  friend class ForwardHookHandle;
  void Remove(int64_t id) { hooks_.erase(id); }

  int64_t next_id_ = 0;
  std::map<int64_t, Hook> hooks_;  // ordered by id: registration order
};

class ForwardHookHandle {
 public:
  ForwardHookHandle() = default;
  ForwardHookHandle(ForwardHookHandle&& other) noexcept { *this = std::move(other); }
  ForwardHookHandle& operator=(ForwardHookHandle&& other) noexcept;
  ForwardHookHandle(const ForwardHookHandle&) = delete;
  ForwardHookHandle& operator=(const ForwardHookHandle&) = delete;
  ~ForwardHookHandle() { Remove(); }

  void Remove();
  bool active() const { return owner_ != nullptr; }

 private:
  friend class ForwardHooks;
  ForwardHookHandle(ForwardHooks* owner, int64_t id) : owner_(owner), id_(id) {}

  ForwardHooks* owner_ = nullptr;
  int64_t id_ = -1;
};

}  // namespace loom::modeling

#endif  // LOOM_MODELING_FORWARD_HOOKS_H_
