// loom reads the RNG files Python writes: testdata/hf_rng_state.pth (transformers 4.38
// `Trainer._save_rng_state`) and testdata/accelerate_random_states_0.pkl (accelerate 0.27
// `save_accelerator_state`), both written by make_rng_golden.py with Debian's /usr/bin/python3
// (torch 1.13, numpy) mid-stream. Each state must come back value for value: the Python and
// numpy MT19937 words, positions and cached Gaussians as Python recorded them (and the next
// random() numbers they give, computed here from the words), and the torch CPU state, which,
// once restored, must give the draws Python made after torch.set_rng_state.
#include <ATen/core/ivalue.h>
#include <torch/serialize.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "checkpoint/rng_state_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rng/python_rng.h"
#include "rng/rng_state.h"
#include "tests/rng/reference_draws.h"

namespace loom::rng::testing {
namespace {

std::string RunfilePath(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return rel;
  return std::string(srcdir) + "/" + workspace + "/" + rel;
}

// MT19937's next 32-bit output from `s` (Matsumoto & Nishimura's genrand_int32), advancing it.
uint32_t NextWord(Mt19937State& s) {
  constexpr int kN = kMt19937Words, kM = 397;
  if (s.pos >= kN) {
    for (int i = 0; i < kN; ++i) {
      const uint32_t y = (s.key[i] & 0x80000000u) | (s.key[(i + 1) % kN] & 0x7fffffffu);
      s.key[i] = s.key[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    s.pos = 0;
  }
  uint32_t y = s.key[s.pos++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

// Python's random.random() and numpy's legacy random_sample(): a 53-bit float from two words.
std::vector<double> Random3(Mt19937State s) {
  std::vector<double> out;
  for (int i = 0; i < 3; ++i) {
    const uint32_t a = NextWord(s) >> 5, b = NextWord(s) >> 6;
    out.push_back((a * 67108864.0 + b) * (1.0 / 9007199254740992.0));
  }
  return out;
}

std::vector<double> Doubles(const Mt19937State& s, bool with_pos) {
  std::vector<double> out(s.key.begin(), s.key.end());
  if (with_pos) out.push_back(s.pos);
  return out;
}

struct Golden {
  std::string file;      // under tests/rng/testdata
  std::string expected;  // make_rng_golden.py's .txt
};

void PrintTo(const Golden& golden, std::ostream* os) { *os << golden.file; }

class PythonRngFilesGoldenTest : public ::testing::TestWithParam<Golden> {
 protected:
  std::string Path(const std::string& name) { return RunfilePath("tests/rng/testdata/" + name); }
  std::map<std::string, std::vector<double>> Expected() {
    auto text = base::ReadFile(Path(GetParam().expected));
    EXPECT_OK(text.status());
    auto draws = ParseDraws(text.ok() ? *text : "");
    EXPECT_OK(draws.status());
    std::map<std::string, std::vector<double>> out;
    if (draws.ok()) out.insert(draws->begin(), draws->end());
    return out;
  }
};

TEST_P(PythonRngFilesGoldenTest, LibTorchsOwnUnpicklerCannotReadIt) {
  // Why loom reads these files with checkpoint/python_unpickler.h: LibTorch 1.13's
  // torch::pickle_load stops at numpy's array and Python's 5-byte ints.
  ASSERT_OK_AND_ASSIGN(const std::string bytes, base::ReadFile(Path(GetParam().file)));
  EXPECT_ANY_THROW(torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end())));
}

TEST_P(PythonRngFilesGoldenTest, PythonAndNumpyStatesComeBackAsRecorded) {
  std::map<std::string, std::vector<double>> expected = Expected();
  ASSERT_OK_AND_ASSIGN(const RngState state, checkpoint::LoadRngState(Path(GetParam().file)));
  ASSERT_TRUE(state.python.has_value());
  EXPECT_EQ(Doubles(state.python->mt, /*with_pos=*/true), expected["python_state"]);
  ASSERT_TRUE(state.python->gauss_next.has_value());
  EXPECT_EQ(std::vector<double>{*state.python->gauss_next}, expected["python_gauss_next"]);
  EXPECT_EQ(Random3(state.python->mt), expected["python_random3"]);

  ASSERT_TRUE(state.numpy.has_value());
  EXPECT_EQ(Doubles(state.numpy->mt, /*with_pos=*/false), expected["numpy_key"]);
  EXPECT_EQ((std::vector<double>{static_cast<double>(state.numpy->mt.pos),
                                 static_cast<double>(state.numpy->has_gauss),
                                 state.numpy->cached_gaussian}),
            expected["numpy_rest"]);
  EXPECT_EQ(Random3(state.numpy->mt), expected["numpy_random3"]);

  // Python has none of loom's host generators; no CUDA state was saved (CPU machine).
  EXPECT_TRUE(state.host.empty());
  EXPECT_FALSE(state.host_base_seed.has_value());
  EXPECT_TRUE(state.cuda.empty());
}

TEST_P(PythonRngFilesGoldenTest, RestoredTorchStateGivesPythonsDraws) {
  const std::map<std::string, std::vector<double>> expected = Expected();
  ASSERT_OK_AND_ASSIGN(const RngState state, checkpoint::LoadRngState(Path(GetParam().file)));
  int checked = 0;
  for (const std::string& name : ReferenceDrawNames()) {
    auto it = expected.find(name);
    ASSERT_NE(it, expected.end()) << name << " is not in " << GetParam().expected;
    ASSERT_OK(RestoreRngState(state, nullptr));
    ASSERT_OK_AND_ASSIGN(const std::vector<double> actual, DrawReference(name));
    EXPECT_EQ(actual, it->second) << name << ": got " << FormatDraws({{name, actual}});
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST_P(PythonRngFilesGoldenTest, ResavedFileKeepsPythonsStates) {
  ASSERT_OK_AND_ASSIGN(const RngState state, checkpoint::LoadRngState(Path(GetParam().file)));
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/resaved_rng_state.pth";
  ASSERT_OK(checkpoint::SaveRngState(state, path));
  ASSERT_OK_AND_ASSIGN(const std::string bytes, base::ReadFile(path));
  const c10::IValue root = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  const c10::impl::GenericDict dict = root.toGenericDict();
  const auto python = dict.at("python").toTupleRef().elements();
  const auto internal = python[1].toTupleRef().elements();
  ASSERT_EQ(internal.size(), 625u);
  for (int i = 0; i < kMt19937Words; ++i) {
    ASSERT_EQ(internal[i].toInt(), int64_t{state.python->mt.key[i]}) << i;
  }
  EXPECT_EQ(internal[624].toInt(), state.python->mt.pos);
  EXPECT_EQ(python[2].toDouble(), *state.python->gauss_next);
  const auto numpy = dict.at("numpy").toTupleRef().elements();
  EXPECT_EQ(numpy[2].toInt(), state.numpy->mt.pos);
  EXPECT_EQ(numpy[3].toInt(), state.numpy->has_gauss);
  EXPECT_EQ(numpy[4].toDouble(), state.numpy->cached_gaussian);
  const auto key = numpy[1].toListRef();
  ASSERT_EQ(key.size(), 624u);
  for (int i = 0; i < kMt19937Words; ++i) {
    ASSERT_EQ(key[i].toInt(), int64_t{state.numpy->mt.key[i]}) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Files, PythonRngFilesGoldenTest,
                         ::testing::Values(Golden{"hf_rng_state.pth", "hf_rng_state.txt"},
                                           Golden{"accelerate_random_states_0.pkl",
                                                  "accelerate_random_states_0.txt"}),
                         [](const ::testing::TestParamInfo<Golden>& info) {
                           return info.index == 0 ? std::string("HfTrainer")
                                                  : std::string("Accelerate");
                         });

}  // namespace
}  // namespace loom::rng::testing
