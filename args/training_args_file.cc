#include "args/training_args_file.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/json_ivalue.h"
#include "base/status_macros.h"
#include "base/torch_status.h"

namespace loom::args {
namespace {

using json = nlohmann::ordered_json;

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

}  // namespace

absl::StatusOr<std::string> TrainingArgsToPickle(const google::protobuf::Message& args,
                                                 const SerializeOptions& options) {
  try {
    std::vector<char> bytes = torch::jit::pickle_save(base::JsonToIValue(ToDict(args, options)));
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "pickling training arguments");
  }
}

absl::Status TrainingArgsFromPickle(const std::string& bytes, const std::string& source,
                                    google::protobuf::Message* args,
                                    const SerializeOptions& options) {
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kDataLoss,
                                    source + ": not a torch pickle written by loom");
  }
  if (!value.isGenericDict()) {
    return absl::DataLossError(absl::StrCat(source, ": expected a dict of training arguments"));
  }
  ASSIGN_OR_RETURN(json dict, ToJson(value, source));
  return FromDict(dict, source, args, options);
}

absl::Status SaveTrainingArgs(const google::protobuf::Message& args, const std::string& path,
                              const SerializeOptions& options) {
  ASSIGN_OR_RETURN(std::string bytes, TrainingArgsToPickle(args, options));
  return base::WriteFileAtomically(path, bytes);
}

absl::Status LoadTrainingArgs(const std::string& path, google::protobuf::Message* args,
                              const SerializeOptions& options) {
  ASSIGN_OR_RETURN(std::string bytes, base::ReadFile(path));
  return TrainingArgsFromPickle(bytes, path, args, options);
}

}  // namespace loom::args
