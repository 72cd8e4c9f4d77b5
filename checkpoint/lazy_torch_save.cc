#include "checkpoint/lazy_torch_save.h"

#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/memory/memory.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/python_unpickler.h"

namespace loom::checkpoint {

absl::StatusOr<std::unique_ptr<LazyTorchSave>> LazyTorchSave::Open(const std::string& path) {
  auto file = absl::WrapUnique(new LazyTorchSave());
  file->path_ = path;
  file->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file->fd_ < 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(file->fd_, &st) != 0) {
    return absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  char magic[4] = {0};
  if (::pread(file->fd_, magic, 4, 0) != 4 || std::memcmp(magic, "PK\x03\x04", 4) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a torch.save zip archive (torch >= 1.6's default format)"));
  }
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    if (!reader.hasRecord("data.pkl")) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": no data.pkl: not a torch.save file"));
    }
    auto [pickle, pickle_size] = reader.getRecord("data.pkl");
    LazyTorchSave* self = file.get();
    ASSIGN_OR_RETURN(
        file->value_,
        RunTorchPickle(
            absl::string_view(static_cast<const char*>(pickle.get()), pickle_size),
            [&reader, self, file_size](const std::string& key, c10::ScalarType dtype,
                                       int64_t numel) -> absl::StatusOr<at::Tensor> {
              const std::string record = "data/" + key;
              if (numel < 0 || !reader.hasRecord(record)) {
                return absl::InvalidArgumentError(absl::StrCat("storage ", absl::CHexEscape(key),
                                                               " is missing from the archive"));
              }
              Storage s{reader.getRecordOffset(record), dtype, numel};
              const uint64_t size = c10::elementSize(dtype);
              if (s.offset > file_size ||
                  static_cast<uint64_t>(numel) > (file_size - s.offset) / size) {
                return absl::InvalidArgumentError(absl::StrCat("storage ", absl::CHexEscape(key),
                                                               " of ", numel,
                                                               " elements ends past the file"));
              }
              const uint64_t bytes = static_cast<uint64_t>(numel) * size;
              if (bytes > file_size - s.offset) {
                return absl::InvalidArgumentError(absl::StrCat(
                    "storage ", absl::CHexEscape(key), " of ", bytes, " bytes ends past the file"));
              }
              at::Tensor placeholder =
                  at::empty({numel}, at::TensorOptions().dtype(dtype).device(at::kMeta));
              self->storages_[placeholder.storage().unsafeGetStorageImpl()] = s;
              return placeholder;
            }),
        path);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, path);
  }
  return file;
}

LazyTorchSave::~LazyTorchSave() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<const LazyTorchSave::Storage*> LazyTorchSave::Find(const at::Tensor& t) const {
  if (!t.defined() || !t.has_storage()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": not a tensor of this file"));
  }
  auto it = storages_.find(t.storage().unsafeGetStorageImpl());
  if (it == storages_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": not a tensor of this file"));
  }
  return &it->second;
}

absl::Status LazyTorchSave::Pread(void* dst, uint64_t bytes, uint64_t offset) const {
  char* out = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd_, out, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::DataLossError(absl::StrCat(path_, ": reading at ", offset, ": ",
                                              n < 0 ? std::strerror(errno) : "end of file"));
    }
    out += n;
    bytes -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status LazyTorchSave::ReadElements(const at::Tensor& t, int64_t begin, int64_t count,
                                         void* dst) const {
  ASSIGN_OR_RETURN(const Storage* s, Find(t));
  if (t.dim() != 1 || (t.numel() > 1 && t.stride(0) != 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": ReadElements needs a 1-D, stride-1 tensor"));
  }
  if (begin < 0 || count < 0 || begin > t.numel() || count > t.numel() - begin ||
      t.storage_offset() + t.numel() > s->numel) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": elements [", begin, ", ",
                                                   begin + count, ") of a tensor of ", t.numel()));
  }
  const uint64_t size = c10::elementSize(s->dtype);
  return Pread(dst, static_cast<uint64_t>(count) * size,
               s->offset + static_cast<uint64_t>(t.storage_offset() + begin) * size);
}

absl::StatusOr<at::Tensor> LazyTorchSave::Materialize(const at::Tensor& t) const {
  ASSIGN_OR_RETURN(const Storage* s, Find(t));
  try {
    at::Tensor storage = at::empty({s->numel}, at::TensorOptions().dtype(s->dtype));
    RETURN_IF_ERROR(Pread(storage.data_ptr(),
                          static_cast<uint64_t>(s->numel) * c10::elementSize(s->dtype), s->offset));
    return storage.as_strided(t.sizes(), t.strides(), t.storage_offset()).clone();
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, path_);
  }
}

}  // namespace loom::checkpoint
