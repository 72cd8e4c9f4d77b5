#include "checkpoint/torch_save_writer.h"

#include <zlib.h>

#include <algorithm>
#include <set>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/torch_pickle.h"
#include "checkpoint/zip_format.h"

namespace loom::checkpoint {
namespace {

using zip_format::kCentralHeader;
using zip_format::kEndOfCentralDirectory;
using zip_format::kLocalHeader;
using zip_format::kPaddingExtraId;
using zip_format::kZip64EndOfCentralDirectory;
using zip_format::kZip64ExtraId;
using zip_format::kZip64Locator;
using zip_format::Put16;
using zip_format::Put32;
using zip_format::Put64;

constexpr uint64_t kAlignment = 64;            // torch.save aligns each record's data
constexpr uint16_t kDosDate = 0x0021;          // 1980-01-01, time 00:00
constexpr size_t kMaxRecordName = 32;          // "archive/data/" and a 19-digit key

uint16_t VersionNeeded(bool zip64) { return zip64 ? 45 : 20; }

uint32_t Crc32(uint32_t crc, const void* data, uint64_t size) {
  return static_cast<uint32_t>(
      crc32_z(crc, static_cast<const Bytef*>(data), static_cast<z_size_t>(size)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TorchSaveWriter>> TorchSaveWriter::Create(
    const std::string& path, const TorchSaveWriterOptions& options) {
  ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::Create(path));
  auto out = absl::WrapUnique(new TorchSaveWriter(std::move(file)));
  out->options_ = options;
  return out;
}

absl::StatusOr<at::Tensor> TorchSaveWriter::Reserve(at::ScalarType dtype, int64_t numel) {
  if (numel < 0) return absl::InvalidArgumentError("TorchSaveWriter::Reserve: numel < 0");
  const uint64_t bytes = static_cast<uint64_t>(numel) * c10::elementSize(dtype);
  try {
    c10::Storage storage(c10::Storage::use_byte_size_t(), bytes,
                         c10::DataPtr(nullptr, c10::Device(c10::kCPU)), /*allocator=*/nullptr,
                         /*resizable=*/false);
    at::Tensor t = at::empty({0}, at::TensorOptions().dtype(dtype)).set_(storage, 0, {numel}, {1});
    // The name ("archive/data/<key>") comes at Commit: room for the longest is kept.
    AddRecord(std::string(kMaxRecordName, ' '), bytes);
    storages_[t.storage().unsafeGetStorageImpl()] = records_.size() - 1;
    placeholders_.push_back(t);
    return t;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "TorchSaveWriter::Reserve");
  }
}

// A record at the end of the file: room for its local header (zip64 sizes when it needs them)
// and the padding that aligns its data.
TorchSaveWriter::Record& TorchSaveWriter::AddRecord(const std::string& name, uint64_t size) {
  Record r;
  r.name = name;
  r.size = size;
  r.header = end_;
  const bool zip64 = size >= options_.zip64_threshold;
  const uint64_t before_padding = end_ + 30 + name.size() + (zip64 ? 20 : 0) + 4;
  r.data = (before_padding + kAlignment - 1) / kAlignment * kAlignment;
  end_ = r.data + size;
  records_.push_back(std::move(r));
  return records_.back();
}

std::string TorchSaveWriter::LocalHeader(const Record& r) const {
  const bool zip64 = r.size >= options_.zip64_threshold;
  std::string h;
  Put32(h, kLocalHeader);
  Put16(h, VersionNeeded(zip64));
  Put16(h, 0);  // flags
  Put16(h, 0);  // stored
  Put16(h, 0);  // time
  Put16(h, kDosDate);
  Put32(h, r.crc);
  Put32(h, zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(r.size));
  Put32(h, zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(r.size));
  Put16(h, static_cast<uint16_t>(r.name.size()));
  const uint64_t padding = r.data - (r.header + 30 + r.name.size() + (zip64 ? 20 : 0) + 4);
  Put16(h, static_cast<uint16_t>((zip64 ? 20 : 0) + 4 + padding));
  h += r.name;
  if (zip64) {
    Put16(h, kZip64ExtraId);
    Put16(h, 16);
    Put64(h, r.size);
    Put64(h, r.size);
  }
  Put16(h, kPaddingExtraId);
  Put16(h, static_cast<uint16_t>(padding));
  h.append(padding, 'Z');
  return h;
}

absl::Status TorchSaveWriter::WriteRecord(Record& record, const void* bytes, uint64_t size) {
  RETURN_IF_ERROR(file_.WriteAt(record.data + record.written,
                                absl::string_view(static_cast<const char*>(bytes), size)));
  record.crc = Crc32(record.crc, bytes, size);
  record.written += size;
  return absl::OkStatus();
}

absl::Status TorchSaveWriter::Write(const at::Tensor& placeholder, int64_t begin,
                                    const at::Tensor& values) {
  auto it = storages_.find(placeholder.storage().unsafeGetStorageImpl());
  if (it == storages_.end()) {
    return absl::InvalidArgumentError("TorchSaveWriter::Write: not a placeholder of this file");
  }
  Record& record = records_[it->second];
  const uint64_t element = c10::elementSize(placeholder.scalar_type());
  if (values.scalar_type() != placeholder.scalar_type() || !values.device().is_cpu()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TorchSaveWriter::Write: placeholder ", it->second, " takes CPU ",
        c10::toString(placeholder.scalar_type()), " values, not ", values.toString()));
  }
  const uint64_t bytes = static_cast<uint64_t>(values.numel()) * element;
  if (begin < 0 || static_cast<uint64_t>(begin) * element != record.written ||
      bytes > record.size - record.written) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TorchSaveWriter::Write: placeholder ", it->second, ": elements [", begin, ", ",
        begin + values.numel(), ") do not continue the ", record.written / element,
        " written of ", record.size / element));
  }
  try {
    const at::Tensor contiguous = values.contiguous();
    return WriteRecord(record, contiguous.data_ptr(), bytes);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, "TorchSaveWriter");
  }
}

absl::Status TorchSaveWriter::WriteZeros(const at::Tensor& placeholder, int64_t end) {
  auto it = storages_.find(placeholder.storage().unsafeGetStorageImpl());
  if (it == storages_.end()) {
    return absl::InvalidArgumentError(
        "TorchSaveWriter::WriteZeros: not a placeholder of this file");
  }
  const int64_t element = static_cast<int64_t>(c10::elementSize(placeholder.scalar_type()));
  int64_t at = static_cast<int64_t>(records_[it->second].written) / element;
  if (at >= end) return absl::OkStatus();
  constexpr int64_t kChunk = int64_t{1} << 22;
  const at::Tensor zeros = at::zeros({std::min(kChunk, end - at)}, placeholder.options());
  while (at < end) {
    const int64_t n = std::min(kChunk, end - at);
    RETURN_IF_ERROR(Write(placeholder, at, zeros.slice(0, 0, n)));
    at += n;
  }
  return absl::OkStatus();
}

// The pickle's storages given their records: each placeholder's reserved record is named by
// its key; every other storage is written now in a record of its own.
absl::Status TorchSaveWriter::NameRecords(const std::vector<at::Tensor>& storages) {
  std::set<size_t> named;
  for (size_t i = 0; i < storages.size(); ++i) {
    const c10::Storage& storage = storages[i].storage();
    const std::string name = absl::StrCat("archive/data/", i);
    auto it = storages_.find(storage.unsafeGetStorageImpl());
    if (it != storages_.end()) {
      records_[it->second].name = name;
      named.insert(it->second);
      continue;
    }
    if (storage.nbytes() > 0 && storage.device_type() != c10::kCPU) {
      return absl::InvalidArgumentError("TorchSaveWriter::Commit: tensor data must be on the CPU");
    }
    Record& r = AddRecord(name, storage.nbytes());
    RETURN_IF_ERROR(WriteRecord(r, storage.data(), storage.nbytes()));
  }
  for (const auto& [impl, index] : storages_) {
    if (named.count(index) == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "TorchSaveWriter::Commit: placeholder ", index, " is not in the value saved"));
    }
  }
  return absl::OkStatus();
}

// The central directory's entry of every record, zip64 fields where needed.
std::string TorchSaveWriter::CentralDirectory() const {
  std::string cd;
  for (const Record& r : records_) {
    const bool big = r.size >= options_.zip64_threshold;
    const bool far = r.header >= options_.zip64_threshold;
    std::string extra;
    if (big || far) {
      Put16(extra, kZip64ExtraId);
      Put16(extra, static_cast<uint16_t>((big ? 16 : 0) + (far ? 8 : 0)));
      if (big) {
        Put64(extra, r.size);
        Put64(extra, r.size);
      }
      if (far) Put64(extra, r.header);
    }
    Put32(cd, kCentralHeader);
    Put16(cd, VersionNeeded(big || far));  // made by
    Put16(cd, VersionNeeded(big || far));
    Put16(cd, 0);
    Put16(cd, 0);
    Put16(cd, 0);
    Put16(cd, kDosDate);
    Put32(cd, r.crc);
    Put32(cd, big ? 0xFFFFFFFFu : static_cast<uint32_t>(r.size));
    Put32(cd, big ? 0xFFFFFFFFu : static_cast<uint32_t>(r.size));
    Put16(cd, static_cast<uint16_t>(r.name.size()));
    Put16(cd, static_cast<uint16_t>(extra.size()));
    Put16(cd, 0);  // comment
    Put16(cd, 0);  // disk
    Put16(cd, 0);  // internal attributes
    Put32(cd, 0);  // external attributes
    Put32(cd, far ? 0xFFFFFFFFu : static_cast<uint32_t>(r.header));
    cd += r.name;
    cd += extra;
  }
  return cd;
}

// The end of the central directory at `cd_offset` (`cd_size` bytes): zip64's record and
// locator first when the offsets or the count need them.
std::string TorchSaveWriter::EndOfCentralDirectory(uint64_t cd_offset, uint64_t cd_size) const {
  const uint64_t n = records_.size();
  const bool zip64 = cd_offset >= options_.zip64_threshold ||
                     cd_size >= options_.zip64_threshold || n >= 0xFFFF;
  std::string tail;
  if (zip64) {
    Put32(tail, kZip64EndOfCentralDirectory);
    Put64(tail, 44);  // the record's size after this field
    Put16(tail, 45);
    Put16(tail, 45);
    Put32(tail, 0);
    Put32(tail, 0);
    Put64(tail, n);
    Put64(tail, n);
    Put64(tail, cd_size);
    Put64(tail, cd_offset);
    Put32(tail, kZip64Locator);
    Put32(tail, 0);
    Put64(tail, cd_offset + cd_size);  // where the zip64 record is
    Put32(tail, 1);
  }
  Put32(tail, kEndOfCentralDirectory);
  Put16(tail, 0);
  Put16(tail, 0);
  Put16(tail, zip64 ? 0xFFFF : static_cast<uint16_t>(n));
  Put16(tail, zip64 ? 0xFFFF : static_cast<uint16_t>(n));
  Put32(tail, zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(cd_size));
  Put32(tail, zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(cd_offset));
  Put16(tail, 0);
  return tail;
}

absl::Status TorchSaveWriter::Commit(const c10::IValue& value) {
  std::vector<at::Tensor> storages;
  ASSIGN_OR_RETURN(const std::vector<char> pickle, TorchSavePickle(value, &storages));
  RETURN_IF_ERROR(NameRecords(storages));
  // torch.save's other records.
  const std::string byteorder = "little", version = "3\n";  // torch.save's format version
  RETURN_IF_ERROR(WriteRecord(AddRecord("archive/data.pkl", pickle.size()), pickle.data(),
                              pickle.size()));
  RETURN_IF_ERROR(WriteRecord(AddRecord("archive/byteorder", byteorder.size()),
                              byteorder.data(), byteorder.size()));
  RETURN_IF_ERROR(
      WriteRecord(AddRecord("archive/version", version.size()), version.data(), version.size()));
  for (const Record& r : records_) {
    if (r.written != r.size) {
      return absl::FailedPreconditionError(absl::StrCat(
          "TorchSaveWriter::Commit: ", r.name, " holds ", r.written, " of its ", r.size, " bytes"));
    }
    RETURN_IF_ERROR(file_.WriteAt(r.header, LocalHeader(r)));
  }
  const std::string cd = CentralDirectory();
  RETURN_IF_ERROR(file_.WriteAt(end_, cd + EndOfCentralDirectory(end_, cd.size())));
  placeholders_.clear();
  return file_.Commit();
}

}  // namespace loom::checkpoint
