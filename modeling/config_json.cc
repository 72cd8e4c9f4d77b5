#include "modeling/config_json.h"

#include "absl/strings/str_cat.h"

namespace loom::modeling {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

absl::Status KeyError(absl::string_view source, absl::string_view key, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": key \"", key, "\" ", what));
}

// Readers of one key: leave `out` unchanged when the key is absent.
absl::Status ReadInt(const json& j, absl::string_view source, const char* key, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end()) return absl::OkStatus();
  if (!it->is_number_integer()) {
    return KeyError(source, key, absl::StrCat("must be an integer, got ", it->dump()));
  }
  *out = it->get<int64_t>();
  return absl::OkStatus();
}

absl::Status ReadDouble(const json& j, absl::string_view source, const char* key, double* out) {
  auto it = j.find(key);
  if (it == j.end()) return absl::OkStatus();
  if (!it->is_number()) {
    return KeyError(source, key, absl::StrCat("must be a number, got ", it->dump()));
  }
  *out = it->get<double>();
  return absl::OkStatus();
}

absl::Status ReadString(const json& j, absl::string_view source, const char* key,
                        std::string* out) {
  auto it = j.find(key);
  if (it == j.end()) return absl::OkStatus();
  if (!it->is_string()) {
    return KeyError(source, key, absl::StrCat("must be a string, got ", it->dump()));
  }
  *out = it->get<std::string>();
  return absl::OkStatus();
}

absl::Status ReadOptionalString(const json& j, absl::string_view source, const char* key,
                                std::optional<std::string>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_string()) {
    return KeyError(source, key, absl::StrCat("must be a string or null, got ", it->dump()));
  }
  *out = it->get<std::string>();
  return absl::OkStatus();
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

absl::Status ReadBool(const json& j, absl::string_view source, const char* key, bool* out) {
  auto it = j.find(key);
  if (it == j.end()) return absl::OkStatus();
  if (!it->is_boolean()) {
    return KeyError(source, key, absl::StrCat("must be true or false, got ", it->dump()));
  }
  *out = it->get<bool>();
  return absl::OkStatus();
}

absl::Status ReadOptionalInt(const json& j, absl::string_view source, const char* key,
                             std::optional<int64_t>* out) {
  auto it = j.find(key);
  if (it == j.end()) return absl::OkStatus();
  if (it->is_null()) {
    out->reset();
    return absl::OkStatus();
  }
  if (!it->is_number_integer()) {
    return KeyError(source, key, absl::StrCat("must be an integer or null, got ", it->dump()));
  }
  *out = it->get<int64_t>();
  return absl::OkStatus();
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

}  // namespace loom::modeling
