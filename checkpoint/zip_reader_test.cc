#include "checkpoint/zip_reader.h"

#include <sys/resource.h>
#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "checkpoint/zip_format.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::_;
using ::testing::AllOf;
using ::testing::HasSubstr;
using zip_format::Put16;
using zip_format::Put32;
using zip_format::Put64;

// A record as the test archive builder writes it; the optional fields forge what a hostile
// archive claims.
struct Entry {
  std::string name;
  std::string data;
  uint16_t method = 0;
  uint16_t flags = 0;
  std::optional<uint64_t> claimed_size;  // in both headers, through zip64 fields
  std::optional<uint32_t> crc;
  std::optional<std::string> local_name;
};

uint32_t Crc(const std::string& s) {
  return static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(s.data()), s.size()));
}

std::string Zip64Extra(uint64_t size, std::optional<uint64_t> offset) {
  std::string x;
  Put16(x, zip_format::kZip64ExtraId);
  Put16(x, offset ? 24 : 16);
  Put64(x, size);
  Put64(x, size);
  if (offset) Put64(x, *offset);
  return x;
}

// Stored records, a central directory and its end record (PKWARE APPNOTE 6.3), written out
// independently of torch_save_writer.cc. `entries_claim` forges the end record's count.
std::string Archive(const std::vector<Entry>& entries, std::optional<uint16_t> entries_claim = {}) {
  std::string out, dir;
  for (const Entry& e : entries) {
    const uint64_t header = out.size();
    const bool big = e.claimed_size.has_value();
    const uint64_t size = big ? *e.claimed_size : e.data.size();
    const uint32_t crc = e.crc.value_or(Crc(e.data));
    const std::string local_name = e.local_name.value_or(e.name);
    Put32(out, zip_format::kLocalHeader);
    Put16(out, big ? 45 : 20);
    Put16(out, e.flags);
    Put16(out, e.method);
    Put32(out, 0x00210000);
    Put32(out, crc);
    Put32(out, big ? 0xFFFFFFFFu : static_cast<uint32_t>(size));
    Put32(out, big ? 0xFFFFFFFFu : static_cast<uint32_t>(size));
    const std::string local_extra = big ? Zip64Extra(size, std::nullopt) : "";
    Put16(out, static_cast<uint16_t>(local_name.size()));
    Put16(out, static_cast<uint16_t>(local_extra.size()));
    out += local_name + local_extra + e.data;

    const std::string extra = big ? Zip64Extra(size, header) : "";
    Put32(dir, zip_format::kCentralHeader);
    Put16(dir, 45);
    Put16(dir, big ? 45 : 20);
    Put16(dir, e.flags);
    Put16(dir, e.method);
    Put32(dir, 0x00210000);
    Put32(dir, crc);
    Put32(dir, big ? 0xFFFFFFFFu : static_cast<uint32_t>(size));
    Put32(dir, big ? 0xFFFFFFFFu : static_cast<uint32_t>(size));
    Put16(dir, static_cast<uint16_t>(e.name.size()));
    Put16(dir, static_cast<uint16_t>(extra.size()));
    Put16(dir, 0);
    Put16(dir, 0);
    Put16(dir, 0);
    Put32(dir, 0);
    Put32(dir, big ? 0xFFFFFFFFu : static_cast<uint32_t>(header));
    dir += e.name + extra;
  }
  const uint64_t dir_offset = out.size();
  out += dir;
  const uint16_t count = entries_claim.value_or(static_cast<uint16_t>(entries.size()));
  Put32(out, zip_format::kEndOfCentralDirectory);
  Put16(out, 0);
  Put16(out, 0);
  Put16(out, count);
  Put16(out, count);
  Put32(out, static_cast<uint32_t>(dir.size()));
  Put32(out, static_cast<uint32_t>(dir_offset));
  Put16(out, 0);
  return out;
}

std::vector<Entry> TorchLike() {
  return {{.name = "archive/data.pkl", .data = "pickle bytes"},
          {.name = "archive/data/0", .data = std::string(16, '\x01')},
          {.name = "archive/version", .data = "3\n"}};
}

absl::Status OpenError(const std::string& bytes) {
  absl::StatusOr<std::unique_ptr<ZipReader>> zip = ZipReader::FromBuffer(bytes, "hostile.pt");
  return zip.status();
}

TEST(ZipReaderTest, ReadsStoredRecordsUnderTheArchiveFolder) {
  const std::string bytes = Archive(TorchLike());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ZipReader> zip, ZipReader::FromBuffer(bytes, "x.pt"));
  EXPECT_EQ(zip->prefix(), "archive");
  ASSERT_EQ(zip->records().size(), 3u);
  const ZipReader::Record* pkl = zip->Find("data.pkl");
  ASSERT_NE(pkl, nullptr);
  EXPECT_EQ(pkl->name, "archive/data.pkl");
  EXPECT_EQ(pkl->size, 12u);
  EXPECT_EQ(bytes.substr(pkl->data, pkl->size), "pickle bytes");
  ASSERT_OK_AND_ASSIGN(std::string read, zip->ReadAll(*pkl));
  EXPECT_EQ(read, "pickle bytes");
  EXPECT_EQ(zip->Find("archive/data.pkl"), nullptr);
  EXPECT_EQ(zip->Find("data/1"), nullptr);
  char part[3];
  ASSERT_OK(zip->ReadAt(*zip->Find("version"), 0, 2, part));
  EXPECT_EQ(std::string(part, 2), "3\n");
  EXPECT_THAT(zip->ReadAt(*zip->Find("version"), 1, 2, part),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("end past its 2 bytes")));
}

TEST(ZipReaderTest, ReadsAFileAndItsZip64Fields) {
  std::vector<Entry> entries = TorchLike();
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/z.pt";
  const std::string bytes = Archive(entries);
  FILE* f = fopen(path.c_str(), "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ZipReader> zip, ZipReader::Open(path));
  ASSERT_OK_AND_ASSIGN(std::string data, zip->ReadAll(*zip->Find("data/0")));
  EXPECT_EQ(data, std::string(16, '\x01'));
  EXPECT_THAT(ZipReader::Open(path + ".missing"), StatusIs(absl::StatusCode::kNotFound, _));
}

TEST(ZipReaderTest, TenGigabytesClaimedInASmallFileAreRefusedWithoutAllocatingThem) {
  std::vector<Entry> entries = TorchLike();
  entries[1].claimed_size = uint64_t{10} << 30;
  const std::string bytes = Archive(entries);
  ASSERT_LT(bytes.size(), 1024u);
  // Address space capped a little above what the process maps now: allocating the claim fails.
  rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  rlimit capped = old;
  capped.rlim_cur = 4ull << 30;
  ASSERT_EQ(setrlimit(RLIMIT_AS, &capped), 0);
  const absl::Status status = OpenError(bytes);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &old), 0);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               AllOf(HasSubstr("hostile.pt"), HasSubstr("archive/data/0"),
                                     HasSubstr("10737418240 bytes"), HasSubstr("ends past"))));
}

TEST(ZipReaderTest, RefusesHostileNames) {
  for (const char* name : {"archive/../../etc/passwd", "/etc/passwd", "archive/./data.pkl",
                           "archive//x", "archive\\..\\x", ""}) {
    std::vector<Entry> entries = TorchLike();
    entries.push_back({.name = name, .data = "x"});
    EXPECT_THAT(OpenError(Archive(entries)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hostile.pt")))
        << name;
  }
  std::vector<Entry> entries = TorchLike();
  entries.push_back({.name = "archive/data.pkl", .data = "another program"});
  EXPECT_THAT(OpenError(Archive(entries)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("record \"archive/data.pkl\" appears twice")));
}

TEST(ZipReaderTest, RefusesCompressedEncryptedAndDisagreeingRecords) {
  std::vector<Entry> deflated = TorchLike();
  deflated[0].method = 8;
  EXPECT_THAT(OpenError(Archive(deflated)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("compressed (method 8)")));
  std::vector<Entry> encrypted = TorchLike();
  encrypted[0].flags = 1;
  EXPECT_THAT(OpenError(Archive(encrypted)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("encrypted")));
  std::vector<Entry> renamed = TorchLike();
  renamed[1].local_name = "archive/data/9";
  EXPECT_THAT(OpenError(Archive(renamed)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names another record")));
  std::vector<Entry> damaged = TorchLike();
  damaged[0].crc = 1234;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ZipReader> zip,
                       ZipReader::FromBuffer(Archive(damaged), "damaged.pt"));
  EXPECT_THAT(zip->ReadAll(*zip->Find("data.pkl")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("CRC-32")));
}

TEST(ZipReaderTest, RefusesAnEntryCountTheDirectoryCannotHold) {
  EXPECT_THAT(OpenError(Archive(TorchLike(), /*entries_claim=*/0xFFFE)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("claims 65534 records")));
}

TEST(ZipReaderTest, RefusesOverlappingRecords) {
  // A record whose claimed size runs over the next record's header (a zip bomb's trick: the
  // same bytes read as two records).
  std::vector<Entry> entries = {{.name = "archive/a", .data = "xx"},
                                {.name = "archive/b", .data = "yy"}};
  entries[0].claimed_size = 2 + 30;
  EXPECT_THAT(OpenError(Archive(entries)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("records \"archive/a\" and \"archive/b\" overlap")));
}

TEST(ZipReaderTest, EveryTruncationAndEveryByteFlipIsAnErrorOrAnArchive) {
  const std::string bytes = Archive(TorchLike());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(ZipReader::FromBuffer(bytes.substr(0, n), "cut.pt").ok()) << n;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0xA5);
    absl::StatusOr<std::unique_ptr<ZipReader>> zip = ZipReader::FromBuffer(flipped, "flip.pt");
    if (!zip.ok()) continue;
    for (const ZipReader::Record& r : (*zip)->records()) {
      EXPECT_LE(r.data + r.size, flipped.size());
    }
  }
}

TEST(ZipReaderTest, TheLegacyFormatIsNamed) {
  EXPECT_THAT(OpenError(std::string("\x80\x02\x8a\x0a", 4) + std::string(100, 'x')),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("_use_new_zipfile_serialization=False")));
}

}  // namespace
}  // namespace loom::checkpoint
