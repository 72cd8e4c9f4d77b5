#include "checkpoint/zip_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "checkpoint/zip_format.h"

namespace loom::checkpoint {
namespace {

using zip_format::Get16;
using zip_format::Get32;
using zip_format::Get64;

constexpr uint16_t kEncryptedFlag = 1 << 0;
constexpr uint16_t kDataDescriptorFlag = 1 << 3;  // sizes and CRC follow the data, not the header
constexpr uint32_t kMax32 = 0xFFFFFFFFu;
constexpr uint16_t kMax16 = 0xFFFF;
constexpr uint64_t kMaxComment = 0xFFFF;

// a + b <= limit, without overflow.
bool FitsBefore(uint64_t a, uint64_t b, uint64_t limit) { return a <= limit && b <= limit - a; }

std::string Quoted(absl::string_view name) {
  return absl::StrCat("\"", absl::CHexEscape(name), "\"");
}

// The zip64 extended-information extra field: the 64-bit values of the header's fields that
// were saturated (0xFFFFFFFF), in the format's order.
struct Zip64Fields {
  uint64_t* size = nullptr;
  uint64_t* compressed = nullptr;
  uint64_t* header = nullptr;
};

absl::Status ReadZip64Extra(absl::string_view extra, const Zip64Fields& fields) {
  bool found = false;
  while (!extra.empty()) {
    if (extra.size() < 4) return absl::InvalidArgumentError("an extra field is cut short");
    const uint16_t id = Get16(extra.data());
    const uint16_t length = Get16(extra.data() + 2);
    if (extra.size() - 4 < length)
      return absl::InvalidArgumentError("an extra field ends past its header");
    absl::string_view body = extra.substr(4, length);
    extra.remove_prefix(4 + length);
    if (id != zip_format::kZip64ExtraId) continue;
    found = true;
    for (uint64_t* field : {fields.size, fields.compressed, fields.header}) {
      if (field == nullptr || *field != kMax32) continue;
      if (body.size() < 8) return absl::InvalidArgumentError("the zip64 extra field is cut short");
      *field = Get64(body.data());
      body.remove_prefix(8);
    }
  }
  for (const uint64_t* field : {fields.size, fields.compressed, fields.header}) {
    if (field != nullptr && *field == kMax32 && !found) {
      return absl::InvalidArgumentError(
          "a 32-bit field is saturated but there is no zip64 extra field");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("a record has an empty name");
  if (name.front() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("record ", Quoted(name), " has an absolute path"));
  }
  if (name.find('\\') != absl::string_view::npos || name.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("record ", Quoted(name), " holds a backslash or NUL in its name"));
  }
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("record ", Quoted(name), " has an empty, \".\" or \"..\" path component"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ZipReader>> ZipReader::Open(const std::string& path) {
  auto zip = absl::WrapUnique(new ZipReader());
  zip->source_ = path;
  // O_NONBLOCK: a FIFO at the path must not block the open; only regular files are read.
  zip->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (zip->fd_ < 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(zip->fd_, &st) != 0) {
    return absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  zip->size_ = static_cast<uint64_t>(st.st_size);
  RETURN_IF_ERROR(zip->Load());
  return zip;
}

absl::StatusOr<std::unique_ptr<ZipReader>> ZipReader::FromBuffer(absl::string_view bytes,
                                                                 const std::string& source) {
  auto zip = absl::WrapUnique(new ZipReader());
  zip->source_ = source;
  zip->buffer_ = bytes;
  zip->size_ = bytes.size();
  RETURN_IF_ERROR(zip->Load());
  return zip;
}

ZipReader::~ZipReader() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status ZipReader::Load() {
  absl::Status loaded = [&]() -> absl::Status {
    char magic[4] = {0};
    if (size_ < sizeof(magic) || !Pread(0, sizeof(magic), magic).ok() ||
        Get32(magic) != zip_format::kLocalHeader) {
      return absl::InvalidArgumentError(
          "it does not start with a zip record (the legacy torch.save format of torch < 1.6 or "
          "_use_new_zipfile_serialization=False is not read: re-save the file with a newer "
          "torch's default format)");
    }
    ASSIGN_OR_RETURN(const uint64_t eocd, FindEndOfDirectory());
    RETURN_IF_ERROR(ReadDirectory(eocd));
    return CheckNamesAndOverlaps();
  }();
  if (loaded.ok()) return loaded;
  return absl::Status(loaded.code(),
                      absl::StrCat(source_, source_.empty() ? "" : ": ",
                                   "not a readable torch.save zip archive: ", loaded.message()));
}

absl::Status ZipReader::Pread(uint64_t offset, uint64_t n, void* dst) const {
  if (!FitsBefore(offset, n, size_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes [", offset, ", +", n, ") end past the ", size_, "-byte file"));
  }
  if (fd_ < 0) {
    if (n > 0) std::memcpy(dst, buffer_.data() + offset, n);
    return absl::OkStatus();
  }
  char* out = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return absl::DataLossError(absl::StrCat("reading at ", offset, ": ",
                                              got < 0 ? std::strerror(errno) : "end of file"));
    }
    out += got;
    n -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return absl::OkStatus();
}

// The end-of-central-directory record: the last one whose comment reaches the file's end.
absl::StatusOr<uint64_t> ZipReader::FindEndOfDirectory() const {
  const uint64_t eocd = zip_format::kEndOfCentralDirectorySize;
  if (size_ < eocd) return absl::InvalidArgumentError("too short to be a zip archive");
  const uint64_t window = std::min<uint64_t>(size_, eocd + kMaxComment);
  std::string tail(window, '\0');
  RETURN_IF_ERROR(Pread(size_ - window, window, tail.data()));
  for (uint64_t at = window - eocd + 1; at-- > 0;) {
    if (Get32(tail.data() + at) == zip_format::kEndOfCentralDirectory &&
        at + eocd + Get16(tail.data() + at + 20) == window) {
      return size_ - window + at;
    }
  }
  return absl::InvalidArgumentError("no end-of-central-directory record (truncated file?)");
}

absl::Status ZipReader::ReadDirectory(uint64_t eocd) {
  char e[zip_format::kEndOfCentralDirectorySize];
  RETURN_IF_ERROR(Pread(eocd, sizeof(e), e));
  uint64_t entries = Get16(e + 10);
  uint64_t directory_size = Get32(e + 12);
  uint64_t directory_offset = Get32(e + 16);
  if (Get16(e + 4) != 0 || Get16(e + 6) != 0 || Get16(e + 8) != entries) {
    return absl::InvalidArgumentError("a multi-disk archive");
  }
  uint64_t directory_end = eocd;
  const uint64_t locator_size = zip_format::kZip64LocatorSize;
  char l[zip_format::kZip64LocatorSize];
  if (eocd >= locator_size && Pread(eocd - locator_size, locator_size, l).ok() &&
      Get32(l) == zip_format::kZip64Locator) {
    const uint64_t record = Get64(l + 8);
    directory_end = eocd - locator_size;
    char z[zip_format::kZip64EndOfCentralDirectorySize];
    if (!FitsBefore(record, sizeof(z), directory_end)) {
      return absl::InvalidArgumentError("the zip64 end-of-directory record lies past its locator");
    }
    RETURN_IF_ERROR(Pread(record, sizeof(z), z));
    if (Get32(z) != zip_format::kZip64EndOfCentralDirectory) {
      return absl::InvalidArgumentError("the zip64 locator points at no zip64 record");
    }
    if (Get32(z + 16) != 0 || Get32(z + 20) != 0 || Get64(z + 24) != Get64(z + 32)) {
      return absl::InvalidArgumentError("a multi-disk archive");
    }
    entries = Get64(z + 32);
    directory_size = Get64(z + 40);
    directory_offset = Get64(z + 48);
    directory_end = record;
  } else if (entries == kMax16 || directory_size == kMax32 || directory_offset == kMax32) {
    return absl::InvalidArgumentError("saturated end-of-directory fields without a zip64 record");
  }
  if (!FitsBefore(directory_offset, directory_size, directory_end)) {
    return absl::InvalidArgumentError(absl::StrCat("the central directory (", directory_size,
                                                   " bytes at ", directory_offset,
                                                   ") ends past its end record"));
  }
  if (entries > directory_size / zip_format::kCentralHeaderSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the directory claims ", entries, " records but holds ", directory_size, " bytes"));
  }
  std::string dir(directory_size, '\0');
  RETURN_IF_ERROR(Pread(directory_offset, directory_size, dir.data()));
  records_.reserve(entries);
  uint64_t at = 0;
  for (uint64_t i = 0; i < entries; ++i) {
    ASSIGN_OR_RETURN(Record record, ReadCentralEntry(dir, at, directory_offset));
    RETURN_IF_ERROR(CheckLocalHeader(record, directory_offset));
    records_.push_back(std::move(record));
  }
  if (at != directory_size) {
    return absl::InvalidArgumentError(absl::StrCat("the central directory holds ", directory_size,
                                                   " bytes but its ", entries, " records fill ",
                                                   at));
  }
  return absl::OkStatus();
}

absl::StatusOr<ZipReader::Record> ZipReader::ReadCentralEntry(const std::string& dir, uint64_t& at,
                                                              uint64_t directory_offset) const {
  const uint64_t fixed = zip_format::kCentralHeaderSize;
  if (!FitsBefore(at, fixed, dir.size()) || Get32(dir.data() + at) != zip_format::kCentralHeader) {
    return absl::InvalidArgumentError(
        absl::StrCat("no directory entry at ", directory_offset + at));
  }
  const char* h = dir.data() + at;
  const uint64_t name_size = Get16(h + 28), extra_size = Get16(h + 30), comment = Get16(h + 32);
  if (!FitsBefore(at + fixed, name_size + extra_size + comment, dir.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the directory entry at ", directory_offset + at, " ends past the directory"));
  }
  Record r;
  r.name.assign(h + fixed, name_size);
  const uint16_t flags = Get16(h + 8), method = Get16(h + 10);
  r.crc32 = Get32(h + 16);
  uint64_t compressed = Get32(h + 20);
  r.size = Get32(h + 24);
  r.header = Get32(h + 42);
  absl::Status extra =
      ReadZip64Extra(absl::string_view(h + fixed + name_size, extra_size),
                     {.size = &r.size, .compressed = &compressed, .header = &r.header});
  RETURN_IF_ERROR_CTX(extra, absl::StrCat("record ", Quoted(r.name)));
  if ((flags & kEncryptedFlag) != 0 || method != 0 || compressed != r.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "record ", Quoted(r.name), " is ", (flags & kEncryptedFlag) ? "encrypted" : "compressed",
        " (method ", method, "); torch.save stores every record uncompressed"));
  }
  at += fixed + name_size + extra_size + comment;
  return r;
}

// The local header must agree with the directory (a reader that walks local headers, as some
// zip tools do, must see the same archive) and the data must end before the directory.
absl::Status ZipReader::CheckLocalHeader(Record& r, uint64_t directory_offset) const {
  const uint64_t fixed = zip_format::kLocalHeaderSize;
  char h[zip_format::kLocalHeaderSize];
  if (!FitsBefore(r.header, fixed, directory_offset) || !Pread(r.header, fixed, h).ok() ||
      Get32(h) != zip_format::kLocalHeader) {
    return absl::InvalidArgumentError(
        absl::StrCat("record ", Quoted(r.name), ": no local header at ", r.header));
  }
  const uint64_t name_size = Get16(h + 26), extra_size = Get16(h + 28);
  r.data = r.header + fixed + name_size + extra_size;
  if (!FitsBefore(r.header + fixed, name_size + extra_size, directory_offset) ||
      !FitsBefore(r.data, r.size, directory_offset)) {
    return absl::InvalidArgumentError(absl::StrCat("record ", Quoted(r.name), " of ", r.size,
                                                   " bytes at ", r.data,
                                                   " ends past the file's records"));
  }
  std::string name_and_extra(name_size + extra_size, '\0');
  RETURN_IF_ERROR(Pread(r.header + fixed, name_and_extra.size(), name_and_extra.data()));
  if (absl::string_view(name_and_extra).substr(0, name_size) != r.name) {
    return absl::InvalidArgumentError(
        absl::StrCat("record ", Quoted(r.name), ": its local header names another record"));
  }
  if ((Get16(h + 6) & kDataDescriptorFlag) != 0) return absl::OkStatus();
  uint64_t size = Get32(h + 22), compressed = Get32(h + 18);
  RETURN_IF_ERROR_CTX(ReadZip64Extra(absl::string_view(name_and_extra).substr(name_size),
                                     {.size = &size, .compressed = &compressed}),
                      absl::StrCat("record ", Quoted(r.name), "'s local header"));
  if (size != r.size || compressed != r.size || Get16(h + 8) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("record ", Quoted(r.name), ": its local header disagrees with the directory (",
                     size, " bytes vs ", r.size, ")"));
  }
  return absl::OkStatus();
}

absl::Status ZipReader::CheckNamesAndOverlaps() {
  for (size_t i = 0; i < records_.size(); ++i) {
    RETURN_IF_ERROR(CheckName(records_[i].name));
    if (!by_name_.emplace(records_[i].name, i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("record ", Quoted(records_[i].name), " appears twice"));
    }
  }
  std::vector<const Record*> by_offset;
  for (const Record& r : records_) by_offset.push_back(&r);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Record* a, const Record* b) { return a->header < b->header; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i - 1]->data + by_offset[i - 1]->size > by_offset[i]->header) {
      return absl::InvalidArgumentError(absl::StrCat("records ", Quoted(by_offset[i - 1]->name),
                                                     " and ", Quoted(by_offset[i]->name),
                                                     " overlap"));
    }
  }
  if (!records_.empty()) {
    const std::string& first = records_.front().name;
    const size_t slash = first.find('/');
    prefix_ = slash == std::string::npos ? "" : first.substr(0, slash);
  }
  return absl::OkStatus();
}

const ZipReader::Record* ZipReader::Find(absl::string_view name) const {
  auto it = by_name_.find(prefix_.empty() ? std::string(name) : absl::StrCat(prefix_, "/", name));
  return it == by_name_.end() ? nullptr : &records_[it->second];
}

absl::StatusOr<std::string> ZipReader::ReadAll(const Record& record) const {
  std::string bytes(record.size, '\0');
  RETURN_IF_ERROR(ReadAll(record, bytes.data()));
  return bytes;
}

absl::Status ZipReader::ReadAll(const Record& record, void* dst) const {
  RETURN_IF_ERROR_CTX(Pread(record.data, record.size, dst),
                      absl::StrCat("record ", Quoted(record.name)));
  const uint32_t crc = static_cast<uint32_t>(
      crc32_z(0, static_cast<const Bytef*>(dst), static_cast<z_size_t>(record.size)));
  if (crc != record.crc32) {
    return absl::DataLossError(absl::StrCat("record ", Quoted(record.name),
                                            " fails its CRC-32 check (the file is damaged)"));
  }
  return absl::OkStatus();
}

absl::Status ZipReader::ReadAt(const Record& record, uint64_t begin, uint64_t n, void* dst) const {
  if (!FitsBefore(begin, n, record.size)) {
    return absl::InvalidArgumentError(absl::StrCat("bytes [", begin, ", +", n, ") of record ",
                                                   Quoted(record.name), " end past its ",
                                                   record.size, " bytes"));
  }
  return Pread(record.data + begin, n, dst);
}

}  // namespace loom::checkpoint
