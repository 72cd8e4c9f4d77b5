#include "text/tokenizer_json.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace loom::text {

using Json = nlohmann::json;

bool RegularFileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

absl::StatusOr<Json> ReadJsonObject(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not valid JSON"));
  }
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, " must hold a JSON object"));
  }
  return j;
}

absl::Status JsonTypeError(const std::string& path, absl::string_view key,
                           absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": \"", key, "\" must be ", want, "; fix or remove the entry"));
}

absl::Status ReadBool(const Json& j, const std::string& path, const char* key, bool* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_boolean()) return JsonTypeError(path, key, "true or false");
  *out = it->get<bool>();
  return absl::OkStatus();
}

absl::Status ReadOptionalBool(const Json& j, const std::string& path, const char* key,
                              std::optional<bool>* out) {
  auto it = j.find(key);
  if (it == j.end()) return absl::OkStatus();
  if (it->is_null()) {
    out->reset();
    return absl::OkStatus();
  }
  if (!it->is_boolean()) return JsonTypeError(path, key, "true, false or null");
  *out = it->get<bool>();
  return absl::OkStatus();
}

absl::Status ReadToken(const Json& j, const std::string& path, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (it->is_string()) {
    *out = it->get<std::string>();
    return absl::OkStatus();
  }
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) {
      *out = content->get<std::string>();
      return absl::OkStatus();
    }
  }
  return JsonTypeError(path, key, "a string or an object with a string \"content\"");
}

absl::Status ReadModelMaxLength(const Json& j, const std::string& path,
                                std::optional<int64_t>* out) {
  auto it = j.find("model_max_length");
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number()) return JsonTypeError(path, "model_max_length", "a positive integer");
  const double v = it->get<double>();
  // HF saves "no limit" as int(1e30); anything this large means no limit.
  if (v >= 1e18) {
    out->reset();
  } else if (it->is_number_integer() && v >= 0) {
    *out = it->get<int64_t>();
  } else {
    return JsonTypeError(path, "model_max_length", "a positive integer");
  }
  return absl::OkStatus();
}

}  // namespace loom::text
