#include "checkpoint/training_args_file.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <torch/cuda.h>

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/python_pickle_writer.h"
#include "checkpoint/python_unpickler.h"

namespace loom::checkpoint {
namespace {

using json = nlohmann::ordered_json;

constexpr char kTrainerUtils[] = "transformers.trainer_utils";
constexpr char kTrainingArgsModule[] = "transformers.training_args";

// The fields HF's __post_init__ turns into Enum members (transformers 4.41), and their class.
struct EnumField {
  const char* field;
  const char* module;
  const char* cls;
  bool list;  // a list of members (fsdp, debug)
};
constexpr EnumField kEnumFields[] = {
    {"eval_strategy", kTrainerUtils, "IntervalStrategy", false},
    {"logging_strategy", kTrainerUtils, "IntervalStrategy", false},
    {"save_strategy", kTrainerUtils, "IntervalStrategy", false},
    {"lr_scheduler_type", kTrainerUtils, "SchedulerType", false},
    {"hub_strategy", kTrainerUtils, "HubStrategy", false},
    {"optim", kTrainingArgsModule, "OptimizerNames", false},
    {"fsdp", kTrainerUtils, "FSDPOption", true},
    {"debug", "transformers.debug_utils", "DebugOption", true},
};

// Attributes of HF's object that are not fields: what _setup_devices caches, DeepSpeed's
// plugin objects, and the reader's class marker.
constexpr const char* kNotFields[] = {
    "_n_gpu",           "distributed_state",   "__cached__setup_devices",
    "deepspeed_plugin", "hf_deepspeed_config", "__class__",
};

bool IsToken(const std::string& key) { return absl::EndsWith(key, "_token"); }

PythonValue EnumValue(const EnumField& e, const json& value) {
  if (!value.is_string()) return PythonValue::FromJson(value);  // None stays None
  return PythonValue::Enum(e.module, e.cls, PythonValue::Str(value.get<std::string>()));
}

// One field's value as HF's object holds it after __post_init__.
PythonValue FieldValue(const std::string& key, const json& value) {
  if (IsToken(key)) return PythonValue();
  for (const EnumField& e : kEnumFields) {
    if (key != e.field) continue;
    if (!e.list || !value.is_array()) return EnumValue(e, value);
    std::vector<PythonValue> members;
    for (const json& v : value) members.push_back(EnumValue(e, v));
    return PythonValue::List(std::move(members));
  }
  if (key == "accelerator_config" && value.is_object()) {
    return PythonValue::Object("transformers.trainer_pt_utils", "AcceleratorConfig",
                               PythonValue::FromJson(value));
  }
  return PythonValue::FromJson(value);
}

// HF's _n_gpu for a process of loom: one device per process, none on the CPU.
int64_t NGpu(const json& dict) {
  const bool cpu = dict.value("use_cpu", false) || dict.value("no_cuda", false);
  return !cpu && torch::cuda::is_available() ? 1 : 0;
}

absl::StatusOr<json> ToJson(const c10::IValue& v, const std::string& where) {
  if (v.isNone()) return json(nullptr);
  if (v.isBool()) return json(v.toBool());
  if (v.isInt()) return json(v.toInt());
  if (v.isDouble()) return json(v.toDouble());
  if (v.isString()) return json(v.toStringRef());
  if (v.isList()) {
    json arr = json::array();
    for (const c10::IValue& e : v.toListRef()) {
      ASSIGN_OR_RETURN(json item, ToJson(e, where));
      arr.push_back(std::move(item));
    }
    return arr;
  }
  if (v.isGenericDict()) {
    json obj = json::object();
    for (const auto& entry : v.toGenericDict()) {
      if (!entry.key().isString()) {
        return absl::DataLossError(absl::StrCat(where, ": dict key is not a string"));
      }
      ASSIGN_OR_RETURN(obj[entry.key().toStringRef()], ToJson(entry.value(), where));
    }
    return obj;
  }
  return absl::DataLossError(absl::StrCat(where, ": unexpected value of type ", v.tagKind()));
}

// The fields of an unpickled TrainingArguments object (a dict with "__class__"), or of loom's
// earlier plain dict, as args::FromDict reads them.
absl::StatusOr<json> FieldsOf(const c10::IValue& value, const std::string& source) {
  if (!value.isGenericDict()) {
    return absl::DataLossError(absl::StrCat(source, ": expected a TrainingArguments object"));
  }
  const c10::impl::GenericDict dict = value.toGenericDict();
  if (auto cls = dict.find(c10::IValue("__class__")); cls != dict.end()) {
    const std::string name = cls->value().toStringRef();
    if (!absl::EndsWith(name, ".TrainingArguments") &&
        !absl::EndsWith(name, ".Seq2SeqTrainingArguments")) {
      return absl::DataLossError(
          absl::StrCat(source, ": holds a ", name, ", not a TrainingArguments object"));
    }
  }
  json fields = json::object();
  for (const auto& entry : dict) {
    if (!entry.key().isString()) {
      return absl::DataLossError(absl::StrCat(source, ": an attribute name is not a string"));
    }
    const std::string key = entry.key().toStringRef();
    if (std::find(std::begin(kNotFields), std::end(kNotFields), key) != std::end(kNotFields) ||
        IsToken(key)) {
      continue;  // not a field, or a token: never kept
    }
    ASSIGN_OR_RETURN(json v, ToJson(entry.value(), source));
    if (key == "accelerator_config" && v.is_object()) v.erase("__class__");
    fields[key] = std::move(v);
  }
  return fields;
}

}  // namespace

absl::StatusOr<std::string> TrainingArgsToPickle(const google::protobuf::Message& args,
                                                 const args::SerializeOptions& options) {
  const json dict = args::ToDict(args, options);
  PythonValue state = PythonValue::Dict();
  for (const auto& [key, value] : dict.items()) state.Set(key, FieldValue(key, value));
  state.Set("_n_gpu", PythonValue::Int(NGpu(dict)));
  const PythonValue object =
      options.seq2seq
          ? PythonValue::Object("transformers.training_args_seq2seq", "Seq2SeqTrainingArguments",
                                std::move(state))
          : PythonValue::Object(kTrainingArgsModule, "TrainingArguments", std::move(state));
  ASSIGN_OR_RETURN(const std::string pickle, PickleProtocol2(object),
                   "pickling training arguments");
  return TorchSaveArchive(pickle);
}

absl::Status TrainingArgsFromPickle(const std::string& bytes, const std::string& source,
                                    google::protobuf::Message* args,
                                    const args::SerializeOptions& options) {
  absl::StatusOr<c10::IValue> value = UnpickleTorchSave(bytes, {.hf_training_arguments = true});
  if (!value.ok()) {
    return absl::DataLossError(
        absl::StrCat(source, ": not a training_args.bin of transformers' Trainer or of loom: ",
                     value.status().message()));
  }
  ASSIGN_OR_RETURN(json fields, FieldsOf(*value, source));
  return args::FromDict(fields, source, args, options);
}

absl::Status SaveTrainingArgs(const google::protobuf::Message& args, const std::string& path,
                              const args::SerializeOptions& options) {
  ASSIGN_OR_RETURN(std::string bytes, TrainingArgsToPickle(args, options));
  return base::WriteFileAtomically(path, bytes);
}

absl::Status LoadTrainingArgs(const std::string& path, google::protobuf::Message* args,
                              const args::SerializeOptions& options) {
  ASSIGN_OR_RETURN(std::string bytes, base::ReadFile(path));
  return TrainingArgsFromPickle(bytes, path, args, options);
}

}  // namespace loom::checkpoint
