#include "checkpoint/torch_save_writer.h"

#include <zlib.h>

#include <algorithm>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/torch_pickle.h"

namespace loom::checkpoint {
namespace {

// The zip format's fields (PKWARE APPNOTE 6.3): little-endian integers.
void Put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}
void Put32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void Put64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfCentralDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kPaddingExtraId = 0x4246;  // "FB": torch.save's alignment padding
constexpr uint64_t kAlignment = 64;            // torch.save aligns each record's data
constexpr uint16_t kDosDate = 0x0021;          // 1980-01-01, time 00:00
constexpr uint32_t kCrcOffset = 14;            // in the local header

uint16_t VersionNeeded(bool zip64) { return zip64 ? 45 : 20; }

uint32_t Crc32(uint32_t crc, const void* data, uint64_t size) {
  return static_cast<uint32_t>(
      crc32_z(crc, static_cast<const Bytef*>(data), static_cast<z_size_t>(size)));
}

}  // namespace

at::Tensor TorchSaveWriter::Placeholder(at::ScalarType dtype, int64_t numel) {
  const size_t bytes = static_cast<size_t>(numel) * c10::elementSize(dtype);
  c10::Storage storage(c10::Storage::use_byte_size_t(), bytes,
                       c10::DataPtr(nullptr, c10::Device(c10::kCPU)), /*allocator=*/nullptr,
                       /*resizable=*/false);
  return at::empty({0}, at::TensorOptions().dtype(dtype)).set_(storage, 0, {numel}, {1});
}

absl::StatusOr<std::unique_ptr<TorchSaveWriter>> TorchSaveWriter::Create(
    const std::string& path, const c10::IValue& value, const TorchSaveWriterOptions& options) {
  std::vector<at::Tensor> storages;
  ASSIGN_OR_RETURN(const std::vector<char> pickle, TorchSavePickle(value, &storages),
                   absl::StrCat("writing ", path));
  ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::Create(path));
  auto out = absl::WrapUnique(new TorchSaveWriter(std::move(file)));
  out->options_ = options;
  // torch.save's records, in its order.
  RETURN_IF_ERROR(out->AddRecord("archive/data.pkl", pickle.size()));
  RETURN_IF_ERROR(out->WriteRecord(out->records_.back(), pickle.data(), pickle.size()));
  const std::string byteorder = "little";
  RETURN_IF_ERROR(out->AddRecord("archive/byteorder", byteorder.size()));
  RETURN_IF_ERROR(out->WriteRecord(out->records_.back(), byteorder.data(), byteorder.size()));
  for (size_t i = 0; i < storages.size(); ++i) {
    const c10::Storage& storage = storages[i].storage();
    RETURN_IF_ERROR(out->AddRecord(absl::StrCat("archive/data/", i), storage.nbytes()));
    if (storage.nbytes() > 0 && storage.data() == nullptr) {
      out->storages_[storage.unsafeGetStorageImpl()] = out->records_.size() - 1;
      continue;
    }
    if (storage.device_type() != c10::kCPU) {
      return absl::InvalidArgumentError(
          absl::StrCat("writing ", path, ": tensor data must be on the CPU"));
    }
    RETURN_IF_ERROR(out->WriteRecord(out->records_.back(), storage.data(), storage.nbytes()));
  }
  const std::string version = "3\n";  // torch.save's file format version
  RETURN_IF_ERROR(out->AddRecord("archive/version", version.size()));
  RETURN_IF_ERROR(out->WriteRecord(out->records_.back(), version.data(), version.size()));
  return out;
}

// Lays out a record at the end of the file: its local header (CRC still zero), zip64 sizes
// when it needs them, and the padding that aligns its data.
absl::Status TorchSaveWriter::AddRecord(const std::string& name, uint64_t size) {
  Record r;
  r.name = name;
  r.size = size;
  r.header = end_;
  const bool zip64 = size >= options_.zip64_threshold;
  std::string h;
  Put32(h, kLocalHeader);
  Put16(h, VersionNeeded(zip64));
  Put16(h, 0);  // flags
  Put16(h, 0);  // stored
  Put16(h, 0);  // time
  Put16(h, kDosDate);
  Put32(h, 0);  // CRC-32, at Commit
  Put32(h, zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(size));
  Put32(h, zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(size));
  Put16(h, static_cast<uint16_t>(name.size()));
  const uint64_t before_padding = end_ + 30 + name.size() + (zip64 ? 20 : 0) + 4;
  const uint64_t padding = (kAlignment - before_padding % kAlignment) % kAlignment;
  Put16(h, static_cast<uint16_t>((zip64 ? 20 : 0) + 4 + padding));
  h += name;
  if (zip64) {
    Put16(h, kZip64ExtraId);
    Put16(h, 16);
    Put64(h, size);
    Put64(h, size);
  }
  Put16(h, kPaddingExtraId);
  Put16(h, static_cast<uint16_t>(padding));
  h.append(padding, 'Z');
  r.data = end_ + h.size();
  r.local_header = std::move(h);
  end_ = r.data + size;
  records_.push_back(std::move(r));
  return absl::OkStatus();
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
        "TorchSaveWriter::Write: ", record.name, " takes CPU ",
        c10::toString(placeholder.scalar_type()), " values, not ", values.toString()));
  }
  const uint64_t bytes = static_cast<uint64_t>(values.numel()) * element;
  if (begin < 0 || static_cast<uint64_t>(begin) * element != record.written ||
      bytes > record.size - record.written) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TorchSaveWriter::Write: ", record.name, ": elements [", begin, ", ",
        begin + values.numel(), ") do not continue the ", record.written / element,
        " written of ", record.size / element));
  }
  try {
    const at::Tensor contiguous = values.contiguous();
    return WriteRecord(record, contiguous.data_ptr(), bytes);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, record.name);
  }
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

absl::Status TorchSaveWriter::Commit() {
  for (Record& r : records_) {
    if (r.written != r.size) {
      return absl::FailedPreconditionError(absl::StrCat(
          "TorchSaveWriter::Commit: ", r.name, " holds ", r.written, " of its ", r.size, " bytes"));
    }
    std::string& h = r.local_header;
    for (int i = 0; i < 4; ++i) h[kCrcOffset + i] = static_cast<char>((r.crc >> (8 * i)) & 0xff);
    RETURN_IF_ERROR(file_.WriteAt(r.header, h));
  }
  std::string tail = CentralDirectory();
  const uint64_t cd_offset = end_;
  const uint64_t cd_size = tail.size();
  const uint64_t n = records_.size();
  const bool zip64 = cd_offset >= options_.zip64_threshold ||
                     cd_size >= options_.zip64_threshold || n >= 0xFFFF;
  if (zip64) {
    const uint64_t eocd64 = cd_offset + cd_size;
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
    Put64(tail, eocd64);
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
  RETURN_IF_ERROR(file_.WriteAt(cd_offset, tail));
  return file_.Commit();
}

}  // namespace loom::checkpoint
