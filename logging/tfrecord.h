// TFRecord framing, the container of TensorBoard event files.
//
// Contract: one record on disk is
//   uint64 length (little-endian) | uint32 MaskCrc32c(Crc32c(those 8 bytes)) (little-endian)
//   | `length` bytes of data     | uint32 MaskCrc32c(Crc32c(data)) (little-endian)
// EncodeTFRecord frames one payload. DecodeTFRecords splits a whole buffer back into payloads,
// checking both CRCs of every record; a truncated record or a CRC mismatch is DataLoss naming
// the record index and byte offset (and `source`, e.g. the file name, when given).
//
// Example:
//   std::string bytes = EncodeTFRecord(event.SerializeAsString());
//   ASSIGN_OR_RETURN(std::vector<std::string> payloads, DecodeTFRecords(bytes, path));
#ifndef LOOM_LOGGING_TFRECORD_H_
#define LOOM_LOGGING_TFRECORD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::logging {

// The framed bytes of one record holding `data`.
std::string EncodeTFRecord(absl::string_view data);

// The payloads of the records that make up `bytes`, in order. `source` names where the bytes
// came from in error messages.
absl::StatusOr<std::vector<std::string>> DecodeTFRecords(absl::string_view bytes,
                                                         absl::string_view source = "");

}  // namespace loom::logging

#endif  // LOOM_LOGGING_TFRECORD_H_
