// Internals of optimizer_state.cc: a checked view of one Python dict of a state dict, whose
// errors say where in the state dict a value is. Not part of the API.
//
// Example:
//   const DictView group(dict, "param_groups[0]");
//   ASSIGN_OR_RETURN(const double lr, group.Double("lr"));  // 'param_groups[0]["lr"] is missing'
#ifndef LOOM_CHECKPOINT_OPTIMIZER_STATE_INTERNAL_H_
#define LOOM_CHECKPOINT_OPTIMIZER_STATE_INTERNAL_H_

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/optim/optimizer.h>

#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace loom::checkpoint::optimizer_state_internal {

using c10::IValue;
using c10::impl::GenericDict;
using torch::optim::OptimizerOptions;
using torch::optim::OptimizerParamState;
using Betas = std::tuple<double, double>;

inline GenericDict NewDict() { return GenericDict(c10::StringType::get(), c10::AnyType::get()); }

// Read access to one Python dict of the state dict, with errors that say where it is.
class DictView {
 public:
  DictView(GenericDict dict, std::string where)
      : dict_(std::move(dict)), where_(std::move(where)) {}

  const std::string& where() const { return where_; }
  bool Has(const std::string& key) const { return dict_.find(key) != dict_.end(); }
  const IValue* Find(const std::string& key) const {
    auto it = dict_.find(key);
    return it == dict_.end() ? nullptr : &it->value();
  }
  absl::Status Error(const std::string& key, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(where_, "[\"", key, "\"] ", what));
  }
  absl::StatusOr<const IValue*> Required(const std::string& key) const {
    const IValue* v = Find(key);
    if (v == nullptr) return Error(key, "is missing");
    return v;
  }
  absl::StatusOr<double> Double(const std::string& key) const {
    ASSIGN_OR_RETURN(const IValue* v, Required(key));
    if (v->isDouble()) return v->toDouble();
    if (v->isInt()) return static_cast<double>(v->toInt());
    return Error(key, absl::StrCat("is a ", v->tagKind(), ", not a number"));
  }
  absl::StatusOr<c10::optional<double>> OptionalDouble(const std::string& key) const {
    ASSIGN_OR_RETURN(const IValue* v, Required(key));
    if (v->isNone()) return c10::optional<double>();
    ASSIGN_OR_RETURN(double d, Double(key));
    return c10::optional<double>(d);
  }
  absl::StatusOr<bool> Bool(const std::string& key) const {
    ASSIGN_OR_RETURN(const IValue* v, Required(key));
    if (!v->isBool()) return Error(key, absl::StrCat("is a ", v->tagKind(), ", not a bool"));
    return v->toBool();
  }
  absl::StatusOr<Betas> PairOf(const std::string& key) const {
    ASSIGN_OR_RETURN(const IValue* v, Required(key));
    std::vector<IValue> items;
    if (v->isTuple()) items = v->toTupleRef().elements().vec();
    if (v->isList()) items = v->toListRef().vec();
    if (items.size() != 2 || !(items[0].isDouble() || items[0].isInt()) ||
        !(items[1].isDouble() || items[1].isInt())) {
      return Error(key, "is not a pair of numbers");
    }
    auto num = [](const IValue& x) { return x.isDouble() ? x.toDouble() : double(x.toInt()); };
    return Betas(num(items[0]), num(items[1]));
  }
  absl::StatusOr<int64_t> Step(const std::string& key) const {
    ASSIGN_OR_RETURN(const IValue* v, Required(key));
    double step = -1;
    if (v->isInt()) step = static_cast<double>(v->toInt());
    if (v->isDouble()) step = v->toDouble();
    if (v->isTensor() && v->toTensor().numel() == 1) step = v->toTensor().item<double>();
    if (!(step >= 0) || step != std::floor(step) || step > 9.0e15) {
      return Error(key, "is not a step count (a non-negative integer, or a tensor holding one)");
    }
    return static_cast<int64_t>(step);
  }
  // The tensor under `key` on `param`'s device (floating point cast to its dtype), which must
  // have `shape`; nullopt when the key is absent or None.
  absl::StatusOr<std::optional<at::Tensor>> StateTensor(const std::string& key,
                                                        const at::Tensor& param,
                                                        at::IntArrayRef shape) const {
    const IValue* v = Find(key);
    if (v == nullptr || v->isNone()) return std::optional<at::Tensor>();
    if (!v->isTensor()) return Error(key, absl::StrCat("is a ", v->tagKind(), ", not a tensor"));
    at::Tensor t = v->toTensor();
    if (t.sizes() != shape) {
      return Error(key, absl::StrCat("has shape [", absl::StrJoin(t.sizes(), ", "), "] where [",
                                     absl::StrJoin(shape, ", "), "] is needed"));
    }
    if (t.is_floating_point() && param.is_floating_point()) t = t.to(param.scalar_type());
    return std::optional<at::Tensor>(t.to(param.device()));
  }
  absl::StatusOr<at::Tensor> RequiredTensor(const std::string& key, const at::Tensor& param,
                                            at::IntArrayRef shape) const {
    ASSIGN_OR_RETURN(std::optional<at::Tensor> t, StateTensor(key, param, shape));
    if (!t.has_value()) return Error(key, "is missing");
    return *t;
  }
  absl::Status OnlyKeys(const std::set<std::string>& allowed) const {
    for (const auto& entry : dict_) {
      const std::string key = entry.key().isString() ? entry.key().toStringRef() : "?";
      if (allowed.count(key) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            where_, " has key \"", key, "\", which LibTorch's optimizer cannot use (known: ",
            absl::StrJoin(allowed, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

 private:
  GenericDict dict_;
  std::string where_;
};

}  // namespace loom::checkpoint::optimizer_state_internal

#endif  // LOOM_CHECKPOINT_OPTIMIZER_STATE_INTERNAL_H_
