// A file written in pieces that appears all at once: the streaming counterpart of
// base::WriteFileAtomically for files too large to hold in one string (tensor data).
//
// Contract: Create(path) opens a temporary file beside `path` (same directory, so the final
// rename is atomic). Append() writes at the end of what was written; WriteAt(offset, data)
// writes anywhere (a file laid out before its contents are known: torch_save_writer.h), the
// file growing as needed and holes reading as zeros. Commit() fsyncs it, renames it over `path` and
// fsyncs the directory, so a reader sees either the old file or the whole new one, also after
// a crash. Destroying the writer without a successful Commit() removes the temporary file and
// leaves `path` untouched. Errors name the file and the failed system call.
//
// Example:
//   ASSIGN_OR_RETURN(AtomicFileWriter out, AtomicFileWriter::Create(path));
//   RETURN_IF_ERROR(out.Append(header));
//   RETURN_IF_ERROR(out.Append(absl::string_view(data, size)));
//   RETURN_IF_ERROR(out.Commit());
#ifndef LOOM_CHECKPOINT_ATOMIC_FILE_WRITER_H_
#define LOOM_CHECKPOINT_ATOMIC_FILE_WRITER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::checkpoint {

class AtomicFileWriter {
 public:
  static absl::StatusOr<AtomicFileWriter> Create(const std::string& path, int mode = 0644);

  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  absl::Status Append(absl::string_view data);
  absl::Status WriteAt(uint64_t offset, absl::string_view data);
  absl::Status Commit();

  uint64_t bytes_written() const { return bytes_written_; }  // by Append
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFileWriter(std::string path, std::string temp_path, int fd)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd) {}
  void Abandon();

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t bytes_written_ = 0;
};

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_ATOMIC_FILE_WRITER_H_
