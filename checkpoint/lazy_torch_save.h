// LazyTorchSave: a torch.save file (zip format) read without its tensor data, for consolidating
// checkpoints larger than memory (zero_to_fp32). The pickle program runs with every
// storage a placeholder on the meta device (no bytes); the tensors in value() are views of
// those placeholders with their true dtype, shape, stride and offset. ReadElements copies a
// range of one such tensor straight from the file (torch.save stores records uncompressed, so a
// storage's bytes lie at a fixed offset), and Materialize reads a whole tensor.
//
// Contract:
//   - Open(path): InvalidArgument for a file that is not a torch.save zip archive zip_reader.h
//     accepts or whose pickle python_unpickler.h rejects; a storage record that is missing or
//     of another size than its element count is an error when opening, naming the storage.
//   - ReadElements(t, begin, count, dst): t must be a tensor of value() that is 1-D with stride
//     1; elements [begin, begin + count) of it are copied into dst (count x element size bytes,
//     t's dtype). Out-of-range requests are InvalidArgument; nothing is read past the storage.
//   - Materialize(t): a CPU tensor equal to t's view of the file's data (its record's CRC-32
//     checked).
//
// Example:
//   ASSIGN_OR_RETURN(auto file, LazyTorchSave::Open(path));
//   const at::Tensor part = file->value().toGenericDict().at("weights").toTensor();
//   RETURN_IF_ERROR(file->ReadElements(part, 0, n, out.data_ptr<float>()));
#ifndef LOOM_CHECKPOINT_LAZY_TORCH_SAVE_H_
#define LOOM_CHECKPOINT_LAZY_TORCH_SAVE_H_

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/zip_reader.h"

namespace loom::checkpoint {

class LazyTorchSave {
 public:
  static absl::StatusOr<std::unique_ptr<LazyTorchSave>> Open(const std::string& path);
  ~LazyTorchSave();

  const c10::IValue& value() const { return value_; }
  absl::Status ReadElements(const at::Tensor& t, int64_t begin, int64_t count, void* dst) const;
  absl::StatusOr<at::Tensor> Materialize(const at::Tensor& t) const;

 private:
  struct Storage {
    const ZipReader::Record* record = nullptr;  // of zip_
    c10::ScalarType dtype = at::kFloat;
    int64_t numel = 0;
  };
  LazyTorchSave() = default;
  absl::StatusOr<const Storage*> Find(const at::Tensor& t) const;

  std::string path_;
  std::unique_ptr<ZipReader> zip_;
  c10::IValue value_;
  std::map<const void*, Storage> storages_;  // by the placeholder's StorageImpl
};

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_LAZY_TORCH_SAVE_H_
