#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/safetensors_header.h"

// The writer half of safetensors_header.h.
namespace loom::checkpoint {
namespace {

using internal::Quote;

constexpr absl::string_view kMetadataKey = "__metadata__";

// JSON string escaping as serde_json writes it (the reference writer).
void AppendJsonString(absl::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xf]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

}  // namespace

absl::StatusOr<uint64_t> OrderForWriting(std::vector<TensorEntry>& tensors) {
  std::stable_sort(tensors.begin(), tensors.end(), [](const TensorEntry& a, const TensorEntry& b) {
    if (a.dtype != b.dtype) return a.dtype > b.dtype;
    return a.name < b.name;
  });
  std::set<absl::string_view> names;
  uint64_t offset = 0;
  for (TensorEntry& t : tensors) {
    if (!names.insert(t.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor name ", Quote(t.name), " appears twice"));
    }
    if (!IsValidUtf8(t.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor name ", Quote(t.name), " is not valid UTF-8"));
    }
    std::optional<uint64_t> bytes = TensorByteSize(t.dtype, t.shape);
    if (!bytes.has_value() || offset + *bytes < offset) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", Quote(t.name), " is larger than 2^64 bytes"));
    }
    t.begin = offset;
    t.end = offset + *bytes;
    offset = t.end;
  }
  return offset;
}

absl::StatusOr<std::string> SerializeSafetensorsHeader(
    const std::vector<TensorEntry>& tensors, const std::map<std::string, std::string>& metadata) {
  std::string json = "{";
  bool first = true;
  if (!metadata.empty()) {
    json.append("\"__metadata__\":{");
    for (const auto& [key, value] : metadata) {
      if (!IsValidUtf8(key) || !IsValidUtf8(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("metadata entry ", Quote(key), " is not valid UTF-8"));
      }
      if (!first) json.push_back(',');
      first = false;
      AppendJsonString(key, &json);
      json.push_back(':');
      AppendJsonString(value, &json);
    }
    json.push_back('}');
    first = false;
  }
  for (const TensorEntry& t : tensors) {
    if (!IsValidUtf8(t.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor name ", Quote(t.name), " is not valid UTF-8"));
    }
    if (t.name == kMetadataKey) {
      return absl::InvalidArgumentError("a tensor cannot be named \"__metadata__\"");
    }
    if (!first) json.push_back(',');
    first = false;
    AppendJsonString(t.name, &json);
    absl::StrAppend(&json, ":{\"dtype\":\"", DtypeName(t.dtype), "\",\"shape\":[",
                    absl::StrJoin(t.shape, ","), "],\"data_offsets\":[", t.begin, ",", t.end, "]}");
  }
  json.push_back('}');
  json.append((8 - json.size() % 8) % 8, ' ');
  if (json.size() > kMaxHeaderSize) {
    return absl::InvalidArgumentError(absl::StrCat("the header would be ", json.size(),
                                                   " bytes, over the ", kMaxHeaderSize,
                                                   "-byte limit readers enforce"));
  }
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.append(json);
  return out;
}

}  // namespace loom::checkpoint
