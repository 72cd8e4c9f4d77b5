// A writer of Python pickles (protocol 2) that name Python classes: the objects Python's
// pickle module writes for a dataclass instance (GLOBAL, EMPTY_TUPLE, NEWOBJ, its __dict__,
// BUILD) and for an Enum member, wrapped in torch.save's zip archive. It exists for
// training_args.bin, which transformers' Trainer writes as torch.save(TrainingArguments(...)).
// Hand-written: LibTorch's pickler (torch::pickle_save) writes only TorchScript values (it has
// no way to emit NEWOBJ or BUILD), Python's pickle module is not in a C++ process, and nothing
// Debian packages writes Python pickles from C++. The reader of such files is
// python_unpickler.h (UnpickleOptions::hf_training_arguments).
//
// Contract:
//   PythonValue is a tree of what the writer can emit:
//     None, bool, int (64 bits), float, str (UTF-8), list, dict with str keys (insertion
//     order kept), an Enum member `module.Class(value)`, and an object `module.Class` with a
//     __dict__ of str keys.
//   PickleProtocol2(value) gives the bytes Python 3's pickle.dumps(value, protocol=2) gives
//   for the same value, with two differences that Python's pickle.loads does not see: no
//   memo (no BINPUT; the writer never shares a value), and an Enum member is written as its
//   class applied to its value (GLOBAL, value, TUPLE1, REDUCE: Python 3.8-3.10's
//   Enum.__reduce_ex__) rather than Python >= 3.11's getattr(Class, 'NAME'), which needs the
//   member's name. Opcodes: PROTO 2, NONE, NEWTRUE/NEWFALSE, BININT1/BININT2/BININT/LONG1
//   (the narrowest, as Python picks), BINFLOAT, BINUNICODE, EMPTY_LIST + APPEND/APPENDS,
//   EMPTY_DICT + SETITEM/SETITEMS (batches of 1000, as Python's _pickle), EMPTY_TUPLE, TUPLE1,
//   GLOBAL, REDUCE, NEWOBJ, BUILD, STOP. A str that is not valid UTF-8, or a module or class name
//   that is not a dotted Python identifier, is an InvalidArgument.
//   TorchSaveArchive(pickle) wraps the pickle as torch.save (torch >= 1.6) stores it: a zip
//   archive with the records "archive/data.pkl" and "archive/version" (LibTorch's
//   PyTorchStreamWriter, the archive name torch.save uses for a file object); no tensors.
//
// Example:
//   PythonValue state = PythonValue::Dict();
//   state.Set("lr_scheduler_type",
//             PythonValue::Enum("transformers.trainer_utils", "SchedulerType",
//                               PythonValue::Str("linear")));
//   PythonValue args = PythonValue::Object("transformers.training_args",
//                                          "TrainingArguments", std::move(state));
//   ASSIGN_OR_RETURN(std::string pickle, PickleProtocol2(args));
//   ASSIGN_OR_RETURN(std::string file_bytes, TorchSaveArchive(pickle));
#ifndef LOOM_CHECKPOINT_PYTHON_PICKLE_WRITER_H_
#define LOOM_CHECKPOINT_PYTHON_PICKLE_WRITER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace loom::checkpoint {

class PythonValue {
 public:
  enum class Kind { kNone, kBool, kInt, kFloat, kStr, kList, kDict, kEnum, kObject };

  PythonValue() = default;  // None
  static PythonValue Bool(bool b);
  static PythonValue Int(int64_t i);
  static PythonValue Float(double d);
  static PythonValue Str(std::string s);
  static PythonValue List(std::vector<PythonValue> items = {});
  static PythonValue Dict();
  // module.cls(value), e.g. ("transformers.trainer_utils", "IntervalStrategy", Str("steps")).
  static PythonValue Enum(std::string module, std::string cls, PythonValue value);
  // An instance of module.cls whose __dict__ is `state` (a Dict).
  static PythonValue Object(std::string module, std::string cls, PythonValue state);
  // JSON null/bool/number/string/array/object as None/bool/int/float/str/list/dict.
  static PythonValue FromJson(const nlohmann::ordered_json& j);

  // Dict or Object: sets `key` (replacing an existing one in place, else appending).
  void Set(const std::string& key, PythonValue value);

  Kind kind() const { return kind_; }
  bool bool_value() const { return bool_; }
  int64_t int_value() const { return int_; }
  double float_value() const { return float_; }
  const std::string& str() const { return str_; }                   // kStr
  const std::string& module() const { return module_; }             // kEnum, kObject
  const std::string& cls() const { return cls_; }                   // kEnum, kObject
  const std::vector<PythonValue>& items() const { return items_; }  // kList; kEnum: {value}
  const std::vector<std::pair<std::string, PythonValue>>& entries() const {  // kDict, kObject
    return entries_;
  }

 private:
  Kind kind_ = Kind::kNone;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  std::string module_;
  std::string cls_;
  std::vector<PythonValue> items_;
  std::vector<std::pair<std::string, PythonValue>> entries_;
};

absl::StatusOr<std::string> PickleProtocol2(const PythonValue& value);
absl::StatusOr<std::string> TorchSaveArchive(absl::string_view pickle);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_PYTHON_PICKLE_WRITER_H_
