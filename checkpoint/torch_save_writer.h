// TorchSaveWriter: a torch.save file (the zip format of torch >= 1.6) whose large tensors are
// written piece by piece after the file is laid out, so a checkpoint bigger than memory (a ZeRO-3
// rank's optimizer partitions under NVMe offload) is saved holding one piece at a time.
// SavePickle (torch_pickle.h) needs every tensor whole in memory; LibTorch's zip writer
// (caffe2::serialize::PyTorchStreamWriter) takes each record as one buffer, so the archive
// here is written by hand: stored (uncompressed) records, each record's data aligned to 64
// bytes as torch.save aligns it, CRC-32 from zlib, and zip64 fields where a size, an offset or
// the record count passes what plain zip holds.
//
// Contract:
//   - Create(path): an AtomicFileWriter's file: `path` is untouched until Commit.
//   - Reserve(dtype, numel): a 1-D CPU tensor with a storage of numel elements and no bytes
//     (its data pointer is null; never read or write it as a tensor), whose bytes get a place
//     in the file now. Put it (or views of it) in the value given to Commit.
//   - Write(placeholder, begin, values): elements [begin, begin + values.numel()) of the
//     placeholder's storage, from `values` (contiguous or not, same dtype, CPU). A storage's
//     pieces come in order (begin is where the last piece ended); storages may interleave.
//     Out-of-order, out-of-range or wrong-dtype pieces, and tensors that are not placeholders
//     of this file, are InvalidArgument. WriteZeros(placeholder, end) fills up to `end`.
//   - Commit(value): pickles `value` as SavePickle does (containers without TorchScript type
//     tags, so torch.load(weights_only=True) reads it); every placeholder must be in it and
//     whole (FailedPrecondition naming it otherwise); its other tensors are written from their
//     own data. The archive then holds one "archive/data/<key>" record per storage (the
//     placeholders' where Reserve put them), "archive/data.pkl", "archive/byteorder" and
//     "archive/version"; the central directory is written, the file fsynced and renamed into
//     place. Destroying the writer without a successful Commit leaves nothing (after a failed
//     Commit, only destroying it is left).
//   - options.zip64_threshold: sizes and offsets at or past it are written as zip64 fields
//     (default 0xFFFFFFFF, where zip needs them; tests set it low to exercise them).
//   Python's torch.load (also with mmap=True), LibTorch's readers (LoadPickle) and
//   LazyTorchSave read the file; zip's record order is free, so the pickle can come last.
//
// Example:
//   ASSIGN_OR_RETURN(auto out, TorchSaveWriter::Create(path));
//   ASSIGN_OR_RETURN(at::Tensor flat, out->Reserve(at::kFloat, n));
//   for (piece : pieces) RETURN_IF_ERROR(out->Write(flat, piece.begin, piece.values));
//   c10::impl::GenericDict d(...); d.insert("fp32", flat);
//   RETURN_IF_ERROR(out->Commit(d));
#ifndef LOOM_CHECKPOINT_TORCH_SAVE_WRITER_H_
#define LOOM_CHECKPOINT_TORCH_SAVE_WRITER_H_

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/atomic_file_writer.h"

namespace loom::checkpoint {

struct TorchSaveWriterOptions {
  uint64_t zip64_threshold = 0xFFFFFFFFu;
};

class TorchSaveWriter {
 public:
  static absl::StatusOr<std::unique_ptr<TorchSaveWriter>> Create(
      const std::string& path, const TorchSaveWriterOptions& options = {});

  absl::StatusOr<at::Tensor> Reserve(at::ScalarType dtype, int64_t numel);
  absl::Status Write(const at::Tensor& placeholder, int64_t begin, const at::Tensor& values);
  absl::Status WriteZeros(const at::Tensor& placeholder, int64_t end);
  absl::Status Commit(const c10::IValue& value);

 private:
  struct Record {
    std::string name;      // a placeholder's: given at Commit
    uint64_t size = 0;     // bytes
    uint64_t header = 0;   // offset of the local header
    uint64_t data = 0;     // offset of the data
    uint64_t written = 0;  // bytes written so far (in order)
    uint32_t crc = 0;
  };

  explicit TorchSaveWriter(AtomicFileWriter file) : file_(std::move(file)) {}
  Record& AddRecord(const std::string& name, uint64_t size);
  absl::Status WriteRecord(Record& record, const void* bytes, uint64_t size);
  absl::Status NameRecords(const std::vector<at::Tensor>& storages);
  std::string LocalHeader(const Record& r) const;
  std::string CentralDirectory() const;
  std::string EndOfCentralDirectory(uint64_t cd_offset, uint64_t cd_size) const;

  AtomicFileWriter file_;
  TorchSaveWriterOptions options_;
  std::vector<Record> records_;
  uint64_t end_ = 0;                        // where the next record's header goes
  std::map<const void*, size_t> storages_;  // a placeholder's StorageImpl -> its record
  std::vector<at::Tensor> placeholders_;    // kept alive until Commit
};

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_TORCH_SAVE_WRITER_H_
