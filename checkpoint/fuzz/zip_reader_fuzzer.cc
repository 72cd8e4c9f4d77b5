// libFuzzer target for the torch.save archive reader (zip_reader.h): any bytes must give an
// error or an archive whose records satisfy the reader's contract (unique, checked names; bytes
// inside the file and before the directory; no two records overlapping), and every record must
// read back (or fail its CRC) without touching memory outside the input. Violations abort,
// which libFuzzer reports as a crash (with the input saved).
//
// Built with clang's -fsanitize=fuzzer,address,undefined by the :zip_reader_fuzzer genrule;
// see checkpoint/fuzz/BUILD for the smoke run in the test suite and a longer run.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "checkpoint/zip_reader.h"

namespace {

using loom::checkpoint::ZipReader;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

void CheckArchive(const ZipReader& zip, size_t file_size) {
  std::set<std::string> names;
  std::vector<const ZipReader::Record*> by_offset;
  for (const ZipReader::Record& r : zip.records()) {
    Check(names.insert(r.name).second, "names are unique");
    Check(!r.name.empty() && r.name.front() != '/', "names are relative");
    for (absl::string_view part : absl::StrSplit(r.name, '/')) {
      Check(!part.empty() && part != "." && part != "..", "no empty, . or .. component");
    }
    Check(r.data >= r.header + 30 && r.data <= file_size && r.size <= file_size - r.data,
          "record bytes lie inside the file");
    by_offset.push_back(&r);
    const std::string relative =
        zip.prefix().empty() ? r.name
                             : r.name.substr(std::min(r.name.size(), zip.prefix().size() + 1));
    if (r.name.rfind(zip.prefix() + "/", 0) == 0 || zip.prefix().empty()) {
      Check(zip.Find(relative) == &r, "Find returns the record");
    }
    absl::StatusOr<std::string> bytes = zip.ReadAll(r);
    if (bytes.ok()) Check(bytes->size() == r.size, "ReadAll returns the record's size");
    char one;
    if (r.size > 0) Check(zip.ReadAt(r, r.size - 1, 1, &one).ok(), "the last byte reads");
    Check(!zip.ReadAt(r, r.size, 1, &one).ok(), "a byte past the record is refused");
  }
  std::sort(
      by_offset.begin(), by_offset.end(),
      [](const ZipReader::Record* a, const ZipReader::Record* b) { return a->header < b->header; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    Check(by_offset[i - 1]->data + by_offset[i - 1]->size <= by_offset[i]->header,
          "records do not overlap");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<ZipReader>> zip = ZipReader::FromBuffer(bytes, "fuzz.pt");
  if (zip.ok()) CheckArchive(**zip, size);
  return 0;
}
