// libFuzzer target for loom_manifest.json (checkpoint/folder/manifest.h ParseManifest), the
// completeness marker of a checkpoint folder. Any bytes must give an error or a manifest whose
// entries are safe relative paths (not absolute, no empty / "." / ".." component, not the
// manifest itself, no duplicates), and which SerializeManifest writes as text that
// parses back to the same manifest.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "absl/strings/str_split.h"
#include "checkpoint/folder/manifest.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using fuzz::Check;
  const absl::string_view json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<loom::checkpoint::Manifest> manifest = loom::checkpoint::ParseManifest(json);
  if (!manifest.ok()) {
    Check(!manifest.status().message().empty(), "errors say what is wrong");
    return 0;
  }
  std::set<std::string> seen;
  for (const loom::checkpoint::ManifestEntry& e : manifest->files) {
    Check(!e.path.empty() && e.path[0] != '/', "paths are relative and not empty");
    for (absl::string_view part : absl::StrSplit(e.path, '/')) {
      Check(!part.empty() && part != "." && part != "..", "path components are plain names");
    }
    Check(e.path != "loom_manifest.json", "the manifest does not list itself");
    Check(seen.insert(e.path).second, "no path is listed twice");
  }
  absl::StatusOr<std::string> written = loom::checkpoint::SerializeManifest(*manifest);
  Check(written.ok(), "a parsed manifest serializes");
  absl::StatusOr<loom::checkpoint::Manifest> back = loom::checkpoint::ParseManifest(*written);
  Check(back.ok(), "a serialized manifest parses");
  Check(back->files == manifest->files, "a serialized manifest parses to the same entries");
  return 0;
}
