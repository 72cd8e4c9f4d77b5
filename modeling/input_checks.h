// The batch checks a language model runs before its forward, so that bad input is a Status
// naming the model and the field rather than an ATen error deep in an embedding or a loss.
//
// Contract (every error is InvalidArgument "<model>: <what>"):
//   - Get(batch, name): the tensor or an undefined one.
//   - RequireKey(batch, name, model): the tensor; an error listing the batch's keys when absent.
//   - CheckIds(t, name, batch, vocab, labels, model): `t` is a 2-D integer tensor with `batch`
//     rows whose values lie in [0, vocab) (or are -100 when `labels`).
//   - CheckSameShape(t, name, reference, reference_name, model): undefined `t` passes;
//     otherwise its shape must be the reference's.
//
// Example:
//   ASSIGN_OR_RETURN(at::Tensor ids, RequireKey(inputs, "input_ids", "LlamaForCausalLM"));
//   RETURN_IF_ERROR(CheckIds(ids, "input_ids", ids.size(0), vocab, false, "LlamaForCausalLM"));
#ifndef LOOM_MODELING_INPUT_CHECKS_H_
#define LOOM_MODELING_INPUT_CHECKS_H_

#include <ATen/ATen.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/batch.h"

namespace loom::modeling {

at::Tensor Get(const data::Batch& inputs, const char* name);
absl::StatusOr<at::Tensor> RequireKey(const data::Batch& inputs, const char* name,
                                      absl::string_view model);
absl::Status CheckIds(const at::Tensor& t, const char* name, int64_t batch, int64_t vocab,
                      bool labels, absl::string_view model);
absl::Status CheckSameShape(const at::Tensor& t, const char* name, const at::Tensor& reference,
                            const char* reference_name, absl::string_view model);

}  // namespace loom::modeling

#endif  // LOOM_MODELING_INPUT_CHECKS_H_
