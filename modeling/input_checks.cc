#include "modeling/input_checks.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace loom::modeling {
namespace {

std::string Shape(const at::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

absl::Status InputError(absl::string_view model, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(model, ": ", what));
}

}  // namespace

at::Tensor Get(const data::Batch& inputs, const char* name) {
  auto it = inputs.find(name);
  return it == inputs.end() ? at::Tensor() : it->second;
}

absl::StatusOr<at::Tensor> RequireKey(const data::Batch& inputs, const char* name,
                                      absl::string_view model) {
  at::Tensor t = Get(inputs, name);
  if (t.defined()) return t;
  std::vector<std::string> keys;
  for (const auto& [k, v] : inputs) keys.push_back(k);
  return InputError(model, absl::StrCat("the batch has no \"", name, "\" (it has: ",
                                        absl::StrJoin(keys, ", "), ")"));
}

absl::Status CheckIds(const at::Tensor& t, const char* name, int64_t batch, int64_t vocab,
                      bool labels, absl::string_view model) {
  if (t.dim() != 2 || !at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
    return InputError(model, absl::StrCat(name, " must be an integer [batch, length] tensor, got ",
                                          c10::toString(t.scalar_type()), " ", Shape(t)));
  }
  if (t.size(0) != batch) {
    return InputError(model,
                      absl::StrCat(name, " has ", t.size(0), " rows but input_ids has ", batch));
  }
  if (t.numel() == 0) return absl::OkStatus();
  const at::Tensor valid = labels ? t.masked_fill(t == -100, 0) : t;
  const int64_t lo = valid.min().item<int64_t>(), hi = valid.max().item<int64_t>();
  if (lo < 0 || hi >= vocab) {
    return InputError(model, absl::StrCat(name, " values must be in [0, vocab_size = ", vocab,
                                          ")", labels ? " or -100" : "", ", got values in [", lo,
                                          ", ", hi, "]"));
  }
  return absl::OkStatus();
}

absl::Status CheckSameShape(const at::Tensor& t, const char* name, const at::Tensor& reference,
                            const char* reference_name, absl::string_view model) {
  if (t.defined() && !t.sizes().equals(reference.sizes())) {
    return InputError(model, absl::StrCat(name, " has shape ", Shape(t), " but ", reference_name,
                                          " has ", Shape(reference)));
  }
  return absl::OkStatus();
}

}  // namespace loom::modeling
