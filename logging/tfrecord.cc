#include "logging/tfrecord.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "logging/crc32c.h"

namespace loom::logging {
namespace {

void AppendLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

uint64_t ReadLittleEndian(absl::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  return value;
}

absl::Status Corrupt(absl::string_view source, size_t index, size_t offset,
                     absl::string_view what) {
  return absl::DataLossError(absl::StrCat("TFRecord ", source.empty() ? "" : source,
                                          source.empty() ? "" : " ", "record ", index, " at byte ",
                                          offset, ": ", what));
}

}  // namespace

std::string EncodeTFRecord(absl::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  AppendLittleEndian(data.size(), 8, &out);
  AppendLittleEndian(MaskCrc32c(Crc32c(out)), 4, &out);
  out.append(data.data(), data.size());
  AppendLittleEndian(MaskCrc32c(Crc32c(data)), 4, &out);
  return out;
}

absl::StatusOr<std::vector<std::string>> DecodeTFRecords(absl::string_view bytes,
                                                         absl::string_view source) {
  std::vector<std::string> payloads;
  size_t offset = 0;
  while (offset < bytes.size()) {
    const size_t index = payloads.size();
    absl::string_view rest = bytes.substr(offset);
    if (rest.size() < 12) return Corrupt(source, index, offset, "truncated header");
    absl::string_view length_bytes = rest.substr(0, 8);
    if (ReadLittleEndian(rest.substr(8, 4)) != MaskCrc32c(Crc32c(length_bytes))) {
      return Corrupt(source, index, offset, "length CRC mismatch");
    }
    const uint64_t length = ReadLittleEndian(length_bytes);
    if (length > rest.size() - 12 || rest.size() - 12 - length < 4) {
      return Corrupt(source, index, offset, absl::StrCat("truncated data (length ", length, ")"));
    }
    absl::string_view data = rest.substr(12, length);
    if (ReadLittleEndian(rest.substr(12 + length, 4)) != MaskCrc32c(Crc32c(data))) {
      return Corrupt(source, index, offset, "data CRC mismatch");
    }
    payloads.emplace_back(data);
    offset += 16 + length;
  }
  return payloads;
}

}  // namespace loom::logging
