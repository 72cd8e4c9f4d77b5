// Swap space for ZeRO-Infinity: the checks of an nvme_path and the pieces every
// swapper needs there — the aio engine and its own scratch folder (optimizer_swapper.h,
// param_swapper.h).
//
// Contract (`key` names the config key in every message, e.g.
// "zero_optimization.offload_param.nvme_path"):
//   - CheckNvmePath: before any work — `path` exists, is a folder, takes new files, and
//     aio.block_size is a multiple of its filesystem's block size (and valid for the engine).
//     Returns whether the filesystem takes O_DIRECT (false: buffered I/O, the fallback taken).
//   - CheckSwapSpace: ResourceExhausted, naming the key, `path` and the sizes, when its
//     filesystem has fewer than `bytes` free (statvfs: blocks available to unprivileged users).
//   - OpenSwapSpace: both checks for `bytes`, then the engine and a scratch folder
//     path/prefix-XXXXXX (base/scratch_folder.h: removed at exit and on SIGINT/SIGTERM/SIGHUP).
//
// Example:
//   ASSIGN_OR_RETURN(SwapSpace space, OpenSwapSpace(key, "/local_nvme", aio, bytes, "loom-swap"));
//   RETURN_IF_ERROR(space.engine->Write(space.folder->path() + "/x.swp", buf.data(), n));
#ifndef LOOM_SHARDING_OFFLOAD_SWAP_SPACE_H_
#define LOOM_SHARDING_OFFLOAD_SWAP_SPACE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "aio/aio_engine.h"
#include "base/scratch_folder.h"

namespace loom::sharding {

absl::StatusOr<bool> CheckNvmePath(const std::string& key, const std::string& path,
                                   const aio::AioOptions& aio);
absl::Status CheckSwapSpace(const std::string& key, const std::string& path, int64_t bytes);

struct SwapSpace {
  bool direct = true;  // O_DIRECT taken
  std::unique_ptr<aio::AioEngine> engine;
  std::unique_ptr<base::ScratchFolder> folder;
};
absl::StatusOr<SwapSpace> OpenSwapSpace(const std::string& key, const std::string& path,
                                        const aio::AioOptions& aio, int64_t bytes,
                                        const std::string& prefix);

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_OFFLOAD_SWAP_SPACE_H_
