#include "checkpoint/safetensors_sharded.h"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/shard_index.h"

namespace loom::checkpoint {
namespace {

namespace fs = std::filesystem;

std::string StripWeightSuffixes(absl::string_view name) {
  return absl::StrReplaceAll(absl::StrReplaceAll(name, {{".bin", ""}}), {{".safetensors", ""}});
}

// HF's `re.compile(r"(.*?)-\d{5}-of-\d{5}").fullmatch(name)`.
bool LooksLikeShard(absl::string_view name_no_suffix) {
  constexpr absl::string_view kPattern = "-#####-of-#####";
  if (name_no_suffix.size() < kPattern.size()) return false;
  const absl::string_view tail = name_no_suffix.substr(name_no_suffix.size() - kPattern.size());
  for (size_t i = 0; i < kPattern.size(); ++i) {
    if (kPattern[i] == '#' ? !absl::ascii_isdigit(tail[i]) : tail[i] != kPattern[i]) {
      return false;
    }
  }
  return true;
}

// HF's clean-up of an earlier save's shards in `dir`, and loom's of the other layout.
absl::Status RemoveStaleFiles(const std::string& dir, const std::string& weights_name,
                              const std::set<std::string>& keep, bool sharded) {
  const std::string stem = StripWeightSuffixes(weights_name);
  std::error_code ec;
  std::vector<std::string> doomed;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, stem) && entry.is_regular_file() && keep.count(name) == 0 &&
        LooksLikeShard(StripWeightSuffixes(name))) {
      doomed.push_back(entry.path().string());
    }
    // A killed save's partial shards (WriteShards).
    if (absl::StartsWith(name, "." + stem) && absl::EndsWith(name, ".loom-partial")) {
      doomed.push_back(entry.path().string());
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot list '", dir, "': ", ec.message()));
  // The other layout's leftover: a single file after a sharded save, an index after a
  // single-file save.
  const std::string other = absl::StrCat(dir, "/", weights_name, sharded ? "" : ".index.json");
  if (fs::exists(other, ec)) doomed.push_back(other);
  for (const std::string& path : doomed) {
    if (!fs::remove(path, ec) && ec) {
      return absl::InternalError(
          absl::StrCat("cannot remove the stale file '", path, "': ", ec.message()));
    }
  }
  if (!doomed.empty()) RETURN_IF_ERROR(base::FsyncDirectory(dir));
  return absl::OkStatus();
}

// The weight map of the index at `path`, validated (shard_index.h).
absl::StatusOr<std::map<std::string, std::string>> ReadWeightMap(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, base::ReadFile(path));
  return ParseShardIndex(text, path);
}

}  // namespace

ShardPlan PlanShards(const NamedTensors& tensors, uint64_t max_shard_size) {
  ShardPlan plan;
  plan.shards.emplace_back();
  uint64_t current = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i].second;
    const uint64_t size = t.defined() ? static_cast<uint64_t>(t.numel()) * t.element_size() : 0;
    if (current + size > max_shard_size && !plan.shards.back().empty()) {
      plan.shards.emplace_back();
      current = 0;
    }
    plan.shards.back().push_back(i);
    current += size;
    plan.total_size += size;
  }
  return plan;
}

std::string ShardFileName(absl::string_view weights_name, size_t index, size_t count) {
  const std::string part = absl::StrFormat("-%05d-of-%05d", index + 1, count);
  return absl::StrReplaceAll(
      absl::StrReplaceAll(weights_name, {{".bin", absl::StrCat(part, ".bin")}}),
      {{".safetensors", absl::StrCat(part, ".safetensors")}});
}

namespace {

// Where shard `file` is written before every shard is: hidden, and never a name a loader reads.
std::string PartialName(const std::string& file) {
  return absl::StrCat(".", file, ".loom-partial");
}

// Writes every shard of `plan` under its partial name, then renames them all to their final
// names: a save that fails part way (a full disk) leaves no shard of an incomplete set under a
// final name, and the folder's previous files untouched. On failure the partial files go.
absl::Status WriteShards(const std::string& dir, const NamedTensors& tensors, const ShardPlan& plan,
                         const std::string& weights_name, const ShardWriter& write_file,
                         std::map<std::string, std::string>& weight_map,
                         std::vector<std::string>& written) {
  std::vector<std::string> partial;
  absl::Status status = absl::OkStatus();
  for (size_t s = 0; s < plan.shards.size() && status.ok(); ++s) {
    const std::string file = ShardFileName(weights_name, s, plan.shards.size());
    NamedTensors shard;
    for (size_t i : plan.shards[s]) {
      shard.push_back(tensors[i]);
      weight_map[tensors[i].first] = file;
    }
    status = write_file(absl::StrCat(dir, "/", PartialName(file)), shard);
    if (status.ok()) partial.push_back(file);
  }
  for (const std::string& file : partial) {
    std::error_code ec;
    const std::string from = absl::StrCat(dir, "/", PartialName(file));
    if (!status.ok()) {
      fs::remove(from, ec);
      continue;
    }
    fs::rename(from, absl::StrCat(dir, "/", file), ec);
    if (ec) {
      status = absl::InternalError(absl::StrCat("renaming ", from, ": ", ec.message()));
      fs::remove(from, ec);
      continue;
    }
    written.push_back(file);
  }
  return status;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SaveShardedFiles(const std::string& dir,
                                                          const NamedTensors& tensors,
                                                          uint64_t max_shard_size,
                                                          const std::string& weights_name,
                                                          const ShardWriter& write_file) {
  const ShardPlan plan = PlanShards(tensors, max_shard_size);
  std::vector<std::string> written;
  const std::string index_name = weights_name + ".index.json";
  if (plan.shards.size() == 1) {
    RETURN_IF_ERROR(write_file(absl::StrCat(dir, "/", weights_name), tensors));
    written.push_back(weights_name);
  } else {
    std::map<std::string, std::string> weight_map;
    RETURN_IF_ERROR(WriteShards(dir, tensors, plan, weights_name, write_file, weight_map, written));
    RETURN_IF_ERROR(base::WriteFileAtomically(absl::StrCat(dir, "/", index_name),
                                              ShardIndexJson(plan.total_size, weight_map)));
    written.push_back(index_name);
  }
  RETURN_IF_ERROR(RemoveStaleFiles(dir, weights_name,
                                   std::set<std::string>(written.begin(), written.end()),
                                   /*sharded=*/plan.shards.size() > 1));
  return written;
}

absl::StatusOr<NamedTensors> LoadShardedFiles(const std::string& index_path,
                                              const ShardReader& read_file) {
  ASSIGN_OR_RETURN(const auto weight_map, ReadWeightMap(index_path));
  const std::string dir = base::Dirname(index_path);
  std::map<std::string, std::vector<std::string>> by_shard;  // sorted by shard name
  for (const auto& [tensor, file] : weight_map) by_shard[file].push_back(tensor);

  NamedTensors result;
  std::unordered_map<std::string, std::string> seen;  // tensor -> shard
  for (const auto& [file, expected] : by_shard) {
    ASSIGN_OR_RETURN(NamedTensors shard, read_file(absl::StrCat(dir, "/", file)),
                     absl::StrCat("loading a shard named by ", index_path));
    for (const std::string& name : expected) {
      if (FindTensor(shard, name) == nullptr) {
        return ShardIndexError(index_path, absl::StrCat("tensor \"", name, "\" is mapped to ", file,
                                                        ", which does not hold it"));
      }
    }
    for (auto& [name, tensor] : shard) {
      auto [it, inserted] = seen.emplace(name, file);
      if (!inserted) {
        return ShardIndexError(index_path, absl::StrCat("tensor \"", name, "\" is in both ",
                                                        it->second, " and ", file));
      }
      result.emplace_back(name, std::move(tensor));
    }
  }
  return result;
}

absl::StatusOr<std::vector<std::string>> SaveShardedSafetensors(const std::string& dir,
                                                                const NamedTensors& tensors,
                                                                const SaveShardedOptions& options) {
  return SaveShardedFiles(dir, tensors, options.max_shard_size, options.weights_name,
                          [&options](const std::string& path, const NamedTensors& shard) {
                            return SaveSafetensors(path, shard, options.metadata);
                          });
}

absl::StatusOr<SafetensorsFile> LoadShardedSafetensors(const std::string& index_path,
                                                       SafetensorsLoadOptions options) {
  SafetensorsFile result;
  bool first = true;
  ASSIGN_OR_RETURN(
      result.tensors,
      LoadShardedFiles(index_path, [&](const std::string& path) -> absl::StatusOr<NamedTensors> {
        ASSIGN_OR_RETURN(SafetensorsFile shard, LoadSafetensors(path, options));
        if (first) result.metadata = std::move(shard.metadata);
        first = false;
        return std::move(shard.tensors);
      }));
  return result;
}

absl::StatusOr<SafetensorsFile> LoadSafetensorsCheckpoint(const std::string& dir,
                                                          SafetensorsLoadOptions options) {
  const std::string single = absl::StrCat(dir, "/", kSafetensorsWeightsName);
  const std::string index = absl::StrCat(dir, "/", kSafetensorsIndexName);
  std::error_code ec;
  if (fs::exists(single, ec)) return LoadSafetensors(single, options);
  if (fs::exists(index, ec)) return LoadShardedSafetensors(index, options);
  return absl::NotFoundError(absl::StrCat("'", dir, "' holds neither ", kSafetensorsWeightsName,
                                          " nor ", kSafetensorsIndexName));
}

}  // namespace loom::checkpoint
