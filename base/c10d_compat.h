// The c10d side of //base:torch_compat (a library of its own so that only code over c10d
// depends on c10d): the class a c10d communication backend derives from, which is
// c10d::ProcessGroup in LibTorch 1.x and c10d::Backend in 2.x (2.0 split the dispatching
// ProcessGroup from its backends). Both have the same allreduce / broadcast / allgather /
// barrier methods.
//
// Example:
//   c10::intrusive_ptr<loom::base::C10dBackend> gloo =
//       c10::make_intrusive<::c10d::ProcessGroupGloo>(store, rank, world_size, options);
//   gloo->allreduce(tensors)->wait();
#ifndef LOOM_BASE_C10D_COMPAT_H_
#define LOOM_BASE_C10D_COMPAT_H_

#include "base/torch_compat.h"

#if LOOM_TORCH_AT_LEAST(2, 0)
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace loom::base {

#if LOOM_TORCH_AT_LEAST(2, 0)
using C10dBackend = ::c10d::Backend;
#else
using C10dBackend = ::c10d::ProcessGroup;
#endif

}  // namespace loom::base

#endif  // LOOM_BASE_C10D_COMPAT_H_
