#include "checkpoint/optimizer_state_codec.h"

#include <set>
#include <vector>

#include "base/status_macros.h"

namespace loom::checkpoint::optimizer_state_internal {
namespace {

// Python values of the option types.
IValue ToPython(double v) { return v; }
IValue ToPython(bool v) { return v; }
IValue ToPython(const Betas& b) {
  return c10::ivalue::Tuple::create({std::get<0>(b), std::get<1>(b)});
}
IValue ToPython(const c10::optional<double>& v) { return v ? IValue(*v) : IValue(); }

absl::StatusOr<double> FromPython(const DictView& d, const std::string& key, double*) {
  return d.Double(key);
}
absl::StatusOr<bool> FromPython(const DictView& d, const std::string& key, bool*) {
  return d.Bool(key);
}
absl::StatusOr<Betas> FromPython(const DictView& d, const std::string& key, Betas*) {
  return d.PairOf(key);
}
absl::StatusOr<c10::optional<double>> FromPython(const DictView& d, const std::string& key,
                                                 c10::optional<double>*) {
  return d.OptionalDouble(key);
}

IValue Cpu(const at::Tensor& t) { return t.detach().to(at::kCPU); }

// The shape `entry` requires of a state tensor of `param`; nullopt when the entry does not
// apply to `param` (Adafactor's factored and unfactored moments).
std::optional<std::vector<int64_t>> ShapeFor(Entry entry, const at::Tensor& param) {
  const at::IntArrayRef shape = param.sizes();
  const bool factored = param.dim() >= 2;
  switch (entry) {
    case Entry::kUnfactored:
      if (factored) return std::nullopt;
      break;
    case Entry::kFactoredRow:
      if (!factored) return std::nullopt;
      return shape.slice(0, shape.size() - 1).vec();
    case Entry::kFactoredCol: {
      if (!factored) return std::nullopt;
      std::vector<int64_t> col(shape.begin(), shape.end() - 2);
      col.push_back(shape.back());
      return col;
    }
    case Entry::kScalarOrZero:
      return std::vector<int64_t>{};
    default:
      break;
  }
  return shape.vec();
}

// Writes one state key into `out`; false when the parameter has no state to write.
bool EncodeStateKey(const StateKey& k, const OptimizerParamState& state, GenericDict& out) {
  switch (k.entry) {
    case Entry::kStepFloatTensor:
      out.insert(k.key, at::scalar_tensor(static_cast<double>(k.step.get(state)), at::kFloat));
      return true;
    case Entry::kStepInt:
      out.insert(k.key, k.step.get(state));
      return true;
    case Entry::kTensor:
      out.insert(k.key, Cpu(k.tensor.get(state)));
      return true;
    case Entry::kScalarOrZero: {
      const at::Tensor t = k.tensor.get(state);
      out.insert(k.key, t.defined() ? Cpu(t) : IValue(int64_t{0}));
      return true;
    }
    default: {  // written when set
      const at::Tensor t = k.tensor.get(state);
      if (t.defined()) out.insert(k.key, Cpu(t));
      return t.defined() || k.entry != Entry::kTensorOrNoState;
    }
  }
}

// Reads one state key into `state`; false when the file gives the parameter no state.
absl::StatusOr<bool> DecodeStateKey(const StateKey& k, const DictView& saved,
                                    const at::Tensor& param, OptimizerParamState& state) {
  if (k.entry == Entry::kStepFloatTensor || k.entry == Entry::kStepInt) {
    ASSIGN_OR_RETURN(const int64_t step, saved.Step(k.key));
    k.step.set(state, step);
    return true;
  }
  const std::optional<std::vector<int64_t>> shape = ShapeFor(k.entry, param);
  if (!shape.has_value()) return true;
  if (k.entry == Entry::kOptionalTensor || k.entry == Entry::kTensorOrNoState) {
    ASSIGN_OR_RETURN(std::optional<at::Tensor> t, saved.StateTensor(k.key, param, *shape));
    if (t.has_value()) k.tensor.set(state, *t);
    return t.has_value() || k.entry == Entry::kOptionalTensor;
  }
  if (k.entry == Entry::kScalarOrZero) {  // a number stands for "not computed yet"
    ASSIGN_OR_RETURN(const IValue* v, saved.Required(k.key));
    if (v->isInt() || v->isDouble()) return true;
    if (!v->isTensor()) return saved.Error(k.key, "is neither a number nor a tensor");
  }
  ASSIGN_OR_RETURN(at::Tensor t, saved.RequiredTensor(k.key, param, *shape));
  k.tensor.set(state, t);
  return true;
}

}  // namespace

GenericDict EncodeGroup(const OptimizerLayout& layout, const OptimizerOptions& options) {
  GenericDict out = NewDict();
  for (const GroupKey& k : layout.group) {
    if (!k.option.has_value()) {
      out.insert(k.key, k.fixed);
      continue;
    }
    std::visit([&](const auto& field) { out.insert(k.key, ToPython(field.get(options))); },
               *k.option);
  }
  return out;
}

absl::Status DecodeGroup(const OptimizerLayout& layout, const DictView& group,
                         OptimizerOptions& options) {
  for (const GroupKey& k : layout.group) {
    if (!k.option.has_value()) continue;
    RETURN_IF_ERROR(std::visit(
        [&](const auto& field) -> absl::Status {
          using T = std::decay_t<decltype(field.get(options))>;
          ASSIGN_OR_RETURN(T value, FromPython(group, k.key, static_cast<T*>(nullptr)));
          field.set(options, std::move(value));
          return absl::OkStatus();
        },
        *k.option));
  }
  return absl::OkStatus();
}

std::optional<GenericDict> EncodeState(const OptimizerLayout& layout,
                                       const OptimizerParamState& state) {
  GenericDict out = NewDict();
  for (const StateKey& k : layout.state) {
    if (!EncodeStateKey(k, state, out)) return std::nullopt;
  }
  return out;
}

absl::StatusOr<std::unique_ptr<OptimizerParamState>> DecodeState(const OptimizerLayout& layout,
                                                                 const DictView& saved,
                                                                 const at::Tensor& param) {
  std::set<std::string> known;
  for (const StateKey& k : layout.state) known.insert(k.key);
  RETURN_IF_ERROR(saved.OnlyKeys(known));
  std::unique_ptr<OptimizerParamState> state = layout.new_state();
  for (const StateKey& k : layout.state) {
    ASSIGN_OR_RETURN(const bool has_state, DecodeStateKey(k, saved, param, *state));
    if (!has_state) return std::unique_ptr<OptimizerParamState>();
  }
  return state;
}

}  // namespace loom::checkpoint::optimizer_state_internal
