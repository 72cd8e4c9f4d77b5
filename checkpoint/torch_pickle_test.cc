#include "checkpoint/torch_pickle.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <string>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string TempPath(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  return std::string(root ? root : "/tmp") + "/" + name;
}

TEST(TorchPickleTest, StateDictRoundTripKeepsOrderDtypesAndValues) {
  const std::string path = TempPath("pytorch_model.bin");
  at::Tensor w = at::arange(6, at::kFloat).reshape({2, 3}).set_requires_grad(true);
  const NamedTensors sd = {{"z.weight", w},
                           {"a.bias", at::tensor({1.5, -2.0}).to(at::kBFloat16)},
                           {"m.ids", at::tensor({int64_t{3}, int64_t{-4}})},
                           {"t", w.t()}};
  ASSERT_OK(SaveTorchStateDict(path, sd));
  ASSERT_OK_AND_ASSIGN(NamedTensors loaded, LoadTorchStateDict(path));
  ASSERT_EQ(loaded.size(), sd.size());
  for (size_t i = 0; i < sd.size(); ++i) {
    EXPECT_EQ(loaded[i].first, sd[i].first);
    EXPECT_EQ(loaded[i].second.scalar_type(), sd[i].second.scalar_type());
    EXPECT_TRUE(at::equal(loaded[i].second, sd[i].second)) << sd[i].first;
    EXPECT_FALSE(loaded[i].second.requires_grad());
  }
  // The zip archive torch.save writes.
  ASSERT_OK_AND_ASSIGN(std::string bytes, base::ReadFile(path));
  EXPECT_THAT(bytes, StartsWith("PK\x03\x04"));
}

TEST(TorchPickleTest, GenericValuesRoundTrip) {
  const std::string path = TempPath("value.pt");
  c10::impl::GenericDict d(c10::IntType::get(), c10::AnyType::get());
  d.insert(int64_t{7}, c10::ivalue::Tuple::create({0.9, std::string("x")}));
  ASSERT_OK(SavePickle(path, d));
  ASSERT_OK_AND_ASSIGN(c10::IValue v, LoadPickle(path));
  ASSERT_TRUE(v.isGenericDict());
  const c10::IValue t = v.toGenericDict().at(int64_t{7});
  EXPECT_EQ(t.toTupleRef().elements()[0].toDouble(), 0.9);
  EXPECT_EQ(t.toTupleRef().elements()[1].toStringRef(), "x");
}

TEST(TorchPickleTest, PythonTorchSizeIsWrittenAsTorchSizeAndReadBackAsATuple) {
  const std::string path = TempPath("shapes.pt");
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("w", PythonTorchSize({1000, 64}));
  d.insert("b", PythonTorchSize({64}));
  d.insert("scalar", PythonTorchSize({}));
  ASSERT_OK(SavePickle(path, d));
  // What torch.save writes for a shape: GLOBAL 'torch Size' (the archive stores the pickle
  // uncompressed).
  ASSERT_OK_AND_ASSIGN(std::string bytes, base::ReadFile(path));
  EXPECT_THAT(bytes, HasSubstr("ctorch\nSize\n"));
  ASSERT_OK_AND_ASSIGN(c10::IValue v, LoadPickle(path));
  ASSERT_TRUE(v.isGenericDict());
  const auto dims = [&](const char* key) {
    std::vector<int64_t> out;
    for (const c10::IValue& e : v.toGenericDict().at(key).toTupleRef().elements()) {
      out.push_back(e.toInt());
    }
    return out;
  };
  EXPECT_EQ(dims("w"), (std::vector<int64_t>{1000, 64}));
  EXPECT_EQ(dims("b"), (std::vector<int64_t>{64}));
  EXPECT_TRUE(dims("scalar").empty());
}

TEST(TorchPickleTest, ErrorsNameTheFile) {
  const std::string junk = TempPath("junk.pt");
  ASSERT_OK(base::WriteFileAtomically(junk, "not a pickle"));
  EXPECT_THAT(LoadPickle(junk).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith(junk + ": not a readable torch.save zip archive: it does "
                                               "not start with a zip record (the legacy "
                                               "torch.save format of torch < 1.6 or "
                                               "_use_new_zipfile_serialization=False is not read"),
                             EndsWith(". loom reads torch.save files of plain state dicts; save "
                                      "weights as safetensors (safetensors.torch.save_file) or "
                                      "re-save the file holding only dicts, lists, tuples, "
                                      "numbers, strings and tensors"))));
  EXPECT_THAT(LoadPickle(TempPath("missing.pt")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.pt")));

  const std::string list = TempPath("list.pt");
  ASSERT_OK(SavePickle(list, c10::List<int64_t>({1, 2})));
  EXPECT_THAT(LoadTorchStateDict(list).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq(list + ": holds a GenericList, not a state dict (a dict of tensors)")));
  const std::string mixed = TempPath("mixed.pt");
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("w", at::ones({1}));
  d.insert("n", int64_t{3});
  ASSERT_OK(SavePickle(mixed, d));
  EXPECT_THAT(LoadTorchStateDict(mixed).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq(mixed + ": entry \"n\" is a Int, not a tensor")));
  EXPECT_THAT(SaveTorchStateDict(TempPath("dup.bin"), {{"a", at::ones({1})}, {"a", at::ones({1})}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"a\" appears twice")));
}

}  // namespace
}  // namespace loom::checkpoint
