#include "checkpoint/lazy_torch_save.h"

#include "absl/memory/memory.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/python_unpickler.h"
#include "checkpoint/zip_reader.h"

namespace loom::checkpoint {

absl::StatusOr<std::unique_ptr<LazyTorchSave>> LazyTorchSave::Open(const std::string& path) {
  auto file = absl::WrapUnique(new LazyTorchSave());
  file->path_ = path;
  ASSIGN_OR_RETURN(file->zip_, ZipReader::Open(path));
  const ZipReader& zip = *file->zip_;
  const ZipReader::Record* pkl = zip.Find("data.pkl");
  if (pkl == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no data.pkl: not a torch.save file"));
  }
  ASSIGN_OR_RETURN(const std::string program, zip.ReadAll(*pkl), path);
  LazyTorchSave* self = file.get();
  ASSIGN_OR_RETURN(
      file->value_,
      RunTorchPickle(program,
                     [&zip, self](const std::string& key, c10::ScalarType dtype,
                                  int64_t numel) -> absl::StatusOr<at::Tensor> {
                       ASSIGN_OR_RETURN(const ZipReader::Record* record,
                                        FindStorageRecord(zip, key, dtype, numel));
                       at::Tensor placeholder =
                           at::empty({numel}, at::TensorOptions().dtype(dtype).device(at::kMeta));
                       self->storages_[placeholder.storage().unsafeGetStorageImpl()] =
                           Storage{record, dtype, numel};
                       return placeholder;
                     }),
      path);
  return file;
}

LazyTorchSave::~LazyTorchSave() = default;

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
  RETURN_IF_ERROR_CTX(
      zip_->ReadAt(*s->record, static_cast<uint64_t>(t.storage_offset() + begin) * size,
                   static_cast<uint64_t>(count) * size, dst),
      path_);
  return absl::OkStatus();
}

absl::StatusOr<at::Tensor> LazyTorchSave::Materialize(const at::Tensor& t) const {
  ASSIGN_OR_RETURN(const Storage* s, Find(t));
  try {
    at::Tensor storage = at::empty({s->numel}, at::TensorOptions().dtype(s->dtype));
    RETURN_IF_ERROR_CTX(zip_->ReadAll(*s->record, storage.data_ptr()), path_);
    return storage.as_strided(t.sizes(), t.strides(), t.storage_offset()).clone();
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, path_);
  }
}

}  // namespace loom::checkpoint
