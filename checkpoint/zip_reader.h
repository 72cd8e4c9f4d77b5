// ZipReader: the records of a torch.save archive (a zip file of stored records: torch >= 1.6's
// default format, DeepSpeed's and HF's .pt/.bin files, loom's own), read from a file or a buffer
// that may come from anybody. Hand-written: LibTorch's PyTorchStreamReader allocates a record at
// the size its header claims before reading it (a 1 KB file can claim 10 GB) and accepts
// duplicate names; no packaged zip library in Debian offers a checked view of stored records
// without extracting them.
//
// Contract:
//   - Open(path) / FromBuffer(bytes, source): reads and checks the whole directory before
//     returning. InvalidArgument, naming `source` (the path; a buffer's may be empty, for
//     callers that name it themselves) and the record, for: no end of
//     central directory; a directory, name, extra field or record that ends past the file (or,
//     for record data, past the start of the central directory); counts the directory cannot
//     hold; a record that is compressed or encrypted (torch.save stores every record as is);
//     sizes that disagree between the central and local headers; a local header whose name
//     differs from the directory's; two records with the same name; a name that is empty,
//     absolute, holds a backslash or NUL, or a "." or ".." component; records whose bytes
//     overlap. Nothing is allocated beyond what the file really holds (the directory's entry
//     count is checked against its byte size before anything is reserved).
//   - prefix(): the archive's folder, the part of the first record's name before its first '/'
//     ("archive" for torch >= 2.0; older torch used the file's stem). torch.save's record
//     "<prefix>/data.pkl" is Find("data.pkl").
//   - Find(name): the record "<prefix>/<name>", or nullptr.
//   - ReadAll(record[, dst]): its bytes (into dst, which holds record.size bytes), checked
//     against the directory's CRC-32 (DataLoss naming the record on a mismatch: a damaged file).
//   - ReadAt(record, begin, n, dst): n bytes of the record from `begin`, bounds-checked (no CRC:
//     for parts of records larger than memory). Record::data is where its bytes lie in the
//     file (what torch.load(mmap=True) maps). Their errors name the record; callers add the
//     file.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<ZipReader> zip, ZipReader::Open(path));
//   const ZipReader::Record* pkl = zip->Find("data.pkl");
//   if (pkl == nullptr) return absl::InvalidArgumentError(path + ": no data.pkl");
//   ASSIGN_OR_RETURN(std::string program, zip->ReadAll(*pkl));
#ifndef LOOM_CHECKPOINT_ZIP_READER_H_
#define LOOM_CHECKPOINT_ZIP_READER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::checkpoint {

class ZipReader {
 public:
  struct Record {
    std::string name;     // the full name, prefix included
    uint64_t header = 0;  // offset of its local header
    uint64_t data = 0;    // offset of its bytes
    uint64_t size = 0;    // its byte count
    uint32_t crc32 = 0;   // from the central directory
  };

  static absl::StatusOr<std::unique_ptr<ZipReader>> Open(const std::string& path);
  // `bytes` must outlive the reader.
  static absl::StatusOr<std::unique_ptr<ZipReader>> FromBuffer(absl::string_view bytes,
                                                               const std::string& source);
  ~ZipReader();
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;

  const std::string& source() const { return source_; }
  const std::string& prefix() const { return prefix_; }
  const std::vector<Record>& records() const { return records_; }
  const Record* Find(absl::string_view name) const;

  absl::StatusOr<std::string> ReadAll(const Record& record) const;
  absl::Status ReadAll(const Record& record, void* dst) const;  // dst holds record.size bytes
  absl::Status ReadAt(const Record& record, uint64_t begin, uint64_t n, void* dst) const;

 private:
  ZipReader() = default;
  absl::Status Load();
  absl::Status Pread(uint64_t offset, uint64_t n, void* dst) const;
  absl::StatusOr<uint64_t> FindEndOfDirectory() const;
  absl::Status ReadDirectory(uint64_t eocd);
  absl::StatusOr<Record> ReadCentralEntry(const std::string& dir, uint64_t& at,
                                          uint64_t directory_offset) const;
  absl::Status CheckLocalHeader(Record& record, uint64_t directory_offset) const;
  absl::Status CheckNamesAndOverlaps();

  std::string source_;
  int fd_ = -1;               // a file, or
  absl::string_view buffer_;  // a buffer
  uint64_t size_ = 0;
  std::string prefix_;
  std::vector<Record> records_;
  std::map<std::string, size_t, std::less<>> by_name_;
};

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_ZIP_READER_H_
