#include "checkpoint/rng_state_file.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <stdlib.h>
#include <torch/serialize.h>
#include <torch/types.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rng/python_rng.h"
#include "rng/rng_state.h"
#include "rng/seed.h"

namespace loom::checkpoint {
namespace {

using rng::CaptureRngState;
using rng::GeneratorSet;
using rng::HostGenerator;
using rng::Mt19937State;
using rng::NumpyStateAfterSeed;
using rng::PythonRandomStateAfterSeed;
using rng::RestoreRngState;
using rng::RngState;
using rng::SetSeed;

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string d = std::string(t ? t : "/tmp") + "/rng_state_file_test_XXXXXX";
  return ::mkdtemp(d.data());
}

torch::Tensor DrawTorch() {
  return torch::cat({torch::rand({5}), torch::randn({3}), torch::randperm(8).to(torch::kFloat),
                     torch::dropout(torch::ones({16}), 0.5, /*train=*/true)});
}

void WritePickle(const std::string& path, const c10::IValue& value) {
  const std::vector<char> bytes = torch::pickle_save(value);
  ASSERT_OK(base::WriteFileAtomically(path, std::string(bytes.begin(), bytes.end())));
}

// A well-formed file's dict, to be broken one key at a time.
c10::impl::GenericDict GoodDict() {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("format", std::string(kRngStateFormat));
  d.insert("version", kRngStateVersion);
  d.insert("cpu", at::detail::getDefaultCPUGenerator().get_state());
  d.insert("loom_host", c10::Dict<std::string, std::string>());
  return d;
}

TEST(RngStateFileNameTest, FollowsHfNaming) {
  EXPECT_EQ(RngStateFileName(0, 1), "rng_state.pth");
  EXPECT_EQ(RngStateFileName(0, 0), "rng_state.pth");
  EXPECT_EQ(RngStateFileName(0, 2), "rng_state_0.pth");
  EXPECT_EQ(RngStateFileName(3, 8), "rng_state_3.pth");
}

TEST(RngStateFileTest, SaveLoadRestoreReplaysEveryGenerator) {
  GeneratorSet host;
  ASSERT_OK(SetSeed(17, &host));
  HostGenerator* sampler = host.Get("sampler");
  HostGenerator* augment = host.Get("augment");
  DrawTorch();
  (*sampler)();
  ASSERT_OK_AND_ASSIGN(RngState saved, CaptureRngState(host));
  const std::string path = TempDir() + "/" + RngStateFileName(0, 1);
  ASSERT_OK(SaveRngState(saved, path));

  const torch::Tensor first = DrawTorch();
  const uint64_t first_sampler = (*sampler)(), first_augment = (*augment)();
  EXPECT_FALSE(torch::equal(DrawTorch(), first));  // no restore: different numbers
  EXPECT_NE((*sampler)(), first_sampler);

  ASSERT_OK_AND_ASSIGN(RngState loaded, LoadRngState(path));
  EXPECT_TRUE(torch::equal(loaded.cpu, saved.cpu));
  EXPECT_EQ(loaded.host, saved.host);
  EXPECT_EQ(loaded.cuda.size(), saved.cuda.size());
  ASSERT_OK(RestoreRngState(loaded, &host));
  EXPECT_TRUE(torch::equal(DrawTorch(), first));
  EXPECT_EQ((*sampler)(), first_sampler);
  EXPECT_EQ((*augment)(), first_augment);

  // A second process (here: a fresh set) resumes the same way.
  GeneratorSet resumed;
  ASSERT_OK(RestoreRngState(loaded, &resumed));
  EXPECT_TRUE(torch::equal(DrawTorch(), first));
  EXPECT_EQ((*resumed.Get("sampler"))(), first_sampler);
}

// The top-level keys of a saved file, sorted.
std::vector<std::string> Keys(const c10::IValue& root) {
  std::vector<std::string> keys;
  for (const auto& entry : root.toGenericDict()) keys.push_back(entry.key().toStringRef());
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<int64_t> Ints(c10::ArrayRef<c10::IValue> values) {
  std::vector<int64_t> out;
  for (const c10::IValue& v : values) out.push_back(v.toInt());
  return out;
}

std::vector<int64_t> Words(const Mt19937State& s) { return {s.key.begin(), s.key.end()}; }

TEST(RngStateFileTest, WritesHfPythonAndNumpyEntriesForTheBaseSeed) {
  GeneratorSet host;
  ASSERT_OK(SetSeed(1234, &host));
  host.Get("sampler");
  ASSERT_OK_AND_ASSIGN(RngState state, CaptureRngState(host));
  const std::string path = TempDir() + "/rng_state.pth";
  ASSERT_OK(SaveRngState(state, path));
  ASSERT_OK_AND_ASSIGN(const std::string bytes, base::ReadFile(path));
  const c10::IValue root = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  std::vector<std::string> expected_keys = {"cpu",   "format", "loom_host", "loom_host_base_seed",
                                            "numpy", "python", "version"};
  if (!state.cuda.empty()) expected_keys.insert(expected_keys.begin() + 1, "cuda");
  EXPECT_EQ(Keys(root), expected_keys);
  const c10::impl::GenericDict dict = root.toGenericDict();
  EXPECT_EQ(dict.at("loom_host_base_seed").toInt(), 1234);

  // "python": random.getstate() after random.seed(1234) = (3, (624 words..., 624), None).
  const auto python = dict.at("python").toTupleRef().elements();
  ASSERT_EQ(python.size(), 3u);
  EXPECT_EQ(python[0].toInt(), 3);
  std::vector<int64_t> internal = Ints(python[1].toTupleRef().elements());
  std::vector<int64_t> expected_internal = Words(PythonRandomStateAfterSeed(1234));
  expected_internal.push_back(624);
  EXPECT_EQ(internal, expected_internal);
  EXPECT_EQ(internal[0], 2147483648);  // CPython's random.seed(1234): 0x80000000, 681931688, ...
  EXPECT_EQ(internal[1], 681931688);
  EXPECT_TRUE(python[2].isNone());

  // "numpy": np.random.get_state() after np.random.seed(1234), key as a list.
  const auto numpy = dict.at("numpy").toTupleRef().elements();
  ASSERT_EQ(numpy.size(), 5u);
  EXPECT_EQ(numpy[0].toStringRef(), "MT19937");
  const std::vector<int64_t> key = Ints(numpy[1].toListRef());
  EXPECT_EQ(key, Words(*NumpyStateAfterSeed(1234)));
  EXPECT_EQ(key[0], 1234);  // numpy: 1234, 3159640283, ...
  EXPECT_EQ(key[1], 3159640283);
  EXPECT_EQ(numpy[2].toInt(), 624);
  EXPECT_EQ(numpy[3].toInt(), 0);
  EXPECT_EQ(numpy[4].toDouble(), 0.0);

  ASSERT_OK_AND_ASSIGN(RngState loaded, LoadRngState(path));
  EXPECT_EQ(loaded.host_base_seed, std::optional<uint64_t>(1234));
}

TEST(RngStateFileTest, BaseSeedsOutsideNumpysRange) {
  const std::string path = TempDir() + "/rng_state.pth";
  for (uint64_t seed : {uint64_t{1} << 32, ~uint64_t{0}}) {
    GeneratorSet host;
    host.Seed(seed);
    ASSERT_OK_AND_ASSIGN(RngState state, CaptureRngState(host));
    ASSERT_OK(SaveRngState(state, path));
    ASSERT_OK_AND_ASSIGN(const std::string bytes, base::ReadFile(path));
    const c10::IValue root = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    const std::vector<std::string> keys = Keys(root);
    EXPECT_EQ(std::count(keys.begin(), keys.end(), "numpy"), 0) << seed;  // numpy would raise
    EXPECT_EQ(std::count(keys.begin(), keys.end(), "python"), 1) << seed;
    ASSERT_OK_AND_ASSIGN(RngState loaded, LoadRngState(path));
    EXPECT_EQ(loaded.host_base_seed, std::optional<uint64_t>(seed));  // all 64 bits survive
  }
  // Without a base seed there is nothing to derive the Python entries from.
  GeneratorSet host;
  ASSERT_OK_AND_ASSIGN(RngState state, CaptureRngState(host));
  state.host_base_seed.reset();
  ASSERT_OK(SaveRngState(state, path));
  ASSERT_OK_AND_ASSIGN(const std::string bytes, base::ReadFile(path));
  const std::vector<std::string> keys =
      Keys(torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end())));
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "python"), 0);
  ASSERT_OK_AND_ASSIGN(RngState loaded, LoadRngState(path));
  EXPECT_FALSE(loaded.host_base_seed.has_value());
}

TEST(RngStateFileTest, AcceptsHfSingleTensorCudaAndIgnoresUnknownKeys) {
  const std::string path = TempDir() + "/rng_state.pth";
  c10::impl::GenericDict d = GoodDict();
  d.insert("cuda", torch::zeros({16}, torch::kByte));
  d.insert("python", std::string("not used by loom"));
  WritePickle(path, d);
  ASSERT_OK_AND_ASSIGN(RngState loaded, LoadRngState(path));
  ASSERT_EQ(loaded.cuda.size(), 1u);
  EXPECT_EQ(loaded.cuda[0].numel(), 16);
  EXPECT_TRUE(loaded.host.empty());
}

TEST(RngStateFileTest, SaveRejectsAnIncompleteState) {
  const std::string path = TempDir() + "/rng_state.pth";
  EXPECT_THAT(
      SaveRngState(RngState(), path),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr(path), HasSubstr("\"cpu\""))));
  EXPECT_THAT(base::ReadFile(path), StatusIs(absl::StatusCode::kNotFound, HasSubstr(path)));
}

TEST(RngStateFileTest, MissingFileIsNotFound) {
  const std::string path = TempDir() + "/nope.pth";
  EXPECT_THAT(LoadRngState(path), StatusIs(absl::StatusCode::kNotFound, HasSubstr(path)));
}

TEST(RngStateFileTest, GarbageBytesAreDataLossNotACrash) {
  const std::string dir = TempDir();
  GeneratorSet host;
  host.Get("sampler");
  ASSERT_OK_AND_ASSIGN(RngState state, CaptureRngState(host));
  const std::string good_path = dir + "/good.pth";
  ASSERT_OK(SaveRngState(state, good_path));
  ASSERT_OK_AND_ASSIGN(const std::string good, base::ReadFile(good_path));
  ASSERT_GT(good.size(), 1000u);

  std::vector<std::string> bad = {""};
  // Truncations: every 1/32 of the file and the last few bytes.
  for (size_t n = 0; n < good.size(); n += good.size() / 32) bad.push_back(good.substr(0, n));
  for (size_t cut = 4; cut <= 24; ++cut) bad.push_back(good.substr(0, good.size() - cut));
  std::mt19937_64 rng(1);
  for (size_t size : {1, 7, 64, 1000, 5000, 100000}) {
    std::string random(size, '\0');
    for (char& c : random) c = static_cast<char>(rng());
    bad.push_back(random);
    bad.push_back("PK\x03\x04" + random);  // zip magic, then garbage
  }
  const std::string path = dir + "/bad.pth";
  for (size_t i = 0; i < bad.size(); ++i) {
    ASSERT_OK(base::WriteFileAtomically(path, bad[i]));
    EXPECT_THAT(LoadRngState(path),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(path), HasSubstr("not a readable torch pickle"))))
        << "case " << i << " (" << bad[i].size() << " bytes)";
  }

  // The zip reader tolerates losing the last 1-3 bytes (the end record's zero comment
  // length); then nothing is lost and the state must come back intact.
  for (size_t cut = 1; cut <= 3; ++cut) {
    ASSERT_OK(base::WriteFileAtomically(path, good.substr(0, good.size() - cut)));
    absl::StatusOr<RngState> loaded = LoadRngState(path);
    if (!loaded.ok()) {
      EXPECT_THAT(loaded, StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path)));
      continue;
    }
    EXPECT_TRUE(torch::equal(loaded->cpu, state.cpu)) << "cut " << cut;
    EXPECT_EQ(loaded->host, state.host) << "cut " << cut;
  }

  // Flipped bytes anywhere: an error (the zip CRCs catch the payload), never a crash.
  for (int i = 0; i < 200; ++i) {
    std::string corrupt = good;
    corrupt[rng() % corrupt.size()] ^= static_cast<char>(1 + rng() % 255);
    ASSERT_OK(base::WriteFileAtomically(path, corrupt));
    absl::StatusOr<RngState> loaded = LoadRngState(path);
    if (loaded.ok()) continue;  // a flip in a byte nothing reads (e.g. zip comment padding)
    EXPECT_THAT(loaded.status().code(),
                AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kInvalidArgument))
        << loaded.status();
    EXPECT_THAT(std::string(loaded.status().message()), HasSubstr(path));
  }
}

struct BadShape {
  std::string name;
  c10::IValue value;
  std::string expected;  // substring of the error
};

TEST(RngStateFileTest, WrongShapesAreInvalidArgumentNamingTheKey) {
  const std::string path = TempDir() + "/rng_state.pth";
  auto with = [](const std::string& key, c10::IValue v) {
    c10::impl::GenericDict d = GoodDict();
    d.insert_or_assign(key, std::move(v));
    return c10::IValue(d);
  };
  auto without = [](const std::string& key) {
    c10::impl::GenericDict d = GoodDict();
    (void)d.erase(key);
    return c10::IValue(d);
  };
  c10::List<at::Tensor> float_list;
  float_list.push_back(torch::zeros({4}));
  c10::Dict<std::string, int64_t> int_host;
  int_host.insert("sampler", 3);
  c10::impl::GenericDict int_keys(c10::IntType::get(), c10::AnyType::get());
  int_keys.insert(int64_t{1}, std::string("x"));

  const std::vector<BadShape> cases = {
      {"top-level int", c10::IValue(int64_t{3}), "the top level must be a dict"},
      {"int keys", c10::IValue(int_keys), "non-string key"},
      {"no format", without("format"), "key \"format\" is missing"},
      {"other format", with("format", std::string("hf")), "key \"format\" must be the string"},
      {"no version", without("version"), "key \"version\" is missing"},
      {"string version", with("version", std::string("1")), "key \"version\" must be an int"},
      {"future version", with("version", int64_t{2}), "key \"version\" is 2"},
      {"no cpu", without("cpu"), "key \"cpu\" is missing"},
      {"string cpu", with("cpu", std::string("x")), "key \"cpu\" must be a uint8 tensor"},
      {"float cpu", with("cpu", torch::zeros({8})), "key \"cpu\" must be a 1-D uint8"},
      {"2-D cpu", with("cpu", torch::zeros({2, 2}, torch::kByte)), "key \"cpu\" must be a 1-D"},
      {"int cuda", with("cuda", int64_t{0}), "key \"cuda\" must be a list"},
      {"float cuda", with("cuda", float_list), "key \"cuda[0]\" must be a 1-D uint8"},
      {"list host", with("loom_host", float_list), "key \"loom_host\" must be a dict"},
      {"int host", with("loom_host", int_host), "key \"loom_host[\"sampler\"]\" must be a string"},
      {"string base seed", with("loom_host_base_seed", std::string("42")),
       "key \"loom_host_base_seed\" must be an int"},
  };
  for (const BadShape& c : cases) {
    WritePickle(path, c.value);
    EXPECT_THAT(LoadRngState(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                             AllOf(HasSubstr(path), HasSubstr(c.expected))))
        << c.name;
  }
  WritePickle(path, GoodDict());
  EXPECT_OK(LoadRngState(path));
}

// random.getstate() / np.random.get_state() as LibTorch can pickle them (numpy's key a list).
c10::IValue PythonTuple(int64_t version, int64_t word0, int64_t pos, c10::IValue gauss) {
  std::vector<c10::IValue> internal(624, c10::IValue(int64_t{0x9e3779b9}));
  internal[0] = word0;
  internal.emplace_back(pos);
  return c10::ivalue::Tuple::create(
      {c10::IValue(version), c10::ivalue::Tuple::create(std::move(internal)), gauss});
}
c10::IValue NumpyTuple(const std::string& name, size_t words, int64_t pos) {
  return c10::ivalue::Tuple::create(
      {c10::IValue(name), c10::IValue(c10::List<int64_t>(std::vector<int64_t>(words, 7))),
       c10::IValue(pos), c10::IValue(int64_t{1}), c10::IValue(-0.25)});
}

// HF Trainer's layout (transformers 4.38 `_save_rng_state`) or accelerate's (0.27
// `save_accelerator_state`), with no "format".
c10::impl::GenericDict PythonLayoutDict(bool accelerate) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert(accelerate ? "random_state" : "python", PythonTuple(3, 0xfffffffe, 17, 0.5));
  d.insert(accelerate ? "numpy_random_seed" : "numpy", NumpyTuple("MT19937", 624, 300));
  d.insert(accelerate ? "torch_manual_seed" : "cpu",
           at::detail::getDefaultCPUGenerator().get_state());
  if (accelerate) d.insert("torch_cuda_manual_seed", c10::List<at::Tensor>());
  return d;
}

TEST(RngStateFileTest, ReadsHfAndAccelerateLayouts) {
  const std::string path = TempDir() + "/python.pth";
  for (bool accelerate : {false, true}) {
    WritePickle(path, PythonLayoutDict(accelerate));
    ASSERT_OK_AND_ASSIGN(RngState loaded, LoadRngState(path));
    ASSERT_TRUE(loaded.python.has_value());
    EXPECT_EQ(loaded.python->mt.key[0], 0xfffffffeu);
    EXPECT_EQ(loaded.python->mt.key[1], 0x9e3779b9u);
    EXPECT_EQ(loaded.python->mt.pos, 17);
    EXPECT_EQ(loaded.python->gauss_next, std::optional<double>(0.5));
    ASSERT_TRUE(loaded.numpy.has_value());
    EXPECT_EQ(loaded.numpy->mt.key[623], 7u);
    EXPECT_EQ(loaded.numpy->mt.pos, 300);
    EXPECT_EQ(loaded.numpy->has_gauss, 1);
    EXPECT_EQ(loaded.numpy->cached_gaussian, -0.25);
    EXPECT_TRUE(torch::equal(loaded.cpu, at::detail::getDefaultCPUGenerator().get_state()));
    EXPECT_TRUE(loaded.cuda.empty());
    EXPECT_TRUE(loaded.host.empty());
    EXPECT_FALSE(loaded.host_base_seed.has_value());
  }
}

TEST(RngStateFileTest, BadPythonStatesAreInvalidArgumentNamingTheKey) {
  const std::string path = TempDir() + "/python.pth";
  auto with = [](const std::string& key, c10::IValue v) {
    c10::impl::GenericDict d = PythonLayoutDict(/*accelerate=*/false);
    d.insert_or_assign(key, std::move(v));
    return c10::IValue(d);
  };
  c10::impl::GenericDict no_cpu = PythonLayoutDict(/*accelerate=*/true);
  (void)no_cpu.erase("torch_manual_seed");
  const std::vector<BadShape> cases = {
      {"word of 2^32", with("python", PythonTuple(3, int64_t{1} << 32, 624, c10::IValue())),
       "key \"python\" must hold an int in [0, 4294967296), got 4294967296"},
      {"negative word", with("python", PythonTuple(3, -1, 624, c10::IValue())),
       "key \"python\" must hold an int in [0, 4294967296), got -1"},
      {"Python 2 state", with("python", PythonTuple(2, 0, 624, c10::IValue())),
       "version-3 random.getstate()"},
      {"position 625", with("python", PythonTuple(3, 0, 625, c10::IValue())),
       "must hold an int in [0, 625), got 625"},
      {"string gauss", with("python", PythonTuple(3, 0, 624, std::string("x"))),
       "has a gauss_next of type"},
      {"not a tuple", with("python", int64_t{3}), "key \"python\" must be random.getstate()"},
      {"other numpy generator", with("numpy", NumpyTuple("PCG64", 624, 0)), "'MT19937'"},
      {"short numpy key", with("numpy", NumpyTuple("MT19937", 623, 0)), "a key of 624 uint32"},
      {"numpy position", with("numpy", NumpyTuple("MT19937", 624, 625)),
       "key \"numpy\" must hold an int in [0, 625)"},
      {"float cpu", with("cpu", torch::zeros({8})), "key \"cpu\" must be a 1-D uint8"},
      {"accelerate without torch_manual_seed", c10::IValue(no_cpu), "key \"format\" is missing"},
  };
  for (const BadShape& c : cases) {
    WritePickle(path, c.value);
    EXPECT_THAT(LoadRngState(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                             AllOf(HasSubstr(path), HasSubstr(c.expected))))
        << c.name;
  }
}

TEST(RngStateFileTest, AccelerateKeysAreAccelerate027s) {
  GeneratorSet host;
  ASSERT_OK(SetSeed(1234, &host));
  ASSERT_OK_AND_ASSIGN(RngState state, CaptureRngState(host));
  const std::string path = TempDir() + "/random_states_0.pkl";
  ASSERT_OK(SaveRngState(state, path, RngFileOptions{.accelerate_keys = true}));
  ASSERT_OK_AND_ASSIGN(const std::string bytes, base::ReadFile(path));
  const c10::IValue root = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  // accelerate 0.27 save_accelerator_state without XPU or TPU, plus HF's and loom's keys.
  std::vector<std::string> expected = {"cpu",
                                       "format",
                                       "loom_host",
                                       "loom_host_base_seed",
                                       "numpy",
                                       "numpy_random_seed",
                                       "python",
                                       "random_state",
                                       "torch_cuda_manual_seed",
                                       "torch_manual_seed",
                                       "version"};
  if (!state.cuda.empty()) expected.insert(expected.begin() + 1, "cuda");
  EXPECT_EQ(Keys(root), expected);
  const c10::impl::GenericDict dict = root.toGenericDict();
  // torch.cuda.get_rng_state_all(): one state per device, an empty list without CUDA.
  EXPECT_EQ(dict.at("torch_cuda_manual_seed").toListRef().size(), state.cuda.size());
  EXPECT_TRUE(torch::equal(dict.at("torch_manual_seed").toTensor(), state.cpu));
  EXPECT_EQ(dict.at("random_state").toTupleRef().elements()[1].toTupleRef().elements()[0].toInt(),
            2147483648);  // random.seed(1234)'s first word
}

}  // namespace
}  // namespace loom::checkpoint
