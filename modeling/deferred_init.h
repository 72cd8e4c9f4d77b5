// Deferred parameters: a model built with its parameters' shapes but without their bytes, so
// that a rank never holds the whole model — what DeepSpeed's zero.Init and FSDP's meta-device
// construction give Python users. A parameter is deferred when its storage holds fewer bytes
// than its elements need (FSDP's _free_storage state); a sharding strategy materialises one
// wrap unit at a time into a full buffer, keeps its shard and frees the buffer again.
//
// Contract:
//   - DeferParameters(module): every parameter of `module` (recursively) keeps its shape, dtype
//     and identity (the same tensor objects: optimizers and unit lists see them) but its
//     storage is emptied; their memory returns to the allocator. Idempotent.
//   - IsDeferred(t): t's storage holds fewer bytes than t needs.
//   - AnyDeferred(module): some parameter of `module` is deferred.
//   - MaterializeParameters(module, prefix, fill): every deferred parameter gets fresh storage
//     of its size and fill(qualified name, tensor) writes its values (`prefix` + the
//     parameter's name in `module`); the first error stops and is returned. An allocation
//     that fails (e.g. past LOOM_CPU_MEMORY_LIMIT) is ResourceExhausted naming the parameter.
//     MaterializeParameter(name, p, fill) does the same for one tensor (a no-op when p is not
//     deferred).
//   - DeferredBytes(module): the bytes the deferred parameters of `module` will take.
//   - ParameterFill: how a model provides a parameter's values by name (its initialisation, or
//     a checkpoint's tensor).
//
// Example:
//   DeferParameters(*layer);                                // construction: shapes only
//   RETURN_IF_ERROR(MaterializeParameters(*layer, "model.layers.3.", fill));  // one unit
#ifndef LOOM_MODELING_DEFERRED_INIT_H_
#define LOOM_MODELING_DEFERRED_INIT_H_

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace loom::modeling {

using ParameterFill = std::function<absl::Status(const std::string& name, at::Tensor& dest)>;

void DeferParameters(torch::nn::Module& module);
bool IsDeferred(const at::Tensor& t);
bool AnyDeferred(const torch::nn::Module& module);
absl::Status MaterializeParameters(torch::nn::Module& module, const std::string& prefix,
                                   const ParameterFill& fill);
absl::Status MaterializeParameter(const std::string& name, at::Tensor& p,
                                  const ParameterFill& fill);
int64_t DeferredBytes(const torch::nn::Module& module);

}  // namespace loom::modeling

#endif  // LOOM_MODELING_DEFERRED_INIT_H_
