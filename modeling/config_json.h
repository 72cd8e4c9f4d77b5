// Reading and writing HF config.json files (transformers 4.41 `PretrainedConfig`): typed
// readers of one key whose errors name the file and key, and Python's sort_keys order.
//
// Contract:
//   - ParseConfigObject(text, source, model_type): the JSON object, or InvalidArgument naming
//     `source` (not JSON, not an object, or a "model_type" other than `model_type`).
//   - ReadInt / ReadDouble / ReadString / ReadBool leave *out unchanged when the key is absent
//     and return InvalidArgument (KeyError) when its value has the wrong type;
//     ReadOptionalString / ReadOptionalInt also accept null (ReadOptionalInt resets *out).
//   - KeyError(source, key, what): InvalidArgument "<source>: key "<key>" <what>".
//   - ReadArchitectures(j, source, out): PretrainedConfig's "architectures", a list of class
//     names (null or absent: *out unchanged).
//   - Sorted(v): a copy of `v` with every object's keys in sorted order (json.dumps(sort_keys=True)
//     for values a config only carries).
//
// Example:
//   ASSIGN_OR_RETURN(nlohmann::json j, ParseConfigObject(text, path, "t5"));
//   RETURN_IF_ERROR(ReadInt(j, path, "d_model", &config.d_model));
#ifndef LOOM_MODELING_CONFIG_JSON_H_
#define LOOM_MODELING_CONFIG_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace loom::modeling {

// The transformers version loom's config.json files say they were written by.
inline constexpr absl::string_view kTransformersVersion = "4.41.2";

absl::StatusOr<nlohmann::json> ParseConfigObject(absl::string_view text, absl::string_view source,
                                                 absl::string_view model_type);
absl::Status KeyError(absl::string_view source, absl::string_view key, absl::string_view what);
absl::Status ReadInt(const nlohmann::json& j, absl::string_view source, const char* key,
                     int64_t* out);
absl::Status ReadDouble(const nlohmann::json& j, absl::string_view source, const char* key,
                        double* out);
absl::Status ReadString(const nlohmann::json& j, absl::string_view source, const char* key,
                        std::string* out);
absl::Status ReadBool(const nlohmann::json& j, absl::string_view source, const char* key,
                      bool* out);
absl::Status ReadOptionalString(const nlohmann::json& j, absl::string_view source,
                                const char* key, std::optional<std::string>* out);
absl::Status ReadOptionalInt(const nlohmann::json& j, absl::string_view source, const char* key,
                             std::optional<int64_t>* out);
absl::Status ReadArchitectures(const nlohmann::json& j, absl::string_view source,
                               std::optional<std::vector<std::string>>* out);
nlohmann::ordered_json Sorted(const nlohmann::json& v);

}  // namespace loom::modeling

#endif  // LOOM_MODELING_CONFIG_JSON_H_
