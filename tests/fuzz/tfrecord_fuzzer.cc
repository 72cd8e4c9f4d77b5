// libFuzzer target for TFRecord framing (logging/tfrecord.h DecodeTFRecords), the container of
// the TensorBoard event files loom writes and reads back. Any bytes must give an error or
// payloads that EncodeTFRecord frames back into exactly the input bytes.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "logging/tfrecord.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::vector<std::string>> payloads =
      loom::logging::DecodeTFRecords(bytes, "events.out.tfevents.fuzz");
  if (!payloads.ok()) {
    fuzz::Check(absl::IsDataLoss(payloads.status()), "bad framing is DataLoss");
    return 0;
  }
  std::string framed;
  for (const std::string& payload : *payloads) framed += loom::logging::EncodeTFRecord(payload);
  fuzz::Check(framed == bytes, "the records frame back into the same bytes");
  return 0;
}
