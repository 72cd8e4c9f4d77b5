#include "checkpoint/safetensors_header.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace loom::checkpoint {
namespace {

struct DtypeInfo {
  SafetensorsDtype dtype;
  absl::string_view name;
  uint64_t size;
};

constexpr std::array<DtypeInfo, 15> kDtypes = {{
    {SafetensorsDtype::kBool, "BOOL", 1},
    {SafetensorsDtype::kU8, "U8", 1},
    {SafetensorsDtype::kI8, "I8", 1},
    {SafetensorsDtype::kF8E5M2, "F8_E5M2", 1},
    {SafetensorsDtype::kF8E4M3, "F8_E4M3", 1},
    {SafetensorsDtype::kI16, "I16", 2},
    {SafetensorsDtype::kU16, "U16", 2},
    {SafetensorsDtype::kF16, "F16", 2},
    {SafetensorsDtype::kBF16, "BF16", 2},
    {SafetensorsDtype::kI32, "I32", 4},
    {SafetensorsDtype::kU32, "U32", 4},
    {SafetensorsDtype::kF32, "F32", 4},
    {SafetensorsDtype::kF64, "F64", 8},
    {SafetensorsDtype::kI64, "I64", 8},
    {SafetensorsDtype::kU64, "U64", 8},
}};

constexpr absl::string_view kMetadataKey = "__metadata__";
constexpr size_t kMaxSkipDepth = 64;

}  // namespace

namespace internal {
std::string Quote(absl::string_view s) {
  constexpr size_t kMax = 120;
  std::string out = absl::StrCat("\"", absl::CHexEscape(s.substr(0, kMax)), "\"");
  if (s.size() > kMax) absl::StrAppend(&out, "...");
  return out;
}

}  // namespace internal

namespace {
using internal::Quote;

std::string ShapeText(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status HeaderError(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("safetensors header: ", what));
}

// SAX handler that reads the header object into a SafetensorsHeader, rejecting anything the
// format does not allow as soon as it is seen (so no large structure is ever built).
class HeaderSax {
 public:
  using json = nlohmann::json;

  explicit HeaderSax(SafetensorsHeader* out) : out_(out) {}

  const absl::Status& status() const { return status_; }
  bool done() const { return state_ == State::kDone; }

  bool null() {
    if (skipping_) return Skip(Event::kScalar);
    if (state_ == State::kRootValue && current_key_ == kMetadataKey) {
      state_ = State::kInRoot;
      return true;
    }
    return Unexpected("null");
  }
  bool boolean(bool) { return skipping_ ? Skip(Event::kScalar) : Unexpected("a boolean"); }
  bool number_integer(json::number_integer_t) {
    return skipping_ ? Skip(Event::kScalar) : Unexpected("a negative number");
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (skipping_) return Skip(Event::kScalar);
    if (state_ == State::kInShape) {
      tensor_.shape.push_back(v);
      return true;
    }
    if (state_ == State::kInOffsets) {
      if (offsets_.size() == 2) return Fail(OffsetsError());
      offsets_.push_back(v);
      return true;
    }
    return Unexpected("a number");
  }
  bool number_float(json::number_float_t, const json::string_t&) {
    return skipping_ ? Skip(Event::kScalar) : Unexpected("a non-integer number");
  }
  bool string(json::string_t& v) {
    if (skipping_) return Skip(Event::kScalar);
    if (state_ == State::kMetadataValue) {
      out_->metadata[metadata_key_] = std::move(v);
      state_ = State::kInMetadata;
      return true;
    }
    if (state_ == State::kTensorValue && field_ == "dtype") {
      std::optional<SafetensorsDtype> dtype = DtypeFromName(v);
      if (!dtype.has_value()) {
        return Fail(HeaderError(
            absl::StrCat("tensor ", Quote(current_key_), " has unknown dtype ", Quote(v),
                         " (known: BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, "
                         "U32, F32, F64, I64, U64)")));
      }
      tensor_.dtype = *dtype;
      state_ = State::kInTensor;
      return true;
    }
    return Unexpected("a string");
  }
  bool binary(json::binary_t&) {
    return skipping_ ? Skip(Event::kScalar) : Unexpected("binary data");
  }

  bool start_object(std::size_t) {
    if (skipping_) return Skip(Event::kOpen);
    switch (state_) {
      case State::kTop:
        state_ = State::kInRoot;
        return true;
      case State::kRootValue:
        if (current_key_ == kMetadataKey) {
          state_ = State::kInMetadata;
        } else {
          tensor_ = TensorEntry{};
          tensor_.name = current_key_;
          fields_.clear();
          state_ = State::kInTensor;
        }
        return true;
      default:
        return Unexpected("an object");
    }
  }
  bool key(json::string_t& k) {
    if (skipping_) return Skip(Event::kKey);
    switch (state_) {
      case State::kInRoot:
        if (!root_keys_.insert(k).second) {
          return Fail(HeaderError(absl::StrCat("key ", Quote(k), " appears twice")));
        }
        current_key_ = std::move(k);
        state_ = State::kRootValue;
        return true;
      case State::kInMetadata:
        if (out_->metadata.count(k) != 0) {
          return Fail(HeaderError(absl::StrCat("__metadata__ has key ", Quote(k), " twice")));
        }
        metadata_key_ = std::move(k);
        state_ = State::kMetadataValue;
        return true;
      case State::kInTensor:
        if (!fields_.insert(k).second) {
          return Fail(HeaderError(
              absl::StrCat("tensor ", Quote(current_key_), " has ", Quote(k), " twice")));
        }
        field_ = std::move(k);
        if (field_ != "dtype" && field_ != "shape" && field_ != "data_offsets") {
          skipping_ = true;  // the next value is skipped, whatever it is
          skip_depth_ = 0;
        }
        state_ = State::kTensorValue;
        return true;
      default:
        return Unexpected("a key");  // not reachable with a conforming parser
    }
  }
  bool end_object() {
    if (skipping_) return Skip(Event::kClose);
    switch (state_) {
      case State::kInRoot:
        state_ = State::kDone;
        return true;
      case State::kInMetadata:
        state_ = State::kInRoot;
        return true;
      case State::kInTensor:
        for (absl::string_view f : {"dtype", "shape", "data_offsets"}) {
          if (fields_.count(std::string(f)) == 0) {
            return Fail(
                HeaderError(absl::StrCat("tensor ", Quote(current_key_), " lacks \"", f, "\"")));
          }
        }
        tensor_.begin = offsets_[0];
        tensor_.end = offsets_[1];
        out_->tensors.push_back(std::move(tensor_));
        state_ = State::kInRoot;
        return true;
      default:
        return Unexpected("the end of an object");  // not reachable
    }
  }
  bool start_array(std::size_t) {
    if (skipping_) return Skip(Event::kOpen);
    if (state_ == State::kTensorValue && field_ == "shape") {
      state_ = State::kInShape;
      return true;
    }
    if (state_ == State::kTensorValue && field_ == "data_offsets") {
      offsets_.clear();
      state_ = State::kInOffsets;
      return true;
    }
    return Unexpected("an array");
  }
  bool end_array() {
    if (skipping_) return Skip(Event::kClose);
    if (state_ == State::kInShape) {
      state_ = State::kInTensor;
      return true;
    }
    if (state_ == State::kInOffsets) {
      if (offsets_.size() != 2) return Fail(OffsetsError());
      state_ = State::kInTensor;
      return true;
    }
    return Unexpected("the end of an array");  // not reachable
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    if (status_.ok()) status_ = HeaderError(absl::StrCat("invalid JSON: ", ex.what()));
    return false;
  }

 private:
  enum class State {
    kTop,
    kInRoot,
    kRootValue,
    kInMetadata,
    kMetadataValue,
    kInTensor,
    kTensorValue,
    kInShape,
    kInOffsets,
    kDone,
  };

  // The value of an unknown tensor field is skipped: a scalar at depth 0 ends it, containers
  // count their depth.
  enum class Event { kScalar, kOpen, kClose, kKey };
  bool Skip(Event event) {
    switch (event) {
      case Event::kOpen:
        if (++skip_depth_ > kMaxSkipDepth) {
          return Fail(HeaderError(absl::StrCat("tensor ", Quote(current_key_),
                                               ": a value is nested more than ", kMaxSkipDepth,
                                               " levels deep")));
        }
        return true;
      case Event::kClose:
        --skip_depth_;
        break;
      case Event::kScalar:
      case Event::kKey:
        break;
    }
    if (skip_depth_ == 0 && event != Event::kKey) {
      skipping_ = false;
      state_ = State::kInTensor;
    }
    return true;
  }

  absl::Status OffsetsError() const {
    return HeaderError(absl::StrCat("tensor ", Quote(current_key_),
                                    ": \"data_offsets\" must be an array of two non-negative "
                                    "integers"));
  }

  bool Unexpected(absl::string_view what) {
    switch (state_) {
      case State::kRootValue:
        if (current_key_ == kMetadataKey) {
          return Fail(
              HeaderError(absl::StrCat("__metadata__ is ", what, ", not an object of strings")));
        }
        return Fail(HeaderError(absl::StrCat("entry ", Quote(current_key_), " is ", what,
                                             ", not an object with dtype, shape and "
                                             "data_offsets")));
      case State::kMetadataValue:
        return Fail(HeaderError(absl::StrCat("__metadata__ value of ", Quote(metadata_key_), " is ",
                                             what, ", not a string")));
      case State::kTensorValue:
        if (field_ == "dtype") {
          return Fail(HeaderError(absl::StrCat("tensor ", Quote(current_key_), ": \"dtype\" is ",
                                               what, ", not a string")));
        }
        if (field_ == "shape") return Fail(ShapeError(what));
        return Fail(OffsetsError());
      case State::kInShape:
        return Fail(ShapeError(what));
      case State::kInOffsets:
        return Fail(OffsetsError());
      default:
        return Fail(HeaderError(absl::StrCat("unexpected ", what)));
    }
  }
  absl::Status ShapeError(absl::string_view what) const {
    return HeaderError(absl::StrCat("tensor ", Quote(current_key_), ": \"shape\" holds ", what,
                                    "; it must be an array of non-negative integers"));
  }
  bool Fail(absl::Status s) {
    if (status_.ok()) status_ = std::move(s);
    return false;
  }

  SafetensorsHeader* out_;
  absl::Status status_;
  State state_ = State::kTop;
  std::set<std::string> root_keys_;
  std::string current_key_;
  std::string metadata_key_;
  std::set<std::string> fields_;
  std::string field_;
  TensorEntry tensor_;
  std::vector<uint64_t> offsets_;
  bool skipping_ = false;
  size_t skip_depth_ = 0;
};

// The reference's validation: sorted by offsets, the tensors tile [0, data_size).
absl::Status ValidateLayout(SafetensorsHeader& header) {
  std::vector<TensorEntry>& tensors = header.tensors;
  std::sort(tensors.begin(), tensors.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  uint64_t expected = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& t : tensors) {
    const std::string offsets = absl::StrCat("[", t.begin, ", ", t.end, "]");
    if (t.end < t.begin) {
      return HeaderError(absl::StrCat("tensor ", Quote(t.name), ": data_offsets ", offsets,
                                      " end before they begin"));
    }
    if (t.begin != expected) {
      if (previous == nullptr) {
        return HeaderError(absl::StrCat("tensor ", Quote(t.name), ": data_offsets ", offsets,
                                        " leave a gap: the first tensor must start at 0"));
      }
      return HeaderError(absl::StrCat("tensor ", Quote(t.name), ": data_offsets ", offsets,
                                      t.begin < expected
                                          ? " overlap the previous tensor "
                                          : " leave a gap after the previous tensor ",
                                      Quote(previous->name), ", which ends at ", expected));
    }
    std::optional<uint64_t> bytes = TensorByteSize(t.dtype, t.shape);
    if (!bytes.has_value()) {
      return HeaderError(absl::StrCat("tensor ", Quote(t.name), ": dtype ", DtypeName(t.dtype),
                                      " and shape ", ShapeText(t.shape),
                                      " need more than 2^64 bytes"));
    }
    if (t.end - t.begin != *bytes) {
      return HeaderError(absl::StrCat("tensor ", Quote(t.name), ": data_offsets ", offsets,
                                      " hold ", t.end - t.begin, " bytes but dtype ",
                                      DtypeName(t.dtype), " and shape ", ShapeText(t.shape),
                                      " need ", *bytes));
    }
    if (t.end > header.data_size) {
      return HeaderError(absl::StrCat("tensor ", Quote(t.name), ": data_offsets ", offsets,
                                      " run past the end of the data section (", header.data_size,
                                      " bytes): the file is truncated"));
    }
    expected = t.end;
    previous = &t;
  }
  if (expected != header.data_size) {
    return HeaderError(absl::StrCat("the tensors cover ", expected,
                                    " bytes but the data section has ", header.data_size,
                                    " (trailing bytes after the last tensor)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view DtypeName(SafetensorsDtype dtype) {
  return kDtypes[static_cast<size_t>(dtype)].name;
}

std::optional<SafetensorsDtype> DtypeFromName(absl::string_view name) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

uint64_t DtypeSize(SafetensorsDtype dtype) { return kDtypes[static_cast<size_t>(dtype)].size; }

std::optional<uint64_t> TensorByteSize(SafetensorsDtype dtype, const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  if (__builtin_mul_overflow(n, DtypeSize(dtype), &n)) return std::nullopt;
  return n;
}

bool IsValidUtf8(absl::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int extra;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      extra = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    for (int i = 1; i <= extra; ++i) {
      if ((p[i] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    p += extra + 1;
  }
  return true;
}

absl::StatusOr<uint64_t> ParseHeaderLength(absl::string_view first_bytes, uint64_t file_size) {
  if (file_size < 8 || first_bytes.size() < 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("file is ", file_size, " bytes, too short for the 8-byte header length"));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(first_bytes[i]);
  if (n > kMaxHeaderSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("header length ", n, " exceeds the ", kMaxHeaderSize, "-byte limit"));
  }
  if (n > file_size - 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "header length ", n, " runs past the end of the file (", file_size, " bytes)"));
  }
  return n;
}

absl::StatusOr<SafetensorsHeader> ParseSafetensorsHeader(absl::string_view json,
                                                         uint64_t data_size) {
  if (!IsValidUtf8(json)) return HeaderError("not valid UTF-8");
  if (json.empty() || json.front() != '{') return HeaderError("does not start with '{'");
  // nlohmann's lexer treats a NUL byte as the end of the input, which would hide whatever
  // follows it; valid JSON never holds one (inside strings it must be escaped).
  if (const size_t nul = json.find('\0'); nul != absl::string_view::npos) {
    return HeaderError(absl::StrCat("NUL byte at offset ", nul, " (JSON text cannot contain one)"));
  }
  SafetensorsHeader header;
  header.header_size = json.size();
  header.data_size = data_size;
  HeaderSax sax(&header);
  const bool ok = nlohmann::json::sax_parse(json.begin(), json.end(), &sax);
  if (!ok || !sax.done()) {
    if (!sax.status().ok()) return sax.status();
    return HeaderError("invalid JSON");  // not reachable: a failure always sets a status
  }
  RETURN_IF_ERROR(ValidateLayout(header));
  return header;
}

absl::StatusOr<SafetensorsHeader> ParseSafetensorsBuffer(absl::string_view file_bytes) {
  ASSIGN_OR_RETURN(uint64_t n, ParseHeaderLength(file_bytes.substr(0, 8), file_bytes.size()));
  return ParseSafetensorsHeader(file_bytes.substr(8, n), file_bytes.size() - 8 - n);
}

}  // namespace loom::checkpoint
