// Internals of optimizer_state.cc: one table-driven codec for the Python layout of every
// optimizer optimizer_state.h supports. Not part of the API.
//
// Each optimizer is one OptimizerLayout (optimizer_state_layouts.cc): its param_group keys in
// Python's order (each a LibTorch option, or a fixed value LibTorch has no option for) and its
// per-parameter state keys in Python's order (each a step count or a tensor with a rule for
// when it is written and read). One encoder (EncodeGroup, EncodeState) and one decoder
// (DecodeGroup, DecodeState) interpret every layout.
//
// Example:
//   using O = torch::optim::SGDOptions;
//   using S = torch::optim::SGDParamState;
//   OptimizerLayout sgd = Layout<O, S>(
//       "SGD",
//       {Option<O>("lr", [](auto& o) -> auto& { return o.lr(); }), Fixed("foreach", IValue())},
//       {Tensor<S>("momentum_buffer", Entry::kTensorOrNoState,
//                  [](auto& s) -> auto& { return s.momentum_buffer(); })});
//   GenericDict group = EncodeGroup(sgd, options);  // {"lr": 0.1, "foreach": None}
#ifndef LOOM_CHECKPOINT_OPTIMIZER_STATE_CODEC_H_
#define LOOM_CHECKPOINT_OPTIMIZER_STATE_CODEC_H_

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/optimizer_state_internal.h"

namespace loom::checkpoint::optimizer_state_internal {

// One TORCH_ARG member of an options or state class, read and written through its base class.
template <typename T, typename Base>
struct Field {
  std::function<T(const Base&)> get;
  std::function<void(Base&, T)> set;
};

// The Field of `Concrete` that `access` (a generic lambda returning the member by reference)
// reaches.
template <typename Concrete, typename Base, typename Access>
auto FieldOf(Access access) {
  using T = std::decay_t<decltype(access(std::declval<const Concrete&>()))>;
  return Field<T, Base>{
      [access](const Base& b) -> T { return access(static_cast<const Concrete&>(b)); },
      [access](Base& b, T v) { access(static_cast<Concrete&>(b)) = std::move(v); }};
}

// One param_group key. An option is written as its Python value (float, bool, a 2-tuple of
// floats, or a float or None) and read back with the same type; it has no default, as
// Optimizer.load_state_dict takes every hyperparameter from the file (a missing key is an
// error). A key LibTorch has no option for is written as `fixed` and ignored on loading.
struct GroupKey {
  using Option =
      std::variant<Field<double, OptimizerOptions>, Field<bool, OptimizerOptions>,
                   Field<Betas, OptimizerOptions>, Field<c10::optional<double>, OptimizerOptions>>;
  std::string key;
  std::optional<Option> option;
  IValue fixed;
};

// How one per-parameter state key is written and read.
enum class Entry {
  kStepFloatTensor,  // "step" as a 0-dim float32 tensor (torch >= 1.12's Adam, AdamW, Adagrad)
  kStepInt,          // "step" as a Python int
  kTensor,           // always written; required, of the parameter's shape
  kOptionalTensor,   // written when set; may be absent or None
  kTensorOrNoState,  // the parameter has state only while this is set (SGD's momentum_buffer)
  kUnfactored,       // Adafactor's second moment of a parameter of < 2 dimensions: written
                     // when set; required, of the parameter's shape, for such parameters
  kFactoredRow,      // of a parameter of >= 2 dimensions: the shape without its last dimension
  kFactoredCol,      // ... the shape without its second-to-last dimension
  kScalarOrZero,     // a 0-dim tensor when set, else the int 0 (Adafactor's RMS); required
};

struct StateKey {
  std::string key;
  Entry entry;
  Field<int64_t, OptimizerParamState> step;       // the kStep* entries
  Field<at::Tensor, OptimizerParamState> tensor;  // the others
};

struct OptimizerLayout {
  std::string name;  // in error messages
  std::function<bool(const OptimizerOptions&)> matches;
  std::vector<GroupKey> group;
  std::vector<StateKey> state;
  std::function<std::unique_ptr<OptimizerParamState>()> new_state;
};

template <typename Options, typename Access>
GroupKey Option(std::string key, Access access) {
  return GroupKey{std::move(key), FieldOf<Options, OptimizerOptions>(access), IValue()};
}
inline GroupKey Fixed(std::string key, IValue value) {
  return GroupKey{std::move(key), std::nullopt, std::move(value)};
}
template <typename State, typename Access>
StateKey Tensor(std::string key, Entry entry, Access access) {
  return StateKey{std::move(key), entry, {}, FieldOf<State, OptimizerParamState>(access)};
}
template <typename State>
StateKey Step(Entry entry) {
  return StateKey{"step",
                  entry,
                  FieldOf<State, OptimizerParamState>([](auto& s) -> auto& { return s.step(); }),
                  {}};
}
template <typename Options, typename State>
OptimizerLayout Layout(std::string name, std::vector<GroupKey> group, std::vector<StateKey> state) {
  return OptimizerLayout{
      std::move(name),
      [](const OptimizerOptions& o) { return dynamic_cast<const Options*>(&o) != nullptr; },
      std::move(group), std::move(state), [] { return std::make_unique<State>(); }};
}

// Python's param_group dict of `options`, without "params".
GenericDict EncodeGroup(const OptimizerLayout& layout, const OptimizerOptions& options);
// Reads every option of `layout` from `group` into `options` (other keys are ignored).
absl::Status DecodeGroup(const OptimizerLayout& layout, const DictView& group,
                         OptimizerOptions& options);
// Python's state dict of one parameter; nullopt when it has none to write.
std::optional<GenericDict> EncodeState(const OptimizerLayout& layout,
                                       const OptimizerParamState& state);
// The state of `param` read from `saved`; nullptr when the file gives it none.
absl::StatusOr<std::unique_ptr<OptimizerParamState>> DecodeState(const OptimizerLayout& layout,
                                                                 const DictView& saved,
                                                                 const at::Tensor& param);

// Every supported optimizer's layout, AdamW first (optimizer_state_layouts.cc).
const std::vector<OptimizerLayout>& Layouts();

}  // namespace loom::checkpoint::optimizer_state_internal

#endif  // LOOM_CHECKPOINT_OPTIMIZER_STATE_CODEC_H_
