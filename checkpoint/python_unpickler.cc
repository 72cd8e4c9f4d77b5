// One file on purpose (~1070 lines): the pickle machine's opcodes, its allowlist of Python
// globals and its bounds checks are one state machine whose invariants (stack kinds, memo,
// storage sharing) must be read together. Run() dispatches each opcode to its family
// (StackOp, ScalarOp, ContainerOp, MemoOp, ObjectOp), each a short switch.
#include "checkpoint/python_unpickler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/ivalue_cycles.h"

namespace loom::checkpoint {
namespace {

constexpr char kClassKey[] = "__class__";
// The deepest nesting of containers a pickle may build (ivalue_cycles.h says why it matters).
constexpr size_t kMaxNesting = 100;
constexpr char kZeroStageEnum[] = "deepspeed.runtime.zero.config.ZeroStageEnum";
constexpr std::pair<const char*, int> kZeroStages[] = {
    {"disabled", 0}, {"optimizer_states", 1}, {"gradients", 2}, {"weights", 3}, {"max_stage", 4}};
// Objects DeepSpeed pickles into its checkpoints that hold plain attributes only.
const std::string kDeepSpeedObjects[] = {
    "deepspeed.runtime.fp16.loss_scaler.LossScaler",
    "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler",
    "deepspeed.utils.tensor_fragment.fragment_address",
};

// UnpickleOptions::hf_training_arguments: the classes in training_args.bin, as transformers
// 4.38-4.41's Trainer pickles its TrainingArguments (NEWOBJ + BUILD) and loom writes them.
const std::string kHfObjects[] = {
    "transformers.training_args.TrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
    "transformers.trainer_pt_utils.AcceleratorConfig",
    "accelerate.state.PartialState",  // TrainingArguments.distributed_state
};
// Their Enum classes and members (name, value), from transformers 4.38.2 and 4.41.2 and
// accelerate 0.27.2.
struct EnumClass {
  const char* cls;
  std::vector<std::pair<const char*, const char*>> members;
};
const std::vector<EnumClass>& HfEnums() {
  static const auto* enums = new std::vector<EnumClass>{
      {"transformers.trainer_utils.IntervalStrategy",
       {{"NO", "no"}, {"STEPS", "steps"}, {"EPOCH", "epoch"}}},
      {"transformers.trainer_utils.SchedulerType",
       {{"LINEAR", "linear"},
        {"COSINE", "cosine"},
        {"COSINE_WITH_RESTARTS", "cosine_with_restarts"},
        {"POLYNOMIAL", "polynomial"},
        {"CONSTANT", "constant"},
        {"CONSTANT_WITH_WARMUP", "constant_with_warmup"},
        {"INVERSE_SQRT", "inverse_sqrt"},
        {"REDUCE_ON_PLATEAU", "reduce_lr_on_plateau"},
        {"COSINE_WITH_MIN_LR", "cosine_with_min_lr"},
        {"WARMUP_STABLE_DECAY", "warmup_stable_decay"}}},
      {"transformers.trainer_utils.HubStrategy",
       {{"END", "end"},
        {"EVERY_SAVE", "every_save"},
        {"CHECKPOINT", "checkpoint"},
        {"ALL_CHECKPOINTS", "all_checkpoints"}}},
      {"transformers.trainer_utils.FSDPOption",
       {{"FULL_SHARD", "full_shard"},
        {"SHARD_GRAD_OP", "shard_grad_op"},
        {"NO_SHARD", "no_shard"},
        {"HYBRID_SHARD", "hybrid_shard"},
        {"HYBRID_SHARD_ZERO2", "hybrid_shard_zero2"},
        {"OFFLOAD", "offload"},
        {"AUTO_WRAP", "auto_wrap"}}},
      {"transformers.debug_utils.DebugOption",
       {{"UNDERFLOW_OVERFLOW", "underflow_overflow"}, {"TPU_METRICS_DEBUG", "tpu_metrics_debug"}}},
      {"transformers.training_args.OptimizerNames",
       {{"ADAMW_HF", "adamw_hf"},
        {"ADAMW_TORCH", "adamw_torch"},
        {"ADAMW_TORCH_FUSED", "adamw_torch_fused"},
        {"ADAMW_TORCH_XLA", "adamw_torch_xla"},
        {"ADAMW_TORCH_NPU_FUSED", "adamw_torch_npu_fused"},
        {"ADAMW_APEX_FUSED", "adamw_apex_fused"},
        {"ADAFACTOR", "adafactor"},
        {"ADAMW_ANYPRECISION", "adamw_anyprecision"},
        {"SGD", "sgd"},
        {"ADAGRAD", "adagrad"},
        {"ADAMW_BNB", "adamw_bnb_8bit"},
        {"ADAMW_8BIT", "adamw_8bit"},
        {"LION_8BIT", "lion_8bit"},
        {"LION", "lion_32bit"},
        {"PAGED_ADAMW", "paged_adamw_32bit"},
        {"PAGED_ADAMW_8BIT", "paged_adamw_8bit"},
        {"PAGED_LION", "paged_lion_32bit"},
        {"PAGED_LION_8BIT", "paged_lion_8bit"},
        {"RMSPROP", "rmsprop"},
        {"RMSPROP_BNB", "rmsprop_bnb"},
        {"RMSPROP_8BIT", "rmsprop_bnb_8bit"},
        {"RMSPROP_32BIT", "rmsprop_bnb_32bit"},
        {"GALORE_ADAMW", "galore_adamw"},
        {"GALORE_ADAMW_8BIT", "galore_adamw_8bit"},
        {"GALORE_ADAFACTOR", "galore_adafactor"},
        {"GALORE_ADAMW_LAYERWISE", "galore_adamw_layerwise"},
        {"GALORE_ADAMW_8BIT_LAYERWISE", "galore_adamw_8bit_layerwise"},
        {"GALORE_ADAFACTOR_LAYERWISE", "galore_adafactor_layerwise"}}},
      {"accelerate.utils.dataclasses.DistributedType",
       {{"NO", "NO"},
        {"MULTI_CPU", "MULTI_CPU"},
        {"MULTI_GPU", "MULTI_GPU"},
        {"MULTI_NPU", "MULTI_NPU"},
        {"MULTI_XPU", "MULTI_XPU"},
        {"DEEPSPEED", "DEEPSPEED"},
        {"FSDP", "FSDP"},
        {"TPU", "TPU"},
        {"MEGATRON_LM", "MEGATRON_LM"}}},
  };
  return *enums;
}

constexpr char kNdarray[] = "numpy.ndarray";
constexpr char kDtype[] = "numpy.dtype";
// numpy's array rebuilder: numpy 1.x's module path, and numpy 2's.
const std::string kNumpyReconstruct[] = {
    "numpy.core.multiarray._reconstruct",
    "numpy._core.multiarray._reconstruct",
};

using c10::IValue;

absl::Status PickleError(size_t at, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("pickle byte ", at, ": ", what));
}

const std::map<std::string, c10::ScalarType>& StorageTypes() {
  static const auto* types = new std::map<std::string, c10::ScalarType>{
      {"torch.DoubleStorage", c10::ScalarType::Double},
      {"torch.FloatStorage", c10::ScalarType::Float},
      {"torch.HalfStorage", c10::ScalarType::Half},
      {"torch.BFloat16Storage", c10::ScalarType::BFloat16},
      {"torch.LongStorage", c10::ScalarType::Long},
      {"torch.IntStorage", c10::ScalarType::Int},
      {"torch.ShortStorage", c10::ScalarType::Short},
      {"torch.CharStorage", c10::ScalarType::Char},
      {"torch.ByteStorage", c10::ScalarType::Byte},
      {"torch.BoolStorage", c10::ScalarType::Bool},
  };
  return *types;
}

// A stack or memo entry: a value, a MARK, or a global (a Python callable or class, by name).
struct Item {
  enum class Kind { kValue, kMark, kGlobal };
  Kind kind = Kind::kValue;
  IValue value;
  std::string global;  // "module.name"
};

class Machine {
 public:
  Machine(absl::string_view pickle, const StorageLoader& load_storage,
          const UnpickleOptions& options)
      : in_(pickle), load_storage_(load_storage), options_(options) {}

  absl::StatusOr<IValue> Run();
  // Every value the stack and the memo still hold, and every container the program changed
  // after making it (only those can close a cycle, which may no longer be reachable from the
  // stack or memo): the roots of the cycle check.
  std::vector<IValue> HeldValues() const {
    std::vector<IValue> out = mutated_;
    for (const Item& item : stack_) out.push_back(item.value);
    for (const auto& [index, item] : memo_) out.push_back(item.value);
    return out;
  }

 private:
  // The opcode families Run() dispatches to: true when `op` was theirs and ran.
  absl::StatusOr<bool> StackOp(unsigned char op);
  absl::StatusOr<bool> ScalarOp(unsigned char op);
  absl::StatusOr<bool> ContainerOp(unsigned char op);
  absl::StatusOr<bool> MemoOp(unsigned char op);
  absl::StatusOr<bool> ObjectOp(unsigned char op);

  absl::StatusOr<absl::string_view> Take(uint64_t n) {
    if (n > in_.size() - pos_) return PickleError(op_at_, "the pickle ends inside an opcode");
    absl::string_view out = in_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  template <typename T>
  absl::StatusOr<T> TakeLe() {  // little-endian integer
    ASSIGN_OR_RETURN(absl::string_view b, Take(sizeof(T)));
    T v;
    std::memcpy(&v, b.data(), sizeof(T));
    return v;
  }
  absl::StatusOr<std::string> TakeLine() {
    const size_t nl = in_.find('\n', pos_);
    if (nl == absl::string_view::npos) return PickleError(pos_, "unterminated text argument");
    std::string line(in_.substr(pos_, nl - pos_));
    pos_ = nl + 1;
    return line;
  }
  absl::StatusOr<Item> Pop() {
    if (stack_.empty()) return PickleError(op_at_, "stack underflow");
    Item top = std::move(stack_.back());
    stack_.pop_back();
    return top;
  }
  absl::StatusOr<IValue> PopValue() {
    ASSIGN_OR_RETURN(Item item, Pop());
    if (item.kind != Item::Kind::kValue) return Unsupported(item, "as a value");
    return std::move(item.value);
  }
  // The values above the topmost MARK, which is removed.
  absl::StatusOr<std::vector<IValue>> PopToMark() {
    size_t mark = stack_.size();
    while (mark > 0 && stack_[mark - 1].kind != Item::Kind::kMark) --mark;
    if (mark == 0) return PickleError(op_at_, "no MARK on the stack");
    std::vector<IValue> values;
    for (size_t i = mark; i < stack_.size(); ++i) {
      if (stack_[i].kind != Item::Kind::kValue) return Unsupported(stack_[i], "as a value");
      values.push_back(std::move(stack_[i].value));
    }
    stack_.resize(mark - 1);
    return values;
  }
  absl::Status Unsupported(const Item& item, absl::string_view use) {
    return PickleError(op_at_, absl::StrCat(item.kind == Item::Kind::kMark
                                                ? std::string("a MARK")
                                                : absl::StrCat("the Python object ", item.global),
                                            " cannot be used ", use));
  }
  absl::Status Push(IValue v) {
    stack_.push_back(Item{Item::Kind::kValue, std::move(v), {}});
    return absl::OkStatus();
  }
  absl::Status Memoize(uint64_t index) {
    if (stack_.empty()) return PickleError(op_at_, "memoizing with an empty stack");
    memo_[index] = stack_.back();
    return absl::OkStatus();
  }
  absl::Status Get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) return PickleError(op_at_, absl::StrCat("memo ", index, " is unset"));
    stack_.push_back(it->second);
    return absl::OkStatus();
  }
  absl::Status SetItems(std::vector<IValue> items) {
    if (items.size() % 2 != 0) return PickleError(op_at_, "an odd number of dict items");
    if (stack_.empty() || stack_.back().kind != Item::Kind::kValue ||
        !stack_.back().value.isGenericDict()) {
      return PickleError(op_at_, "SETITEM(S) on something that is not a dict");
    }
    NoteMutated(stack_.back().value);
    c10::impl::GenericDict dict = stack_.back().value.toGenericDict();
    for (size_t i = 0; i < items.size(); i += 2) {
      const IValue& key = items[i];
      if (!(key.isInt() || key.isString() || key.isDouble() || key.isBool() || key.isTensor())) {
        return PickleError(op_at_, absl::StrCat("a dict key of type ", key.tagKind()));
      }
      dict.insert_or_assign(key, std::move(items[i + 1]));
    }
    return absl::OkStatus();
  }
  absl::Status Append(std::vector<IValue> items) {
    if (stack_.empty() || stack_.back().kind != Item::Kind::kValue ||
        !stack_.back().value.isList()) {
      return PickleError(op_at_, "APPEND(S) on something that is not a list");
    }
    NoteMutated(stack_.back().value);
    c10::List<IValue> list = stack_.back().value.toList();
    for (IValue& v : items) list.push_back(std::move(v));
    return absl::OkStatus();
  }
  void NoteMutated(const IValue& container) {
    if (!container.isPtrType()) return;
    if (mutated_ids_.insert(container.internalToPointer()).second) mutated_.push_back(container);
  }
  absl::Status Global(std::string module, std::string name) {
    stack_.push_back(Item{Item::Kind::kGlobal, IValue(), absl::StrCat(module, ".", name)});
    return absl::OkStatus();
  }
  absl::Status Reduce();
  absl::StatusOr<bool> ReduceNumpy(const std::string& f, const std::vector<IValue>& args);
  absl::StatusOr<bool> ReduceHfEnum(const std::string& f, const std::vector<IValue>& args);
  absl::Status BuildNumpy(c10::impl::GenericDict target, const std::string& cls,
                          const IValue& state);
  absl::Status PersistentLoad();
  absl::Status PushLong(int length_bytes);
  absl::Status PushBinFloat();
  absl::Status PushString(unsigned char op);
  absl::Status PushTuple(unsigned char op);
  absl::Status StackGlobal();
  absl::Status NewObject();
  absl::Status Build();
  absl::StatusOr<IValue> RebuildTensor(const std::vector<IValue>& args);

  absl::string_view in_;
  const StorageLoader& load_storage_;
  const UnpickleOptions options_;
  size_t pos_ = 0;
  size_t op_at_ = 0;
  std::vector<Item> stack_;
  std::unordered_map<uint64_t, Item> memo_;
  std::vector<IValue> mutated_;                  // see HeldValues
  std::unordered_set<const void*> mutated_ids_;  // their identities, each kept once
  std::map<std::string, at::Tensor> storages_;
};

IValue NewDict() { return c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get()); }
IValue NewList() { return c10::impl::GenericList(c10::AnyType::get()); }

absl::StatusOr<std::vector<int64_t>> IntTuple(const IValue& v, absl::string_view what) {
  if (!v.isTuple()) return absl::InvalidArgumentError(absl::StrCat(what, " is not a tuple"));
  std::vector<int64_t> out;
  for (const IValue& e : v.toTupleRef().elements()) {
    if (!e.isInt() || e.toInt() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, " holds a non-integer or negative"));
    }
    out.push_back(e.toInt());
  }
  return out;
}

absl::StatusOr<IValue> Machine::RebuildTensor(const std::vector<IValue>& args) {
  // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  if (args.size() < 5 || !args[0].isTensor() || !args[1].isInt() || !args[4].isBool()) {
    return PickleError(op_at_, "_rebuild_tensor_v2 with unexpected arguments");
  }
  const at::Tensor& storage = args[0].toTensor();
  const int64_t offset = args[1].toInt();
  ASSIGN_OR_RETURN(std::vector<int64_t> size, IntTuple(args[2], "a tensor's size"));
  ASSIGN_OR_RETURN(std::vector<int64_t> stride, IntTuple(args[3], "a tensor's stride"));
  if (size.size() != stride.size() || offset < 0) {
    return PickleError(op_at_, "a tensor's size, stride or offset is malformed");
  }
  // The last element the view touches must lie inside the storage; no count may overflow.
  bool empty = false;
  int64_t last = offset;
  int64_t numel = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == 0) {
      empty = true;
      continue;
    }
    int64_t reach = 0;
    if (__builtin_mul_overflow(size[i] - 1, stride[i], &reach) ||
        __builtin_add_overflow(last, reach, &last) ||
        __builtin_mul_overflow(numel, size[i], &numel)) {
      return PickleError(op_at_, "a tensor's size and stride overflow 64 bits");
    }
  }
  if (!empty && last >= storage.numel()) {
    return PickleError(op_at_, absl::StrCat("a tensor view reaches element ", last,
                                            " of a storage of ", storage.numel()));
  }
  at::Tensor t =
      empty ? at::empty(size, storage.options()) : storage.as_strided(size, stride, offset);
  if (args[4].toBool() && t.is_floating_point()) t.set_requires_grad(true);
  return IValue(t);
}

absl::Status Machine::Reduce() {
  ASSIGN_OR_RETURN(IValue args_value, PopValue());
  ASSIGN_OR_RETURN(Item callable, Pop());
  if (callable.kind != Item::Kind::kGlobal) return Unsupported(callable, "as a callable");
  if (!args_value.isTuple()) return PickleError(op_at_, "REDUCE arguments are not a tuple");
  const std::vector<IValue> args = args_value.toTupleRef().elements().vec();
  const std::string& f = callable.global;
  if (options_.numpy_arrays) {
    ASSIGN_OR_RETURN(bool handled, ReduceNumpy(f, args));
    if (handled) return absl::OkStatus();
  }
  if (options_.hf_training_arguments) {
    ASSIGN_OR_RETURN(bool handled, ReduceHfEnum(f, args));
    if (handled) return absl::OkStatus();
  }
  if (f == "collections.OrderedDict" && args.empty()) return Push(NewDict());
  if (f == "torch._utils._rebuild_tensor_v2") {
    ASSIGN_OR_RETURN(IValue t, RebuildTensor(args));
    return Push(std::move(t));
  }
  if (f == "torch._utils._rebuild_parameter" && !args.empty() && args[0].isTensor()) {
    return Push(args[0]);
  }
  if (f == "torch.Size" && args.size() == 1 && args[0].isTuple()) return Push(args[0]);
  // What LibTorch's own pickler (torch::pickle_save) adds around typed containers: a type tag
  // on dicts and lists (restore_type_tag(obj, "Dict[str, Any]")) and builders of typed lists.
  if (f == "torch.jit._pickle.restore_type_tag" && args.size() == 2 && args[1].isString() &&
      (args[0].isGenericDict() || args[0].isList())) {
    return Push(args[0]);
  }
  if ((f == "torch.jit._pickle.build_intlist" || f == "torch.jit._pickle.build_doublelist" ||
       f == "torch.jit._pickle.build_boollist" || f == "torch.jit._pickle.build_tensorlist" ||
       f == "torch.jit._pickle.build_genericlist") &&
      args.size() == 1 && args[0].isList()) {
    return Push(args[0]);
  }
  if ((f == "__builtin__.set" || f == "builtins.set") && args.size() <= 1) {
    if (args.empty()) return Push(c10::impl::GenericList(c10::AnyType::get()));
    if (args[0].isList()) return Push(args[0]);
  }
  // DeepSpeed's ZeroStageEnum, pickled by member name (getattr(ZeroStageEnum, 'gradients'),
  // Python >= 3.11) or by value (ZeroStageEnum(2)): its int value.
  if ((f == "__builtin__.getattr" || f == "builtins.getattr") && args.size() == 2 &&
      args[0].isString() && args[0].toStringRef() == std::string("<global>") + kZeroStageEnum &&
      args[1].isString()) {
    for (const auto& [name, value] : kZeroStages) {
      if (args[1].toStringRef() == name) return Push(IValue(int64_t{value}));
    }
    return PickleError(
        op_at_, absl::StrCat("unknown ", kZeroStageEnum, " member '", args[1].toStringRef(), "'"));
  }
  if (f == kZeroStageEnum && args.size() == 1 && args[0].isInt()) return Push(args[0]);
  if (f == "torch.device" && !args.empty() && args[0].isString()) {
    std::string device = args[0].toStringRef();
    if (args.size() == 2 && args[1].isInt()) absl::StrAppend(&device, ":", args[1].toInt());
    return Push(IValue(device));
  }
  return PickleError(op_at_, absl::StrCat("the Python object ", f,
                                          " is not supported (loom reads plain torch state "
                                          "dicts: dicts, lists, tuples, numbers, strings, "
                                          "tensors)"));
}

// Pickle protocol 2's bytes: _codecs.encode(text, 'latin1'), the text UTF-8 encoded here.
// Every code point must be below 256 (one byte each).
absl::StatusOr<std::string> Latin1FromUtf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      continue;
    }
    if ((b & 0xE0) != 0xC0 || i + 1 == text.size() ||
        (static_cast<unsigned char>(text[i + 1]) & 0xC0) != 0x80) {
      return absl::InvalidArgumentError("_codecs.encode of text that is not latin-1");
    }
    const unsigned cp = ((b & 0x1Fu) << 6) | (static_cast<unsigned char>(text[++i]) & 0x3Fu);
    if (cp < 0x80 || cp > 0xFF) {
      return absl::InvalidArgumentError("_codecs.encode of text that is not latin-1");
    }
    out.push_back(static_cast<char>(cp));
  }
  return out;
}

// The item size of a numpy dtype descriptor such as "u4" or "f8": the digits after the kind.
std::optional<int64_t> ItemSize(const std::string& descr) {
  if (descr.size() < 2 || descr.size() > 3) return std::nullopt;
  int64_t size = 0;
  for (size_t i = 1; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9') return std::nullopt;
    size = size * 10 + (descr[i] - '0');
  }
  if (size <= 0) return std::nullopt;
  return size;
}

// The numpy globals of UnpickleOptions::numpy_arrays; false when `f` is none of them.
absl::StatusOr<bool> Machine::ReduceNumpy(const std::string& f, const std::vector<IValue>& args) {
  if (f == "_codecs.encode") {
    if (args.size() != 2 || !args[0].isString() || !args[1].isString() ||
        args[1].toStringRef() != "latin1") {
      return PickleError(op_at_, "_codecs.encode other than (text, 'latin1')");
    }
    auto bytes = Latin1FromUtf8(args[0].toStringRef());
    if (!bytes.ok()) return PickleError(op_at_, bytes.status().message());
    RETURN_IF_ERROR(Push(IValue(std::move(*bytes))));
    return true;
  }
  const bool reconstruct = std::find(std::begin(kNumpyReconstruct), std::end(kNumpyReconstruct),
                                     f) != std::end(kNumpyReconstruct);
  if (reconstruct || f == kDtype) {
    // _reconstruct(numpy.ndarray, (0,), b'b') / dtype(descr, align=False, copy=True)
    const bool ok = args.size() == 3 &&
                    (reconstruct ? args[0].isString() &&
                                       args[0].toStringRef() == std::string("<global>") + kNdarray
                                 : args[0].isString() && args[1].isBool());
    if (!ok) return PickleError(op_at_, absl::StrCat(f, " with unexpected arguments"));
    IValue object = NewDict();
    object.toGenericDict().insert(IValue(kClassKey), IValue(reconstruct ? kNdarray : kDtype));
    if (!reconstruct) object.toGenericDict().insert(IValue("descr"), args[0]);
    RETURN_IF_ERROR(Push(std::move(object)));
    return true;
  }
  return false;
}

// The Enum members of UnpickleOptions::hf_training_arguments, by value (Class('steps'), Python
// <= 3.10) or by name (getattr(Class, 'STEPS'), Python >= 3.11): the member's value. False when
// `f` is none of them.
absl::StatusOr<bool> Machine::ReduceHfEnum(const std::string& f, const std::vector<IValue>& args) {
  const bool by_name = f == "__builtin__.getattr" || f == "builtins.getattr";
  std::string cls = f;
  if (by_name) {
    const std::string marker = "<global>";
    if (args.size() != 2 || !args[0].isString() || args[0].toStringRef().rfind(marker, 0) != 0) {
      return false;
    }
    cls = args[0].toStringRef().substr(marker.size());
  }
  const auto known = std::find_if(HfEnums().begin(), HfEnums().end(),
                                  [&cls](const EnumClass& e) { return cls == e.cls; });
  if (known == HfEnums().end()) return false;
  const IValue& key = by_name ? args[1] : (args.size() == 1 ? args[0] : IValue());
  if (!key.isString()) {
    return PickleError(op_at_, absl::StrCat(cls, " with arguments other than one string"));
  }
  for (const auto& [name, value] : known->members) {
    if (key.toStringRef() == (by_name ? name : value)) {
      RETURN_IF_ERROR(Push(IValue(std::string(value))));
      return true;
    }
  }
  return PickleError(op_at_, absl::StrCat("unknown ", cls, " member ", by_name ? "" : "value ", "'",
                                          key.toStringRef(), "'"));
}

// BUILD of a numpy dtype ((version, byteorder, ...): the byte order kept) or of an ndarray
// ((1, shape, dtype, fortran_order, data): checked against each other and kept).
absl::Status Machine::BuildNumpy(c10::impl::GenericDict target, const std::string& cls,
                                 const IValue& state) {
  if (!state.isTuple())
    return PickleError(op_at_, absl::StrCat("BUILD of a ", cls, " without a tuple"));
  const auto& s = state.toTupleRef().elements();
  if (cls == kDtype) {
    if (s.size() < 2 || !s[1].isString()) {
      return PickleError(op_at_, "a numpy.dtype state without a byte order");
    }
    target.insert_or_assign(IValue("byteorder"), s[1]);
    return absl::OkStatus();
  }
  if (s.size() != 5 || !s[0].isInt() || s[0].toInt() != 1 || !s[2].isGenericDict() ||
      !s[3].isBool() || !s[4].isString()) {
    return PickleError(op_at_,
                       "a numpy.ndarray state other than (1, shape, dtype, "
                       "fortran_order, data)");
  }
  auto shape = IntTuple(s[1], "a numpy array's shape");
  if (!shape.ok()) return PickleError(op_at_, shape.status().message());
  const c10::impl::GenericDict dtype = s[2].toGenericDict();
  auto descr = dtype.find(IValue("descr"));
  auto order = dtype.find(IValue("byteorder"));
  if (descr == dtype.end() || order == dtype.end() || !descr->value().isString() ||
      !order->value().isString()) {
    return PickleError(op_at_, "a numpy array whose dtype is not a built numpy.dtype");
  }
  const std::optional<int64_t> item = ItemSize(descr->value().toStringRef());
  if (!item) {
    return PickleError(op_at_, absl::StrCat("numpy dtype '", descr->value().toStringRef(),
                                            "' is not a fixed-size number"));
  }
  int64_t bytes = *item;
  for (int64_t d : *shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      return PickleError(op_at_, "a numpy array's shape overflows 64 bits");
    }
  }
  if (static_cast<uint64_t>(bytes) != s[4].toStringRef().size()) {
    return PickleError(op_at_, absl::StrCat("a numpy array of ", bytes, " bytes holds ",
                                            s[4].toStringRef().size()));
  }
  target.insert_or_assign(IValue("dtype"),
                          IValue(order->value().toStringRef() + descr->value().toStringRef()));
  target.insert_or_assign(IValue("shape"), s[1]);
  target.insert_or_assign(IValue("fortran_order"), s[3]);
  target.insert_or_assign(IValue("data"), s[4]);
  return absl::OkStatus();
}

absl::Status Machine::PersistentLoad() {
  ASSIGN_OR_RETURN(Item pid_item, Pop());
  if (pid_item.kind != Item::Kind::kValue || !pid_item.value.isTuple()) {
    return PickleError(op_at_, "a persistent id that is not a tuple");
  }
  // The storage type is a global inside the tuple; the tuple was built from stack items, so
  // it arrives here as values only if the global was turned into one. See Run(): TUPLE keeps
  // the storage type's name as a string marker "<global>torch.FloatStorage".
  const auto& pid = pid_item.value.toTupleRef().elements();
  if (pid.size() != 5 || !pid[0].isString() || pid[0].toStringRef() != "storage" ||
      !pid[1].isString() || !pid[2].isString() || !pid[4].isInt()) {
    return PickleError(op_at_,
                       "a persistent id other than ('storage', type, key, location, "
                       "numel)");
  }
  std::string type = pid[1].toStringRef();
  const std::string marker = "<global>";
  if (type.rfind(marker, 0) == 0) type = type.substr(marker.size());
  auto dtype = StorageTypes().find(type);
  if (dtype == StorageTypes().end()) {
    return PickleError(op_at_, absl::StrCat("storage type ", type, " is not supported"));
  }
  const std::string key = pid[2].toStringRef();
  auto cached = storages_.find(key);
  if (cached == storages_.end()) {
    ASSIGN_OR_RETURN(at::Tensor storage, load_storage_(key, dtype->second, pid[4].toInt()));
    cached = storages_.emplace(key, std::move(storage)).first;
  }
  return Push(IValue(cached->second));
}

// LONG1 / LONG4: a little-endian two's-complement integer of a 1- or 4-byte length.
absl::Status Machine::PushLong(int length_bytes) {
  uint64_t n = 0;
  if (length_bytes == 1) {
    ASSIGN_OR_RETURN(uint8_t n1, TakeLe<uint8_t>());
    n = n1;
  } else {
    ASSIGN_OR_RETURN(uint32_t n4, TakeLe<uint32_t>());
    n = n4;
  }
  if (n > 8) return PickleError(op_at_, "an integer wider than 64 bits");
  ASSIGN_OR_RETURN(absl::string_view b, Take(n));
  uint64_t u = 0;
  for (size_t i = 0; i < n; ++i) u |= uint64_t{static_cast<unsigned char>(b[i])} << (8 * i);
  if (n > 0 && n < 8 && (b[n - 1] & 0x80)) u |= ~uint64_t{0} << (8 * n);  // sign-extend
  return Push(IValue(static_cast<int64_t>(u)));
}

// BINFLOAT: a big-endian double.
absl::Status Machine::PushBinFloat() {
  ASSIGN_OR_RETURN(absl::string_view b, Take(8));
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<unsigned char>(b[i]);
  double d;
  std::memcpy(&d, &u, 8);
  return Push(IValue(d));
}

// The string and bytes opcodes: a 4-, 1- or 8-byte length, then the bytes.
absl::Status Machine::PushString(unsigned char op) {
  uint64_t n = 0;
  if (op == 'X' || op == 'T' || op == 'B') {
    ASSIGN_OR_RETURN(uint32_t n4, TakeLe<uint32_t>());
    n = n4;
  } else if (op == 0x8c || op == 'U' || op == 'C') {
    ASSIGN_OR_RETURN(uint8_t n1, TakeLe<uint8_t>());
    n = n1;
  } else {
    ASSIGN_OR_RETURN(n, TakeLe<uint64_t>());
  }
  ASSIGN_OR_RETURN(absl::string_view s, Take(n));
  return Push(IValue(std::string(s)));
}

// TUPLE (the items above the MARK) and TUPLE1..3 (the top 1 to 3 items).
absl::Status Machine::PushTuple(unsigned char op) {
  std::vector<IValue> items;
  if (op == 't') {
    // A tuple may hold globals (a persistent id's storage type): keep their names.
    size_t mark = stack_.size();
    while (mark > 0 && stack_[mark - 1].kind != Item::Kind::kMark) --mark;
    if (mark == 0) return PickleError(op_at_, "TUPLE without a MARK");
    for (size_t i = mark; i < stack_.size(); ++i) {
      Item& it = stack_[i];
      items.push_back(it.kind == Item::Kind::kGlobal ? IValue("<global>" + it.global)
                                                     : std::move(it.value));
    }
    stack_.resize(mark - 1);
  } else {
    for (int i = 0; i < op - 0x84; ++i) {
      ASSIGN_OR_RETURN(Item it, Pop());
      if (it.kind == Item::Kind::kMark) return Unsupported(it, "in a tuple");
      items.insert(items.begin(), it.kind == Item::Kind::kGlobal ? IValue("<global>" + it.global)
                                                                 : std::move(it.value));
    }
  }
  return Push(c10::ivalue::Tuple::create(std::move(items)));
}

absl::Status Machine::StackGlobal() {
  ASSIGN_OR_RETURN(IValue name, PopValue());
  ASSIGN_OR_RETURN(IValue module, PopValue());
  if (!name.isString() || !module.isString()) {
    return PickleError(op_at_, "STACK_GLOBAL without two strings");
  }
  return Global(module.toStringRef(), name.toStringRef());
}

// NEWOBJ: cls.__new__(cls, *args), for DeepSpeed's plain data objects and, on request, those of
// training_args.bin only.
absl::Status Machine::NewObject() {
  ASSIGN_OR_RETURN(IValue args, PopValue());
  ASSIGN_OR_RETURN(Item cls, Pop());
  const bool allowed =
      std::find(std::begin(kDeepSpeedObjects), std::end(kDeepSpeedObjects), cls.global) !=
          std::end(kDeepSpeedObjects) ||
      (options_.hf_training_arguments &&
       std::find(std::begin(kHfObjects), std::end(kHfObjects), cls.global) != std::end(kHfObjects));
  if (cls.kind != Item::Kind::kGlobal || !args.isTuple() || !args.toTupleRef().elements().empty() ||
      !allowed) {
    return Unsupported(cls, "as a class to instantiate (NEWOBJ)");
  }
  IValue object = NewDict();
  object.toGenericDict().insert(IValue(kClassKey), IValue(cls.global));
  return Push(std::move(object));
}

// BUILD: a DeepSpeed or training_args.bin object's attributes (merged into its dict), or the
// attributes of an OrderedDict (state_dict's _metadata, dropped).
absl::Status Machine::Build() {
  ASSIGN_OR_RETURN(IValue state, PopValue());
  if (!stack_.empty()) NoteMutated(stack_.back().value);
  if (options_.numpy_arrays && !stack_.empty() && stack_.back().kind == Item::Kind::kValue &&
      stack_.back().value.isGenericDict()) {
    c10::impl::GenericDict object = stack_.back().value.toGenericDict();
    auto cls = object.find(IValue(kClassKey));
    if (cls != object.end() && cls->value().isString() &&
        (cls->value().toStringRef() == kNdarray || cls->value().toStringRef() == kDtype)) {
      return BuildNumpy(object, cls->value().toStringRef(), state);
    }
  }
  if (stack_.empty() || stack_.back().kind != Item::Kind::kValue ||
      !stack_.back().value.isGenericDict() || !state.isGenericDict()) {
    return PickleError(op_at_, "BUILD of an object other than a dict's attributes");
  }
  c10::impl::GenericDict target = stack_.back().value.toGenericDict();
  if (!target.contains(IValue(kClassKey))) return absl::OkStatus();
  for (const auto& entry : state.toGenericDict()) {
    if (!entry.key().isString()) {
      return PickleError(op_at_, "an object attribute whose name is not a string");
    }
    target.insert_or_assign(entry.key(), entry.value());
  }
  return absl::OkStatus();
}

// One flat dispatch over the opcodes on purpose: each case is a few lines over the machine's
// stack and memo, and the longer ones are the helpers above; splitting the switch itself
// would scatter the one place that says what every opcode does.
// Run() reads one opcode at a time and hands it to the family that executes it; each family
// returns false for an opcode that is not its own.
absl::StatusOr<IValue> Machine::Run() {
  while (true) {
    op_at_ = pos_;
    ASSIGN_OR_RETURN(absl::string_view op_byte, Take(1));
    const auto op = static_cast<unsigned char>(op_byte[0]);
    if (op == '.') return PopValue();  // STOP: the result
    bool done = false;
    for (auto family : {&Machine::StackOp, &Machine::ScalarOp, &Machine::ContainerOp,
                        &Machine::MemoOp, &Machine::ObjectOp}) {
      ASSIGN_OR_RETURN(done, (this->*family)(op));
      if (done) break;
    }
    if (!done) {
      return PickleError(op_at_, absl::StrCat("opcode 0x", absl::Hex(op),
                                              " is not supported (loom reads torch.save's "
                                              "pickle protocols 2 to 5)"));
    }
  }
}

// Framing and the stack itself: PROTO, FRAME, MARK, POP, POP_MARK, DUP.
absl::StatusOr<bool> Machine::StackOp(unsigned char op) {
  switch (op) {
    case 0x80:  // PROTO
      RETURN_IF_ERROR(Take(1).status());
      break;
    case 0x95:  // FRAME
      RETURN_IF_ERROR(Take(8).status());
      break;
    case '(':
      stack_.push_back(Item{Item::Kind::kMark, IValue(), {}});
      break;
    case '0':
      RETURN_IF_ERROR(Pop().status());
      break;
    case '1':
      RETURN_IF_ERROR(PopToMark().status());
      break;
    case '2':
      if (stack_.empty()) return PickleError(op_at_, "DUP on an empty stack");
      stack_.push_back(stack_.back());
      break;
    default:
      return false;
  }
  return true;
}

// Pushes a scalar read from the program: None, booleans, integers, floats, strings, bytes.
absl::StatusOr<bool> Machine::ScalarOp(unsigned char op) {
  switch (op) {
    case 'N':
      RETURN_IF_ERROR(Push(IValue()));
      break;
    case 0x88:
      RETURN_IF_ERROR(Push(IValue(true)));
      break;
    case 0x89:
      RETURN_IF_ERROR(Push(IValue(false)));
      break;
    case 'K': {
      ASSIGN_OR_RETURN(uint8_t v, TakeLe<uint8_t>());
      RETURN_IF_ERROR(Push(IValue(int64_t{v})));
      break;
    }
    case 'M': {
      ASSIGN_OR_RETURN(uint16_t v, TakeLe<uint16_t>());
      RETURN_IF_ERROR(Push(IValue(int64_t{v})));
      break;
    }
    case 'J': {
      ASSIGN_OR_RETURN(int32_t v, TakeLe<int32_t>());
      RETURN_IF_ERROR(Push(IValue(int64_t{v})));
      break;
    }
    case 0x8a:  // LONG1
      RETURN_IF_ERROR(PushLong(1));
      break;
    case 0x8b:  // LONG4
      RETURN_IF_ERROR(PushLong(4));
      break;
    case 'G':  // BINFLOAT
      RETURN_IF_ERROR(PushBinFloat());
      break;
    case 'X':   // BINUNICODE
    case 'T':   // BINSTRING
    case 'B':   // BINBYTES
    case 'C':   // SHORT_BINBYTES
    case 'U':   // SHORT_BINSTRING
    case 0x8c:  // SHORT_BINUNICODE
    case 0x8d:  // BINUNICODE8
    case 0x8e:  // BINBYTES8
      RETURN_IF_ERROR(PushString(op));
      break;
    default:
      return false;
  }
  return true;
}

// Builds containers: empty dict / list / tuple, TUPLE*, APPEND(S), SETITEM(S).
absl::StatusOr<bool> Machine::ContainerOp(unsigned char op) {
  switch (op) {
    case '}':
      RETURN_IF_ERROR(Push(NewDict()));
      break;
    case ']':
      RETURN_IF_ERROR(Push(NewList()));
      break;
    case ')':
      RETURN_IF_ERROR(Push(c10::ivalue::Tuple::create({})));
      break;
    case 't':   // TUPLE
    case 0x85:  // TUPLE1
    case 0x86:  // TUPLE2
    case 0x87:  // TUPLE3
      RETURN_IF_ERROR(PushTuple(op));
      break;
    case 'a': {
      ASSIGN_OR_RETURN(IValue v, PopValue());
      RETURN_IF_ERROR(Append({std::move(v)}));
      break;
    }
    case 'e': {
      ASSIGN_OR_RETURN(std::vector<IValue> items, PopToMark());
      RETURN_IF_ERROR(Append(std::move(items)));
      break;
    }
    case 's': {
      ASSIGN_OR_RETURN(IValue value, PopValue());
      ASSIGN_OR_RETURN(IValue key, PopValue());
      RETURN_IF_ERROR(SetItems({std::move(key), std::move(value)}));
      break;
    }
    case 'u': {
      ASSIGN_OR_RETURN(std::vector<IValue> items, PopToMark());
      RETURN_IF_ERROR(SetItems(std::move(items)));
      break;
    }
    default:
      return false;
  }
  return true;
}

// The memo: (BIN|LONG_BIN)PUT and MEMOIZE store the top of the stack, (BIN|LONG_BIN)GET push it.
absl::StatusOr<bool> Machine::MemoOp(unsigned char op) {
  switch (op) {
    case 'q': {
      ASSIGN_OR_RETURN(uint8_t i, TakeLe<uint8_t>());
      RETURN_IF_ERROR(Memoize(i));
      break;
    }
    case 'r': {
      ASSIGN_OR_RETURN(uint32_t i, TakeLe<uint32_t>());
      RETURN_IF_ERROR(Memoize(i));
      break;
    }
    case 0x94:  // MEMOIZE
      RETURN_IF_ERROR(Memoize(memo_.size()));
      break;
    case 'h': {
      ASSIGN_OR_RETURN(uint8_t i, TakeLe<uint8_t>());
      RETURN_IF_ERROR(Get(i));
      break;
    }
    case 'j': {
      ASSIGN_OR_RETURN(uint32_t i, TakeLe<uint32_t>());
      RETURN_IF_ERROR(Get(i));
      break;
    }
    default:
      return false;
  }
  return true;
}

// Python objects, through the allowlist: GLOBAL, STACK_GLOBAL, REDUCE, BINPERSID, NEWOBJ, BUILD.
absl::StatusOr<bool> Machine::ObjectOp(unsigned char op) {
  switch (op) {
    case 'c': {
      ASSIGN_OR_RETURN(std::string module, TakeLine());
      ASSIGN_OR_RETURN(std::string name, TakeLine());
      RETURN_IF_ERROR(Global(std::move(module), std::move(name)));
      break;
    }
    case 0x93:  // STACK_GLOBAL
      RETURN_IF_ERROR(StackGlobal());
      break;
    case 'R':
      RETURN_IF_ERROR(Reduce());
      break;
    case 'Q':
      RETURN_IF_ERROR(PersistentLoad());
      break;
    case 0x81:  // NEWOBJ
      RETURN_IF_ERROR(NewObject());
      break;
    case 'b':  // BUILD
      RETURN_IF_ERROR(Build());
      break;
    default:
      return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<c10::IValue> RunTorchPickle(absl::string_view pickle,
                                           const StorageLoader& load_storage) {
  return RunTorchPickle(pickle, load_storage, UnpickleOptions());
}

absl::StatusOr<c10::IValue> RunTorchPickle(absl::string_view pickle,
                                           const StorageLoader& load_storage,
                                           const UnpickleOptions& options) {
  try {
    auto machine = std::make_unique<Machine>(pickle, load_storage, options);
    absl::StatusOr<IValue> result = machine->Run();
    std::vector<IValue> held = machine->HeldValues();
    if (result.ok()) held.push_back(*result);
    if (BreakIValueCycles(held)) {
      return absl::InvalidArgumentError(
          "the pickle builds a container that holds itself (a cycle through the memo); loom "
          "reads no cyclic values (torch state dicts, optimizer, scheduler and RNG files have "
          "none)");
    }
    if (const size_t depth = IValueNestingDepth(held); depth > kMaxNesting) {
      // Freed top-down while every container is held here, so no destructor recurses.
      std::vector<IValue> all = ContainersTopDown(held);
      held.clear();
      result = absl::InvalidArgumentError("");
      machine.reset();
      ReleaseTopDown(all);
      return absl::InvalidArgumentError(
          absl::StrCat("the pickle nests containers ", depth,
                       " deep; loom reads values nested at most ", kMaxNesting,
                       " deep (torch state dicts, optimizer, scheduler and RNG files nest "
                       "fewer than 10)"));
    }
    return result;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, "unpickling");
  }
}

absl::StatusOr<const ZipReader::Record*> FindStorageRecord(const ZipReader& zip,
                                                           const std::string& key,
                                                           c10::ScalarType dtype, int64_t numel) {
  // torch.save names storages by small decimal keys; anything else (a path, "..") is refused
  // before it is looked up.
  if (key.empty() || key.size() > 64 || !std::all_of(key.begin(), key.end(), [](char c) {
        return absl::ascii_isalnum(c) || c == '_';
      })) {
    return absl::InvalidArgumentError(
        absl::StrCat("storage key \"", absl::CHexEscape(key), "\" is not a torch.save record key"));
  }
  const ZipReader::Record* record = zip.Find("data/" + key);
  if (record == nullptr || numel < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("storage ", key, " is missing from the archive"));
  }
  const uint64_t item = c10::elementSize(dtype);
  if (record->size % item != 0 || record->size / item != static_cast<uint64_t>(numel)) {
    return absl::InvalidArgumentError(absl::StrCat("storage ", key, " claims ", numel,
                                                   " elements of ", item,
                                                   " bytes but its record "
                                                   "holds ",
                                                   record->size, " bytes"));
  }
  return record;
}

absl::StatusOr<c10::IValue> UnpickleTorchSave(const ZipReader& zip,
                                              const UnpickleOptions& options) {
  const ZipReader::Record* pkl = zip.Find("data.pkl");
  if (pkl == nullptr) {
    return base::Annotate(
        absl::InvalidArgumentError("the archive has no data.pkl: not a torch.save file"),
        zip.source());
  }
  ASSIGN_OR_RETURN(const std::string program, zip.ReadAll(*pkl), zip.source());
  absl::StatusOr<c10::IValue> value = RunTorchPickle(
      program,
      [&zip](const std::string& key, c10::ScalarType dtype,
             int64_t numel) -> absl::StatusOr<at::Tensor> {
        ASSIGN_OR_RETURN(const ZipReader::Record* record,
                         FindStorageRecord(zip, key, dtype, numel));
        at::Tensor storage;
        try {
          storage = at::empty({numel}, at::TensorOptions().dtype(dtype));
        } catch (const std::exception& e) {
          return base::TorchErrorToStatus(e, absl::StatusCode::kResourceExhausted,
                                          absl::StrCat("allocating storage ", key));
        }
        RETURN_IF_ERROR(zip.ReadAll(*record, storage.data_ptr()));
        return storage;
      },
      options);
  RETURN_IF_ERROR_CTX(value.status(), zip.source());
  return value;
}

absl::StatusOr<c10::IValue> UnpickleTorchSave(absl::string_view zip_bytes) {
  return UnpickleTorchSave(zip_bytes, UnpickleOptions());
}

absl::StatusOr<c10::IValue> UnpickleTorchSave(absl::string_view zip_bytes,
                                              const UnpickleOptions& options) {
  if (zip_bytes.substr(0, 4) != absl::string_view("PK\x03\x04", 4)) {
    return absl::InvalidArgumentError(
        "not a zip archive: the legacy torch.save format (_use_new_zipfile_serialization="
        "False) is not supported; re-save with torch >= 1.6's default format");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ZipReader> zip, ZipReader::FromBuffer(zip_bytes, ""));
  return UnpickleTorchSave(*zip, options);
}

absl::StatusOr<c10::IValue> UnpickleTorchSaveFile(const std::string& path,
                                                  const UnpickleOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<ZipReader> zip, ZipReader::Open(path));
  return UnpickleTorchSave(*zip, options);
}

}  // namespace loom::checkpoint
