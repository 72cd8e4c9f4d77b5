// Hostile torch.save files (written by testdata/hostile/make_hostile_files.py with Python's own
// pickle and zipfile modules) through every reader of torch pickles: each is refused with an
// error naming the file and what was refused, nothing from it runs, and no reader allocates
// what the file claims (the address space is capped a little above what the process maps).
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "args/training_args.pb.h"
#include "base/status_matchers.h"
#include "checkpoint/lazy_torch_save.h"
#include "checkpoint/rng_state_file.h"
#include "checkpoint/torch_pickle.h"
#include "checkpoint/training_args_file.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kDir[] = "checkpoint/testdata/hostile/";
constexpr char kMarker[] = "/tmp/loom_hostile_pickle_ran";  // what the payloads would create

struct Case {
  const char* file;
  const char* refused;  // the error's words for what was refused
};

constexpr Case kCases[] = {
    {"os_system.pt", "the Python object posix.system is not supported"},
    {"builtins_eval.pt", "the Python object builtins.eval is not supported"},
    {"subprocess_popen.pt", "the Python object subprocess.Popen is not supported"},
    {"unknown_reduce.pt", "the Python object hostile_gadgets.Gadget is not supported"},
    {"persid_outside.pt", "storage key \"../../../etc/passwd\" is not a torch.save record key"},
    {"storage_larger_than_record.pt",
     "storage 0 claims 268435456 elements of 4 bytes but its record holds 16 bytes"},
    {"zip_dotdot.pt", "record \"archive/../../evil\" has an empty, \".\" or \"..\" path component"},
    {"zip_duplicate.pt", "record \"archive/data.pkl\" appears twice"},
    {"deep_nesting.pt",
     "the pickle nests containers 100001 deep; loom reads values nested at most 100 deep"},
    {"ten_gigabyte_claim.pt",
     "record \"archive/data/0\" of 10737418240 bytes at 282 ends past the file's records"},
};

int64_t MappedBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoll(line.substr(7)) * 1024;
  }
  return -1;
}

// Runs `read` with the address space capped at what is mapped now plus 512 MiB: reading any of
// these files never needs more, and allocating what one claims (256 Mi floats, 10 GiB) fails.
absl::Status Capped(const std::function<absl::Status()>& read) {
  rlimit old;
  EXPECT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  rlimit capped = old;
  capped.rlim_cur = static_cast<rlim_t>(MappedBytes() + (int64_t{512} << 20));
  EXPECT_EQ(setrlimit(RLIMIT_AS, &capped), 0);
  const absl::Status status = read();
  EXPECT_EQ(setrlimit(RLIMIT_AS, &old), 0);
  return status;
}

class HostileFilesTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { ::unlink(kMarker); }
  void TearDown() override { EXPECT_NE(::access(kMarker, F_OK), 0) << "a payload ran"; }
  std::string Path() const { return std::string(kDir) + GetParam().file; }
};

TEST_P(HostileFilesTest, LoadPickleRefusesIt) {
  const std::string path = Path();
  EXPECT_THAT(Capped([&] { return LoadPickle(path).status(); }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path), HasSubstr(GetParam().refused))));
}

TEST_P(HostileFilesTest, LazyTorchSaveRefusesIt) {
  const std::string path = Path();
  EXPECT_THAT(Capped([&] { return LazyTorchSave::Open(path).status(); }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path), HasSubstr(GetParam().refused))));
}

TEST_P(HostileFilesTest, TrainingArgsAndRngReadersRefuseIt) {
  const std::string path = Path();
  args::TrainingArguments args;
  EXPECT_THAT(
      Capped([&] { return LoadTrainingArgs(path, &args); }),
      StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr(path), HasSubstr(GetParam().refused))));
  EXPECT_THAT(
      Capped([&] { return LoadRngState(path).status(); }),
      StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr(path), HasSubstr(GetParam().refused))));
}

// The cap is real: allocating 1 GiB under it fails (so a reader that allocated a claim would
// fail the tests above with another error).
TEST(HostileFilesCapTest, TheCapRefusesAGigabyte) {
  EXPECT_THAT(Capped([] {
                try {
                  std::vector<char> claim(size_t{1} << 30, 1);
                  return absl::OkStatus();
                } catch (const std::bad_alloc&) {
                  return absl::ResourceExhaustedError("refused");
                }
              }),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("refused")));
}

INSTANTIATE_TEST_SUITE_P(, HostileFilesTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.file;
                           return name.substr(0, name.find('.'));
                         });

// The same machinery writing a plain state dict: the files are refused for what they hold, not
// for how the generator writes them.
TEST(HostileFilesControlTest, ThePlainFileReads) {
  const std::string path = std::string(kDir) + "control.pt";
  ASSERT_OK_AND_ASSIGN(NamedTensors tensors, LoadTorchStateDict(path));
  ASSERT_EQ(tensors.size(), 1u);
  EXPECT_EQ(tensors[0].first, "w");
  EXPECT_TRUE(at::equal(tensors[0].second, at::tensor({1.0f, 2.0f, 3.0f, 4.0f})));
  ASSERT_OK_AND_ASSIGN(auto lazy, LazyTorchSave::Open(path));
  ASSERT_OK_AND_ASSIGN(at::Tensor w,
                       lazy->Materialize(lazy->value().toGenericDict().at("w").toTensor()));
  EXPECT_TRUE(at::equal(w, at::tensor({1.0f, 2.0f, 3.0f, 4.0f})));
}

}  // namespace
}  // namespace loom::checkpoint
