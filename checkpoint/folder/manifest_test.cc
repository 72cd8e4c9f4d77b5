#include "checkpoint/folder/manifest.h"

#include <unistd.h>

#include <string>

#include "base/status_matchers.h"
#include "checkpoint/folder/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "logging/crc32c.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::NewTempDir;
using testing::WriteTree;

TEST(ManifestTest, ComputeListsEveryRegularFileRecursivelyExceptTheManifest) {
  const std::string dir = NewTempDir("manifest");
  WriteTree(dir, {{"a.txt", "123456789"},
                  {"empty.bin", ""},
                  {"sub/deeper/x.pt", "xyz"},
                  {"sub/loom_manifest.json", "nested, so it is data"},
                  {"loom_manifest.json", "the top-level one is excluded"}});
  ASSERT_OK_AND_ASSIGN(Manifest m, ComputeManifest(dir, Fsync::kFsync));
  EXPECT_THAT(m.files,
              ElementsAre(ManifestEntry{"a.txt", 9, 0xe3069283u}, ManifestEntry{"empty.bin", 0, 0u},
                          ManifestEntry{"sub/deeper/x.pt", 3, logging::Crc32c("xyz")},
                          ManifestEntry{"sub/loom_manifest.json", 21,
                                        logging::Crc32c("nested, so it is data")}));
  EXPECT_EQ(m.total_bytes(), 33u);
}

TEST(ManifestTest, DigestCrossesReadChunks) {
  const std::string dir = NewTempDir("manifest");
  std::string big(3 * (1 << 20) + 17, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 9));
  WriteTree(dir, {{"big.bin", big}});
  ASSERT_OK_AND_ASSIGN(FileDigest d, DigestFile(dir + "/big.bin", Fsync::kNo));
  EXPECT_EQ(d.size, big.size());
  EXPECT_EQ(d.crc32c, logging::Crc32c(big));
  EXPECT_THAT(DigestFile(dir + "/nope.bin", Fsync::kNo),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope.bin")));
}

TEST(ManifestTest, SymlinksAreRejected) {
  const std::string dir = NewTempDir("manifest");
  WriteTree(dir, {{"real.bin", "r"}});
  ASSERT_EQ(::symlink("real.bin", (dir + "/link.bin").c_str()), 0);
  EXPECT_THAT(ComputeManifest(dir, Fsync::kNo),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("link.bin' is a symbolic link; a checkpoint folder may hold "
                                 "only regular files and directories")));
}

TEST(ManifestTest, SerializesExactly) {
  Manifest m;
  m.files = {{"model.safetensors", 9, 0xe3069283u}, {"sub/x.pt", 0, 0u}};
  ASSERT_OK_AND_ASSIGN(std::string json, SerializeManifest(m));
  EXPECT_EQ(json,
            "{\n"
            "  \"format\": \"loom-checkpoint-manifest\",\n"
            "  \"version\": 1,\n"
            "  \"files\": [\n"
            "    {\n"
            "      \"path\": \"model.safetensors\",\n"
            "      \"size\": 9,\n"
            "      \"crc32c\": \"e3069283\"\n"
            "    },\n"
            "    {\n"
            "      \"path\": \"sub/x.pt\",\n"
            "      \"size\": 0,\n"
            "      \"crc32c\": \"00000000\"\n"
            "    }\n"
            "  ]\n"
            "}\n");
  ASSERT_OK_AND_ASSIGN(Manifest back, ParseManifest(json));
  EXPECT_EQ(back.files, m.files);
}

TEST(ManifestTest, NonUtf8NamesCannotBeRecorded) {
  Manifest m;
  m.files = {{"bad\xff.bin", 1, 0}};
  EXPECT_THAT(SerializeManifest(m),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid UTF-8")));
}

std::string WithFiles(const std::string& files) {
  return R"({"format": "loom-checkpoint-manifest", "version": 1, "files": [)" + files + "]}";
}

TEST(ManifestTest, ParseRejectsMalformedManifests) {
  const struct {
    std::string json;
    std::string message;
  } cases[] = {
      {"", "loom_manifest.json is malformed: not valid JSON"},
      {WithFiles(R"({"path": "a", "size": 1, "crc32c": "00000000"})").substr(0, 60),
       "not valid JSON (truncated or overwritten?)"},
      {"[]", "not a JSON object"},
      {R"({"format": "x", "version": 1, "files": []})",
       "\"format\" is not \"loom-checkpoint-manifest\""},
      {R"({"format": "loom-checkpoint-manifest", "version": 2, "files": []})",
       "version 2 is not supported (this loom reads version 1"},
      {R"({"format": "loom-checkpoint-manifest", "files": []})",
       "\"version\" is missing or not an integer"},
      {R"({"format": "loom-checkpoint-manifest", "version": 1})", "\"files\" is not a list"},
      {WithFiles("3"), "an entry of \"files\" is not an object"},
      {WithFiles(R"({"size": 1, "crc32c": "00000000"})"), "an entry has no \"path\""},
      {WithFiles(R"({"path": "../x", "size": 1, "crc32c": "00000000"})"),
       "entry '../x' has an empty, '.' or '..' component"},
      {WithFiles(R"({"path": "a//b", "size": 1, "crc32c": "00000000"})"),
       "entry 'a//b' has an empty, '.' or '..' component"},
      {WithFiles(R"({"path": "/etc/passwd", "size": 1, "crc32c": "00000000"})"),
       "entry '/etc/passwd' is an absolute path"},
      {WithFiles(R"({"path": "", "size": 1, "crc32c": "00000000"})"), "an entry has an empty path"},
      {WithFiles(R"({"path": "loom_manifest.json", "size": 1, "crc32c": "00000000"})"),
       "it lists itself"},
      {WithFiles(R"({"path": "a", "size": -1, "crc32c": "00000000"})"),
       "entry 'a' has no non-negative integer \"size\""},
      {WithFiles(R"({"path": "a", "size": 1, "crc32c": "0000000g"})"),
       "entry 'a' has no 8-hex-digit \"crc32c\""},
      {WithFiles(R"({"path": "a", "size": 1, "crc32c": 5})"),
       "entry 'a' has no 8-hex-digit \"crc32c\""},
      {WithFiles(R"({"path": "a", "size": 1, "crc32c": "00000000"},)"
                 R"({"path": "a", "size": 1, "crc32c": "00000000"})"),
       "entry 'a' appears twice"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(ParseManifest(c.json), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(c.message)))
        << c.json;
  }
  ASSERT_OK_AND_ASSIGN(
      Manifest upper,
      ParseManifest(WithFiles(R"({"path": "a", "size": 1, "crc32c": "E3069283"})")));
  EXPECT_THAT(upper.files, ElementsAre(ManifestEntry{"a", 1, 0xe3069283u}));
}

}  // namespace
}  // namespace loom::checkpoint
