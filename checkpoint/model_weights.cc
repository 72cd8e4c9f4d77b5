#include "checkpoint/model_weights.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/safetensors_sharded.h"
#include "checkpoint/torch_pickle.h"

namespace loom::checkpoint {
namespace {

bool IsFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

absl::StatusOr<NamedTensors> ReadSafetensors(const std::string& path) {
  ASSIGN_OR_RETURN(SafetensorsFile file, LoadSafetensors(path));
  return std::move(file.tensors);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SaveModelWeights(const std::string& dir,
                                                          const NamedTensors& state_dict,
                                                          const SaveModelWeightsOptions& options) {
  if (options.safe_serialization) {
    SaveShardedOptions sharded;
    sharded.max_shard_size = options.max_shard_size;
    return SaveShardedSafetensors(dir, state_dict, sharded);
  }
  return SaveShardedFiles(dir, state_dict, options.max_shard_size, std::string(kTorchWeightsName),
                          SaveTorchStateDict);
}

absl::StatusOr<LoadedWeights> LoadModelWeights(const std::string& dir, bool prefer_safetensors) {
  const std::string safe = absl::StrCat(dir, "/", kSafetensorsWeightsName);
  const std::string bin = absl::StrCat(dir, "/", kTorchWeightsName);
  const std::string safe_index = absl::StrCat(dir, "/", kSafetensorsIndexName);
  const std::string bin_index = absl::StrCat(dir, "/", kTorchIndexName);
  LoadedWeights out;
  if (IsFile(safe) && (prefer_safetensors || !IsFile(bin))) {
    out.source = safe;
    ASSIGN_OR_RETURN(out.tensors, ReadSafetensors(safe));
  } else if (IsFile(bin)) {
    out.source = bin;
    ASSIGN_OR_RETURN(out.tensors, LoadTorchStateDict(bin));
  } else if (IsFile(safe_index) && (prefer_safetensors || !IsFile(bin_index))) {
    out.source = safe_index;
    ASSIGN_OR_RETURN(out.tensors, LoadShardedFiles(safe_index, ReadSafetensors));
  } else if (IsFile(bin_index)) {
    out.source = bin_index;
    ASSIGN_OR_RETURN(out.tensors, LoadShardedFiles(bin_index, LoadTorchStateDict));
  } else {
    return absl::NotFoundError(absl::StrCat(
        "Can't find a valid checkpoint at ", dir, " (looked for ", kSafetensorsWeightsName, ", ",
        kTorchWeightsName, ", ", kSafetensorsIndexName, " and ", kTorchIndexName, ")"));
  }
  return out;
}

absl::StatusOr<LoadStateDictResult> LoadModelWeightsInto(torch::nn::Module& module,
                                                         const std::string& dir,
                                                         LoadStateDictOptions options,
                                                         bool prefer_safetensors) {
  ASSIGN_OR_RETURN(const LoadedWeights weights, LoadModelWeights(dir, prefer_safetensors));
  ASSIGN_OR_RETURN(LoadStateDictResult result, LoadStateDict(module, weights.tensors, options),
                   weights.source);
  return result;
}

}  // namespace loom::checkpoint
