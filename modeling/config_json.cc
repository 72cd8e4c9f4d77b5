#include "modeling/config_json.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

namespace loom::modeling {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

absl::Status KeyError(absl::string_view source, absl::string_view key, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": key \"", key, "\" ", what));
}

namespace {

using JsonIs = bool (json::*)() const noexcept;

// One key read as T: absent leaves *out unchanged; null runs `on_null` when given (else it is a
// type error like any other); a value `is` rejects is an InvalidArgument saying what it must be.
template <typename T, typename Out>
absl::Status ReadKey(const json& j, absl::string_view source, const char* key, JsonIs is,
                     absl::string_view must_be, Out* out,
                     const std::function<void()>& on_null = nullptr) {
  auto it = j.find(key);
  if (it == j.end()) return absl::OkStatus();
  if (on_null != nullptr && it->is_null()) {
    on_null();
    return absl::OkStatus();
  }
  if (!((*it).*is)()) {
    return KeyError(source, key, absl::StrCat("must be ", must_be, ", got ", it->dump()));
  }
  *out = it->get<T>();
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadInt(const json& j, absl::string_view source, const char* key, int64_t* out) {
  return ReadKey<int64_t>(j, source, key, &json::is_number_integer, "an integer", out);
}

absl::Status ReadDouble(const json& j, absl::string_view source, const char* key, double* out) {
  return ReadKey<double>(j, source, key, &json::is_number, "a number", out);
}

absl::Status ReadString(const json& j, absl::string_view source, const char* key,
                        std::string* out) {
  return ReadKey<std::string>(j, source, key, &json::is_string, "a string", out);
}

absl::Status ReadOptionalString(const json& j, absl::string_view source, const char* key,
                                std::optional<std::string>* out) {
  return ReadKey<std::string>(j, source, key, &json::is_string, "a string or null", out, [] {});
}

absl::Status ReadBool(const json& j, absl::string_view source, const char* key, bool* out) {
  return ReadKey<bool>(j, source, key, &json::is_boolean, "true or false", out);
}

absl::Status ReadOptionalInt(const json& j, absl::string_view source, const char* key,
                             std::optional<int64_t>* out) {
  return ReadKey<int64_t>(j, source, key, &json::is_number_integer, "an integer or null", out,
                          [out] { out->reset(); });
}

// Recursively sorted copy (json.dumps(sort_keys=True) for values we only carry).
ojson Sorted(const json& v) {
  if (v.is_object()) {
    ojson out = ojson::object();
    for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = Sorted(it.value());
    return out;  // nlohmann::json iterates its std::map in key order
  }
  if (v.is_array()) {
    ojson out = ojson::array();
    for (const json& e : v) out.push_back(Sorted(e));
    return out;
  }
  return ojson::parse(v.dump());
}

absl::StatusOr<json> ParseConfigObject(absl::string_view text, absl::string_view source,
                                       absl::string_view model_type) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not valid JSON; expected an HF config.json"));
  }
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": expected a JSON object (an HF config.json), got ", j.type_name()));
  }
  if (auto it = j.find("model_type"); it != j.end() && *it != std::string(model_type)) {
    return KeyError(source, "model_type",
                    absl::StrCat("is ", it->dump(), "; only \"", model_type,
                                 "\" configs can be read here"));
  }
  return j;
}

absl::Status ReadArchitectures(const nlohmann::json& j, absl::string_view source,
                               std::optional<std::vector<std::string>>* out) {
  auto it = j.find("architectures");
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_array() || !std::all_of(it->begin(), it->end(), [](const nlohmann::json& e) {
        return e.is_string();
      })) {
    return KeyError(source, "architectures",
                    absl::StrCat("must be a list of class names, got ", it->dump()));
  }
  *out = it->get<std::vector<std::string>>();
  return absl::OkStatus();
}

}  // namespace loom::modeling
