// AioEngine on real files: round trips of sizes that are and are not multiples of block_size,
// over every mode (single_submit, overlap_events off, several threads, queue depth 1), the
// asynchronous calls, the errors (bad options, a missing folder, a read-only folder, a missing
// file, an unaligned buffer), and the O_DIRECT probe (and the engine on tmpfs).
#include "aio/aio_engine.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::aio {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string TempDir() { return std::getenv("TEST_TMPDIR"); }

AlignedBuffer Pattern(int64_t bytes, uint32_t seed) {
  AlignedBuffer b(bytes);
  auto* p = static_cast<uint32_t*>(b.data());
  for (int64_t i = 0; i < b.size() / 4; ++i) p[i] = seed * 2654435761u + static_cast<uint32_t>(i);
  return b;
}

TEST(AioEngineTest, RoundTripsInEveryMode) {
  const std::vector<AioOptions> modes = {
      AioOptions(),
      AioOptions().set_block_size(4096).set_queue_depth(1),
      AioOptions().set_block_size(8192).set_queue_depth(3).set_single_submit(true),
      AioOptions().set_block_size(4096).set_queue_depth(4).set_overlap_events(false),
      AioOptions().set_block_size(16384).set_queue_depth(2).set_thread_count(3),
  };
  int n = 0;
  for (const AioOptions& o : modes) {
    ASSERT_OK_AND_ASSIGN(auto engine, AioEngine::Create(o));
    for (int64_t bytes : {int64_t{4096}, int64_t{12288}, int64_t{1} << 20, int64_t{3} << 20}) {
      const std::string path = TempDir() + "/f" + std::to_string(n++) + ".swp";
      AlignedBuffer src = Pattern(bytes, static_cast<uint32_t>(n));
      ASSERT_OK(engine->Write(path, src.data(), src.size()));
      struct stat st;
      ASSERT_EQ(::stat(path.c_str(), &st), 0);
      EXPECT_EQ(st.st_size, src.size());
      EXPECT_NE(::access((path + ".partial").c_str(), F_OK), 0);
      AlignedBuffer dst(bytes);
      ASSERT_OK(engine->Read(path, dst.data(), dst.size()));
      EXPECT_EQ(std::memcmp(src.data(), dst.data(), static_cast<size_t>(bytes)), 0)
          << bytes << " bytes, block " << o.block_size;
    }
  }
}

TEST(AioEngineTest, AsynchronousCalls) {
  ASSERT_OK_AND_ASSIGN(auto engine, AioEngine::Create(AioOptions().set_block_size(65536)));
  AlignedBuffer a = Pattern(1 << 20, 1), b = Pattern(1 << 20, 2);
  auto wa = engine->WriteAsync(TempDir() + "/a.swp", a.data(), a.size());
  auto wb = engine->WriteAsync(TempDir() + "/b.swp", b.data(), b.size());
  ASSERT_OK(wa.get());
  ASSERT_OK(wb.get());
  AlignedBuffer ra(1 << 20), rb(1 << 20);
  auto fa = engine->ReadAsync(TempDir() + "/a.swp", ra.data(), ra.size());
  auto fb = engine->ReadAsync(TempDir() + "/b.swp", rb.data(), rb.size());
  ASSERT_OK(fa.get());
  ASSERT_OK(fb.get());
  EXPECT_EQ(std::memcmp(a.data(), ra.data(), a.size()), 0);
  EXPECT_EQ(std::memcmp(b.data(), rb.data(), b.size()), 0);
}

TEST(AioEngineTest, Errors) {
  EXPECT_THAT(AioEngine::Create(AioOptions().set_block_size(1000)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("aio.block_size: 1000")));
  EXPECT_THAT(AioEngine::Create(AioOptions().set_queue_depth(0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("aio.queue_depth")));
  ASSERT_OK_AND_ASSIGN(auto engine, AioEngine::Create(AioOptions()));
  AlignedBuffer buf(8192);
  EXPECT_THAT(engine->Write(TempDir() + "/no/such/folder/x.swp", buf.data(), buf.size()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/no/such/folder/x.swp")));
  EXPECT_THAT(engine->Read(TempDir() + "/missing.swp", buf.data(), buf.size()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.swp")));
  EXPECT_THAT(engine->Write(TempDir() + "/u.swp", static_cast<char*>(buf.data()) + 1, 4096),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("aligned")));
  // Reading past the end of a file is a short read, not garbage.
  ASSERT_OK(engine->Write(TempDir() + "/short.swp", buf.data(), 4096));
  EXPECT_THAT(engine->Read(TempDir() + "/short.swp", buf.data(), 8192),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("short reading")));
}

TEST(AioEngineTest, DirectIoProbe) {
  ASSERT_OK_AND_ASSIGN(const bool direct, CheckDirectIo(TempDir()));
  std::cout << "O_DIRECT under TEST_TMPDIR: " << (direct ? "yes" : "no (buffered fallback)")
            << "\n";
  if (::access("/dev/shm", W_OK) == 0) {
    ASSERT_OK_AND_ASSIGN(const bool shm, CheckDirectIo("/dev/shm"));
    // tmpfs takes O_DIRECT from Linux 6.6 on; either way the engine works there.
    std::cout << "O_DIRECT on /dev/shm: " << (shm ? "yes" : "no (buffered fallback)") << "\n";
    ASSERT_OK_AND_ASSIGN(auto engine, AioEngine::Create(AioOptions()));
    const std::string path = "/dev/shm/loom-aio-test-" + std::to_string(::getpid());
    AlignedBuffer src = Pattern(65536, 9), dst(65536);
    ASSERT_OK(engine->Write(path, src.data(), src.size()));
    ASSERT_OK(engine->Read(path, dst.data(), dst.size()));
    ::unlink(path.c_str());
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), 65536), 0);
  }
  EXPECT_THAT(CheckDirectIo(TempDir() + "/nope"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
  std::ofstream(TempDir() + "/plain") << "x";
  EXPECT_THAT(CheckDirectIo(TempDir() + "/plain"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a folder")));
  if (::geteuid() != 0) {
    const std::string ro = TempDir() + "/ro";
    ::mkdir(ro.c_str(), 0555);
    EXPECT_THAT(CheckDirectIo(ro), StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("ro")));
  }
}

}  // namespace
}  // namespace loom::aio
