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
//   - Placeholder(dtype, numel): a 1-D CPU tensor with a storage of numel elements and no
//     bytes (its data pointer is null; never read or write it as a tensor). Put placeholders
//     (or views of them) in the value given to Create; every other tensor in it is written from
//     its own data by Create.
//   - Create(path, value): pickles `value` as SavePickle does (containers without TorchScript
//     type tags, so torch.load(weights_only=True) reads the file) and lays the archive out:
//     "archive/data.pkl", "archive/byteorder", one "archive/data/<key>" record per storage,
//     "archive/version". The file is an AtomicFileWriter's: `path` is untouched until Commit.
//   - Write(placeholder, begin, values): elements [begin, begin + values.numel()) of the
//     placeholder's storage, from `values` (contiguous or not, same dtype, CPU). A storage's
//     pieces come in order (begin is where the last piece ended); storages may interleave.
//     Out-of-order, out-of-range or wrong-dtype pieces, and tensors that are not placeholders
//     of this file, are InvalidArgument (the file stays unwritten).
//   - Commit(): every placeholder must be whole (FailedPrecondition naming the record
//     otherwise); writes the local headers with their CRCs and the central directory, fsyncs
//     and renames the file into place. Destroying the writer without Commit leaves nothing.
//   - options.zip64_threshold: sizes and offsets at or past it are written as zip64 fields
//     (default 0xFFFFFFFF, where zip needs them; tests set it low to exercise them).
//   Python's torch.load, LibTorch's readers (LoadPickle) and LazyTorchSave read the file.
//
// Example:
//   at::Tensor flat = TorchSaveWriter::Placeholder(at::kFloat, n);
//   c10::impl::GenericDict d(...); d.insert("fp32", flat);
//   ASSIGN_OR_RETURN(auto out, TorchSaveWriter::Create(path, d));
//   for (piece : pieces) RETURN_IF_ERROR(out->Write(flat, piece.begin, piece.values));
//   RETURN_IF_ERROR(out->Commit());
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
  static at::Tensor Placeholder(at::ScalarType dtype, int64_t numel);
  static absl::StatusOr<std::unique_ptr<TorchSaveWriter>> Create(
      const std::string& path, const c10::IValue& value,
      const TorchSaveWriterOptions& options = {});

  absl::Status Write(const at::Tensor& placeholder, int64_t begin, const at::Tensor& values);
  absl::Status Commit();

 private:
  struct Record {
    std::string name;
    uint64_t size = 0;         // bytes
    uint64_t header = 0;       // offset of the local header
    uint64_t data = 0;         // offset of the data
    uint64_t written = 0;      // bytes written so far (in order)
    uint32_t crc = 0;
    std::string local_header;  // laid out at Create; the CRC is filled in at Commit
  };

  explicit TorchSaveWriter(AtomicFileWriter file) : file_(std::move(file)) {}
  absl::Status AddRecord(const std::string& name, uint64_t size);
  absl::Status WriteRecord(Record& record, const void* bytes, uint64_t size);
  std::string CentralDirectory() const;

  AtomicFileWriter file_;
  TorchSaveWriterOptions options_;
  std::vector<Record> records_;
  uint64_t end_ = 0;                        // where the next record's header goes
  std::map<const void*, size_t> storages_;  // a placeholder's StorageImpl -> its record
};

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_TORCH_SAVE_WRITER_H_
