#include "checkpoint/shard_index.h"

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace loom::checkpoint {

absl::Status ShardIndexError(const std::string& source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      source, ": ", what,
      " (expected HF's {\"metadata\": {...}, \"weight_map\": {tensor: shard file}}; re-create "
      "the checkpoint with save_pretrained or SaveShardedSafetensors)"));
}

absl::StatusOr<std::map<std::string, std::string>> ParseShardIndex(absl::string_view text,
                                                                   const std::string& source) {
  const nlohmann::json index =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded()) return ShardIndexError(source, "not valid JSON");
  if (!index.is_object()) return ShardIndexError(source, "not a JSON object");
  const auto map_it = index.find("weight_map");
  if (map_it == index.end() || !map_it->is_object()) {
    return ShardIndexError(source, "no \"weight_map\" object");
  }
  std::map<std::string, std::string> weight_map;
  for (const auto& [tensor, file] : map_it->items()) {
    if (!file.is_string()) {
      return ShardIndexError(source, absl::StrCat("weight_map[\"", tensor, "\"] is not a string"));
    }
    const std::string name = file.get<std::string>();
    if (name.empty() || name == "." || name == ".." ||
        name.find_first_of(std::string("/\\\0", 3)) != std::string::npos) {
      return ShardIndexError(source, absl::StrCat("weight_map[\"", tensor, "\"] = \"", name,
                                                  "\" is not a file name in the index's folder"));
    }
    weight_map.emplace(tensor, name);
  }
  return weight_map;
}

std::string ShardIndexJson(uint64_t total_size,
                           const std::map<std::string, std::string>& weight_map) {
  nlohmann::json index;
  index["metadata"]["total_size"] = total_size;
  index["weight_map"] = nlohmann::json::object();
  for (const auto& [tensor, file] : weight_map) index["weight_map"][tensor] = file;
  // nlohmann's objects are sorted maps, its indent matches json.dumps(indent=2), and
  // ensure_ascii matches Python's default \uXXXX escapes.
  return index.dump(2, ' ', /*ensure_ascii=*/true) + "\n";
}

}  // namespace loom::checkpoint
