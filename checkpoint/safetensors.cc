#include "checkpoint/safetensors.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/atomic_file_writer.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors stores little-endian data; this code copies raw bytes");

namespace loom::checkpoint {
namespace {

using internal::Quote;

constexpr absl::string_view kFixHint =
    " (the file is damaged or is not a safetensors file; re-create it with SaveSafetensors or "
    "safetensors.torch.save_file)";

absl::Status FileFormatError(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(path, ": ", status.message(), kFixHint));
}

absl::Status ErrnoError(absl::string_view what, const std::string& path, int err) {
  std::string msg = absl::StrCat(what, " '", path, "': ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::InternalError(msg);
}

// An open file descriptor, closed on destruction.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads exactly `size` bytes at `offset`; fails on a short file.
absl::Status PreadAll(int fd, char* out, uint64_t size, uint64_t offset, const std::string& path) {
  while (size > 0) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, uint64_t{1} << 30));
    const ssize_t n = ::pread(fd, out, chunk, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot read", path, errno);
    }
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(path,
                                              ": the file ended early (was it truncated "
                                              "while being read?)"));
    }
    out += n;
    size -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

// A private, copy-on-write mapping of a whole file.
struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr != nullptr) ::munmap(addr, size);
  }
};

absl::StatusOr<std::vector<int64_t>> Sizes(const TensorEntry& t) {
  std::vector<int64_t> sizes;
  sizes.reserve(t.shape.size());
  for (uint64_t d : t.shape) {
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", Quote(t.name), " has dimension ", d, ", over 2^63 - 1"));
    }
    sizes.push_back(static_cast<int64_t>(d));
  }
  // LibTorch multiplies the sizes without overflow checks; a zero-size tensor with huge other
  // dimensions would overflow there.
  uint64_t numel = 1;
  for (uint64_t d : t.shape) {
    if (d == 0) continue;
    if (__builtin_mul_overflow(numel, d, &numel) ||
        numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", Quote(t.name),
                       " has more than 2^63 - 1 elements in its non-zero "
                       "dimensions, which LibTorch cannot represent"));
    }
  }
  return sizes;
}

absl::StatusOr<c10::ScalarType> EntryScalarType(const TensorEntry& t) {
  absl::StatusOr<c10::ScalarType> type = ToScalarType(t.dtype);
  if (!type.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", Quote(t.name), ": ", type.status().message()));
  }
  return type;
}

// Tensor for entry `t` whose bytes start at `data` (owned by `keep_alive`), or a copy of them
// when `data` is not aligned to the element size.
absl::StatusOr<at::Tensor> ViewOrCopy(const TensorEntry& t, char* data,
                                      const std::shared_ptr<void>& keep_alive) {
  ASSIGN_OR_RETURN(const c10::ScalarType type, EntryScalarType(t));
  ASSIGN_OR_RETURN(const std::vector<int64_t> sizes, Sizes(t));
  const auto options = at::TensorOptions().dtype(type).device(at::kCPU);
  const uint64_t bytes = t.end - t.begin;
  if (reinterpret_cast<uintptr_t>(data) % DtypeSize(t.dtype) != 0 || keep_alive == nullptr) {
    at::Tensor copy = at::empty(sizes, options);
    if (bytes > 0) std::memcpy(copy.data_ptr(), data, bytes);
    return copy;
  }
  return at::from_blob(
      data, sizes, [keep_alive](void*) {}, options);
}

struct Prepared {
  std::vector<TensorEntry> entries;  // ordered for writing, offsets set
  std::unordered_map<std::string, const at::Tensor*> by_name;
  std::string header;
};

absl::StatusOr<Prepared> Prepare(const NamedTensors& tensors, const SafetensorsMetadata& metadata) {
  Prepared p;
  p.entries.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    if (!tensor.defined()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", Quote(name), " is undefined"));
    }
    if (tensor.layout() != at::kStrided || tensor.is_quantized()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor ", Quote(name), " is not a dense tensor; safetensors holds only dense ones"));
    }
    absl::StatusOr<SafetensorsDtype> dtype = ToSafetensorsDtype(tensor.scalar_type());
    if (!dtype.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", Quote(name), ": ", dtype.status().message()));
    }
    if (!p.by_name.emplace(name, &tensor).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor name ", Quote(name), " appears twice"));
    }
    TensorEntry e;
    e.name = name;
    e.dtype = *dtype;
    for (int64_t d : tensor.sizes()) e.shape.push_back(static_cast<uint64_t>(d));
    p.entries.push_back(std::move(e));
  }
  RETURN_IF_ERROR(OrderForWriting(p.entries).status());
  ASSIGN_OR_RETURN(p.header, SerializeSafetensorsHeader(p.entries, metadata));
  return p;
}

// Writes the header and then every tensor's bytes to `sink`.
absl::Status WriteFile(const NamedTensors& tensors, const SafetensorsMetadata& metadata,
                       const std::function<absl::Status(absl::string_view)>& sink) {
  ASSIGN_OR_RETURN(Prepared p, Prepare(tensors, metadata));
  RETURN_IF_ERROR(sink(p.header));
  for (const TensorEntry& e : p.entries) {
    at::Tensor cpu;
    try {
      cpu = p.by_name.at(e.name)->detach().to(at::kCPU).contiguous();
    } catch (const std::exception& ex) {
      return base::TorchErrorToStatus(ex, absl::StatusCode::kInternal,
                                      absl::StrCat("copying tensor ", Quote(e.name), " to CPU"));
    }
    const uint64_t bytes = e.end - e.begin;
    if (bytes > 0) {
      RETURN_IF_ERROR(sink(absl::string_view(static_cast<const char*>(cpu.data_ptr()), bytes)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SafetensorsFile> TensorsFromBuffer(const SafetensorsHeader& header, char* base,
                                                  const std::shared_ptr<void>& keep_alive) {
  SafetensorsFile file;
  file.metadata = header.metadata;
  file.tensors.reserve(header.tensors.size());
  char* data = base + header.data_start();
  for (const TensorEntry& t : header.tensors) {
    ASSIGN_OR_RETURN(at::Tensor tensor, ViewOrCopy(t, data + t.begin, keep_alive));
    file.tensors.emplace_back(t.name, std::move(tensor));
  }
  return file;
}

// Opens `path` and reads its validated header; `size` receives the file size.
absl::StatusOr<SafetensorsHeader> ReadHeader(int fd, const std::string& path, uint64_t* size) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  *size = static_cast<uint64_t>(st.st_size);
  char first[8] = {};
  RETURN_IF_ERROR(PreadAll(fd, first, std::min<uint64_t>(8, *size), 0, path));
  absl::StatusOr<uint64_t> n = ParseHeaderLength(absl::string_view(first, 8), *size);
  if (!n.ok()) return FileFormatError(path, n.status());
  std::string json(*n, '\0');
  RETURN_IF_ERROR(PreadAll(fd, json.data(), *n, 8, path));
  absl::StatusOr<SafetensorsHeader> header = ParseSafetensorsHeader(json, *size - 8 - *n);
  if (!header.ok()) return FileFormatError(path, header.status());
  return header;
}

}  // namespace

absl::StatusOr<SafetensorsDtype> ToSafetensorsDtype(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Double:
      return SafetensorsDtype::kF64;
    case c10::ScalarType::Float:
      return SafetensorsDtype::kF32;
    case c10::ScalarType::Half:
      return SafetensorsDtype::kF16;
    case c10::ScalarType::BFloat16:
      return SafetensorsDtype::kBF16;
    case c10::ScalarType::Long:
      return SafetensorsDtype::kI64;
    case c10::ScalarType::Int:
      return SafetensorsDtype::kI32;
    case c10::ScalarType::Short:
      return SafetensorsDtype::kI16;
    case c10::ScalarType::Char:
      return SafetensorsDtype::kI8;
    case c10::ScalarType::Byte:
      return SafetensorsDtype::kU8;
    case c10::ScalarType::Bool:
      return SafetensorsDtype::kBool;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "dtype ", c10::toString(type),
          " has no safetensors counterpart (supported: float64, float32, float16, bfloat16, "
          "int64, int32, int16, int8, uint8, bool); convert the tensor first"));
  }
}

absl::StatusOr<c10::ScalarType> ToScalarType(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::kF64:
      return c10::ScalarType::Double;
    case SafetensorsDtype::kF32:
      return c10::ScalarType::Float;
    case SafetensorsDtype::kF16:
      return c10::ScalarType::Half;
    case SafetensorsDtype::kBF16:
      return c10::ScalarType::BFloat16;
    case SafetensorsDtype::kI64:
      return c10::ScalarType::Long;
    case SafetensorsDtype::kI32:
      return c10::ScalarType::Int;
    case SafetensorsDtype::kI16:
      return c10::ScalarType::Short;
    case SafetensorsDtype::kI8:
      return c10::ScalarType::Char;
    case SafetensorsDtype::kU8:
      return c10::ScalarType::Byte;
    case SafetensorsDtype::kBool:
      return c10::ScalarType::Bool;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("dtype ", DtypeName(dtype),
                       " has no LibTorch counterpart (LibTorch 1.13 has no unsigned 16/32/64-bit "
                       "or 8-bit float types); convert the file with Python first"));
  }
}

absl::Status SaveSafetensors(const std::string& path, const NamedTensors& tensors,
                             const SafetensorsMetadata& metadata) {
  ASSIGN_OR_RETURN(AtomicFileWriter out, AtomicFileWriter::Create(path));
  RETURN_IF_ERROR_CTX(
      WriteFile(tensors, metadata, [&out](absl::string_view b) { return out.Append(b); }),
      absl::StrCat("writing ", path));
  return out.Commit();
}

absl::StatusOr<std::string> SerializeSafetensors(const NamedTensors& tensors,
                                                 const SafetensorsMetadata& metadata) {
  std::string bytes;
  RETURN_IF_ERROR(WriteFile(tensors, metadata, [&bytes](absl::string_view b) {
    bytes.append(b.data(), b.size());
    return absl::OkStatus();
  }));
  return bytes;
}

absl::StatusOr<SafetensorsHeader> ReadSafetensorsHeader(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("cannot open", path, errno);
  uint64_t size = 0;
  return ReadHeader(fd.get(), path, &size);
}

absl::StatusOr<SafetensorsFile> LoadSafetensors(const std::string& path,
                                                SafetensorsLoadOptions options) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("cannot open", path, errno);
  uint64_t size = 0;
  ASSIGN_OR_RETURN(const SafetensorsHeader header, ReadHeader(fd.get(), path, &size));
  try {
    if (options.mmap) {
      auto mapping = std::make_shared<Mapping>();
      void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0);
      if (addr == MAP_FAILED) return ErrnoError("cannot mmap", path, errno);
      mapping->addr = addr;
      mapping->size = size;
      absl::StatusOr<SafetensorsFile> file =
          TensorsFromBuffer(header, static_cast<char*>(addr), mapping);
      if (!file.ok()) return FileFormatError(path, file.status());
      return file;
    }
    SafetensorsFile file;
    file.metadata = header.metadata;
    file.tensors.reserve(header.tensors.size());
    for (const TensorEntry& t : header.tensors) {
      absl::StatusOr<c10::ScalarType> type = EntryScalarType(t);
      if (!type.ok()) return FileFormatError(path, type.status());
      absl::StatusOr<std::vector<int64_t>> sizes = Sizes(t);
      if (!sizes.ok()) return FileFormatError(path, sizes.status());
      at::Tensor tensor = at::empty(*sizes, at::TensorOptions().dtype(*type));
      RETURN_IF_ERROR(PreadAll(fd.get(), static_cast<char*>(tensor.data_ptr()), t.end - t.begin,
                               header.data_start() + t.begin, path));
      file.tensors.emplace_back(t.name, std::move(tensor));
    }
    return file;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, absl::StrCat("loading ", path));
  }
}

absl::StatusOr<SafetensorsFile> ParseSafetensors(absl::string_view file_bytes) {
  ASSIGN_OR_RETURN(const SafetensorsHeader header, ParseSafetensorsBuffer(file_bytes));
  try {
    // No keep-alive: ViewOrCopy copies every tensor out of the caller's buffer.
    return TensorsFromBuffer(header, const_cast<char*>(file_bytes.data()), nullptr);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "parsing safetensors bytes");
  }
}

}  // namespace loom::checkpoint
