#include "sharding/offload/swap_space.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "glog/logging.h"

namespace loom::sharding {

absl::StatusOr<bool> CheckNvmePath(const std::string& key, const std::string& path,
                                   const aio::AioOptions& aio) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(key, ": ", path, ": ", std::strerror(errno),
                                            "; create the folder, or point nvme_path at a "
                                            "folder on a fast local disk"));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": ", path, " is not a folder; point nvme_path at a folder"));
  }
  absl::StatusOr<bool> direct = aio::CheckDirectIo(path);
  if (!direct.ok()) {
    return absl::Status(direct.status().code(),
                        absl::StrCat(key, ": ", direct.status().message(),
                                     " (the swap files need a writable folder)"));
  }
  struct statvfs vfs;
  if (::statvfs(path.c_str(), &vfs) == 0 && vfs.f_bsize > 0 &&
      aio.block_size % static_cast<int64_t>(vfs.f_bsize) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "aio.block_size: ", aio.block_size, " is not a multiple of the block size ", vfs.f_bsize,
        " of the filesystem holding ", path, "; use a multiple of it (e.g. 1048576)"));
  }
  RETURN_IF_ERROR(aio::AioEngine::Create(aio).status());
  return *direct;
}

absl::Status CheckSwapSpace(const std::string& key, const std::string& path, int64_t bytes) {
  struct statvfs vfs;
  if (::statvfs(path.c_str(), &vfs) != 0) {
    return absl::InternalError(absl::StrCat(key, ": statvfs ", path, ": ", std::strerror(errno)));
  }
  const long double free_bytes =
      static_cast<long double>(vfs.f_bavail) * static_cast<long double>(vfs.f_frsize);
  if (free_bytes < static_cast<long double>(bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        key, ": ", path, " has ", static_cast<int64_t>(free_bytes),
        " bytes free but the swap files need ", bytes,
        "; free space there, point nvme_path at a larger disk, or offload to \"cpu\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<SwapSpace> OpenSwapSpace(const std::string& key, const std::string& path,
                                        const aio::AioOptions& aio, int64_t bytes,
                                        const std::string& prefix) {
  SwapSpace space;
  ASSIGN_OR_RETURN(space.direct, CheckNvmePath(key, path, aio));
  ASSIGN_OR_RETURN(space.engine, aio::AioEngine::Create(aio));
  // The folder first: creating it removes the swap folders of killed runs, whose space the
  // check below then counts as free.
  ASSIGN_OR_RETURN(space.folder, base::ScratchFolder::Create(path, prefix), key);
  for (const std::string& stale : space.folder->stale_removed()) {
    LOG(WARNING) << key << ": removed " << path << "/" << stale
                 << ", the swap folder of a run that was killed before it could clean up";
  }
  RETURN_IF_ERROR(CheckSwapSpace(key, path, bytes));
  return space;
}

}  // namespace loom::sharding
