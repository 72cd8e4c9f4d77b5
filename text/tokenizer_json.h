// Reading the JSON files of HF tokenizer folders (tokenizer_config.json,
// special_tokens_map.json, added_tokens.json), shared by loom's tokenizers. Every reader checks
// the JSON type and names the file and key in its error, saying how to fix it.
//
// Contract:
//   - ReadJsonObject(path): the file parsed as a JSON object (InvalidArgument otherwise).
//   - ReadBool / ReadOptionalBool / ReadToken / ReadModelMaxLength: set *out from j[key] when
//     the key is present (and, except for ReadOptionalBool, not null); a wrong type is
//     InvalidArgument. A token is a string or an AddedToken object {"content": ...}.
//     ReadModelMaxLength treats 1e18 or more (HF writes int(1e30) for "no limit") as unset.
//
// Example:
//   ASSIGN_OR_RETURN(nlohmann::json config, ReadJsonObject(dir + "/tokenizer_config.json"));
//   RETURN_IF_ERROR(ReadToken(config, path, "eos_token", &options.eos_token));
#ifndef LOOM_TEXT_TOKENIZER_JSON_H_
#define LOOM_TEXT_TOKENIZER_JSON_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace loom::text {

bool RegularFileExists(const std::string& path);
absl::StatusOr<nlohmann::json> ReadJsonObject(const std::string& path);
// InvalidArgument: `path`: "key" must be `want`; fix or remove the entry.
absl::Status JsonTypeError(const std::string& path, absl::string_view key, absl::string_view want);

absl::Status ReadBool(const nlohmann::json& j, const std::string& path, const char* key,
                      bool* out);
absl::Status ReadOptionalBool(const nlohmann::json& j, const std::string& path, const char* key,
                              std::optional<bool>* out);
absl::Status ReadToken(const nlohmann::json& j, const std::string& path, const char* key,
                       std::string* out);
absl::Status ReadModelMaxLength(const nlohmann::json& j, const std::string& path,
                                std::optional<int64_t>* out);

}  // namespace loom::text

#endif  // LOOM_TEXT_TOKENIZER_JSON_H_
