#include "checkpoint/safetensors.h"

#include <ATen/ATen.h>
#include <dirent.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string TempDir() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string tmpl = std::string(root ? root : "/tmp") + "/safetensors.XXXXXX";
  return mkdtemp(tmpl.data());
}

std::string Le64(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

std::string Bytes(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

// A tensor of `dtype` whose elements have exactly the given bit patterns.
template <typename Bits>
at::Tensor FromBits(const std::vector<Bits>& bits, at::ScalarType storage, at::ScalarType dtype) {
  at::Tensor raw = at::empty({static_cast<int64_t>(bits.size())}, at::TensorOptions(storage));
  std::memcpy(raw.data_ptr(), bits.data(), bits.size() * sizeof(Bits));
  return raw.view(dtype);
}

// One tensor per dtype, with NaN payloads, signed zeros, infinities and denormals for floats.
NamedTensors EveryDtype() {
  return {
      {"f64", FromBits<uint64_t>({0x7ff8000000000001, 0xfff0000000000001, 0x8000000000000000,
                                  0x0000000000000001, 0x7ff0000000000000, 0x3ff0000000000000},
                                 at::kLong, at::kDouble)
                  .reshape({2, 3})},
      {"f32", FromBits<uint32_t>({0x7fc00001, 0xffbfffff, 0x7f800001, 0x80000000, 0x00000001,
                                  0xff800000, 0x3f800000, 0x12345678},
                                 at::kInt, at::kFloat)
                  .reshape({2, 2, 2})},
      {"f16",
       FromBits<uint16_t>({0x7e01, 0xfc01, 0x8000, 0x0001, 0x7c00, 0x3c00}, at::kShort, at::kHalf)},
      {"bf16", FromBits<uint16_t>({0x7fc1, 0xff81, 0x8000, 0x0001, 0x7f80, 0x3f80, 0x4049},
                                  at::kShort, at::kBFloat16)},
      {"i64", FromBits<int64_t>({INT64_MIN, -1, 0, INT64_MAX}, at::kLong, at::kLong)},
      {"i32", FromBits<int32_t>({INT32_MIN, -1, 0, INT32_MAX, 7}, at::kInt, at::kInt)},
      {"i16", FromBits<int16_t>({INT16_MIN, -1, INT16_MAX}, at::kShort, at::kShort)},
      {"i8", FromBits<int8_t>({-128, -1, 0, 127}, at::kChar, at::kChar)},
      {"u8", FromBits<uint8_t>({0, 1, 128, 255}, at::kByte, at::kByte)},
      {"bool", at::tensor({1, 0, 0, 1, 1}, at::kByte).to(at::kBool).reshape({5, 1})},
  };
}

void ExpectBitEqual(const NamedTensors& expected, const NamedTensors& actual) {
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, tensor] : expected) {
    const at::Tensor* got = FindTensor(actual, name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_EQ(got->scalar_type(), tensor.scalar_type()) << name;
    EXPECT_EQ(got->sizes(), tensor.sizes()) << name;
    EXPECT_EQ(Bytes(*got), Bytes(tensor)) << name;
  }
}

std::vector<std::string> Names(const NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  return names;
}

TEST(SafetensorsTest, EveryDtypeRoundTripsBitExactInEveryReadMode) {
  const std::string path = TempDir() + "/all.safetensors";
  const NamedTensors tensors = EveryDtype();
  ASSERT_OK(SaveSafetensors(path, tensors, {{"format", "pt"}}));
  for (bool mmap : {true, false}) {
    ASSERT_OK_AND_ASSIGN(SafetensorsFile file, LoadSafetensors(path, {.mmap = mmap}));
    ExpectBitEqual(tensors, file.tensors);
    EXPECT_EQ(file.metadata, (SafetensorsMetadata{{"format", "pt"}}));
    // File order: alignment descending (I64 F64 F32 I32 BF16 F16 I16 I8 U8 BOOL).
    EXPECT_THAT(Names(file.tensors),
                ElementsAre("i64", "f64", "f32", "i32", "bf16", "f16", "i16", "i8", "u8", "bool"));
  }
  ASSERT_OK_AND_ASSIGN(std::string bytes, base::ReadFile(path));
  EXPECT_THAT(SerializeSafetensors(tensors, {{"format", "pt"}}), IsOkAndHolds(bytes));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile parsed, ParseSafetensors(bytes));
  ExpectBitEqual(tensors, parsed.tensors);
}

TEST(SafetensorsTest, FileBytesAreTheReferenceLayout) {
  const NamedTensors tensors = {{"a", at::tensor({1.0f, 2.0f})}, {"b", at::tensor({int64_t{7}})}};
  ASSERT_OK_AND_ASSIGN(std::string bytes, SerializeSafetensors(tensors, {{"format", "pt"}}));
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})";
  ASSERT_EQ(json.size(), 139u);  // padded with 5 spaces to 144
  const std::string expected = Le64(144) + json + "     " +
                               std::string("\x07\0\0\0\0\0\0\0", 8) +     // 7 as i64
                               std::string("\0\0\x80\x3f\0\0\0\x40", 8);  // 1.0f, 2.0f
  EXPECT_EQ(bytes, expected);
}

TEST(SafetensorsTest, ViewsScalarsAndEmptyTensors) {
  const at::Tensor base = at::arange(12, at::kFloat).reshape({3, 4});
  const NamedTensors tensors = {{"transposed", base.t()},
                                {"slice", base.index({at::indexing::Slice(1, 3), 2})},
                                {"scalar", at::scalar_tensor(3.5, at::kDouble)},
                                {"empty", at::empty({0, 4}, at::kInt)}};
  ASSERT_OK_AND_ASSIGN(std::string bytes, SerializeSafetensors(tensors));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile file, ParseSafetensors(bytes));
  EXPECT_TRUE(at::equal(*FindTensor(file.tensors, "transposed"), base.t()));
  EXPECT_TRUE(at::equal(*FindTensor(file.tensors, "slice"), at::tensor({6.0f, 10.0f})));
  EXPECT_EQ(FindTensor(file.tensors, "scalar")->dim(), 0);
  EXPECT_EQ(FindTensor(file.tensors, "scalar")->item<double>(), 3.5);
  EXPECT_EQ(FindTensor(file.tensors, "empty")->sizes(), (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(file.metadata.empty());
}

TEST(SafetensorsTest, MappedTensorsAreCopyOnWriteAndOutliveTheFileObject) {
  const std::string path = TempDir() + "/w.safetensors";
  ASSERT_OK(SaveSafetensors(path, {{"w", at::ones({4})}}));
  at::Tensor w;
  {
    ASSERT_OK_AND_ASSIGN(SafetensorsFile file, LoadSafetensors(path));
    w = file.tensors[0].second;
  }
  w.mul_(3);  // writes to the private mapping only
  EXPECT_TRUE(at::equal(w, at::full({4}, 3.0f)));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile again, LoadSafetensors(path));
  EXPECT_TRUE(at::equal(again.tensors[0].second, at::ones({4})));
}

TEST(SafetensorsTest, UnalignedDataFromAnotherWriterIsCopied) {
  // No padding: the JSON is 61 bytes, so the F32 data starts at file offset 69.
  const std::string json = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string padded_json = json + std::string(61 - json.size(), ' ');
  const std::string file = Le64(61) + padded_json + std::string("\0\0\x80\x3f\0\0\x80\xbf", 8);
  const std::string path = TempDir() + "/unaligned.safetensors";
  ASSERT_OK(base::WriteFileAtomically(path, file));
  for (bool mmap : {true, false}) {
    ASSERT_OK_AND_ASSIGN(SafetensorsFile loaded, LoadSafetensors(path, {.mmap = mmap}));
    const at::Tensor& x = loaded.tensors[0].second;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(x.data_ptr()) % 4, 0u);
    EXPECT_TRUE(at::equal(x, at::tensor({1.0f, -1.0f})));
  }
}

TEST(SafetensorsTest, ErrorsNameTheFileAndTheFix) {
  const std::string dir = TempDir();
  EXPECT_THAT(LoadSafetensors(dir + "/missing.safetensors").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(dir + "/missing.safetensors")));
  const std::string bad = dir + "/bad.safetensors";
  ASSERT_OK(base::WriteFileAtomically(bad, Le64(8) + R"({"a":1})" + " "));
  EXPECT_THAT(
      LoadSafetensors(bad).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               Eq(bad + ": safetensors header: entry \"a\" is a number, not an object with dtype, "
                        "shape and data_offsets (the file is damaged or is not a safetensors file; "
                        "re-create it with SaveSafetensors or safetensors.torch.save_file)")));
  // A truncated copy of a good file.
  const std::string good = dir + "/good.safetensors";
  ASSERT_OK(SaveSafetensors(good, {{"w", at::ones({4})}}));
  ASSERT_OK_AND_ASSIGN(std::string bytes, base::ReadFile(good));
  const std::string cut = dir + "/cut.safetensors";
  ASSERT_OK(base::WriteFileAtomically(cut, bytes.substr(0, bytes.size() - 1)));
  EXPECT_THAT(LoadSafetensors(cut).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor \"w\": data_offsets [0, 16] run past the end of the "
                                 "data section (15 bytes): the file is truncated")));
  EXPECT_THAT(ReadSafetensorsHeader(cut).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith(cut + ": ")));
  EXPECT_THAT(LoadSafetensors(dir).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq(dir + ": not a regular file")));
}

TEST(SafetensorsTest, DtypesLibTorchLacksAreReported) {
  const std::string path = TempDir() + "/u16.safetensors";
  ASSERT_OK(base::WriteFileAtomically(
      path, Le64(56) + R"({"u":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}}  )" +
                std::string(4, '\0')));
  EXPECT_THAT(LoadSafetensors(path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(": tensor \"u\": dtype U16 has no LibTorch counterpart")));
  EXPECT_THAT(SerializeSafetensors({{"c", at::zeros({2}, at::kComplexFloat)}}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("tensor \"c\": dtype ComplexFloat has no safetensors counterpart "
                          "(supported: float64, float32, float16, bfloat16, int64, int32, int16, "
                          "int8, uint8, bool); convert the tensor first")));
}

TEST(SafetensorsTest, FailedSaveLeavesTheOldFileAndNoTemporaries) {
  const std::string dir = TempDir();
  const std::string path = dir + "/m.safetensors";
  ASSERT_OK(SaveSafetensors(path, {{"w", at::ones({2})}}));
  ASSERT_OK_AND_ASSIGN(std::string before, base::ReadFile(path));
  EXPECT_THAT(SaveSafetensors(path, {{"w", at::ones({2})}, {"w", at::zeros({2})}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("writing " + path + ": tensor name \"w\" appears twice")));
  EXPECT_THAT(SaveSafetensors(path, {{"u", at::Tensor()}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"u\" is undefined")));
  EXPECT_THAT(base::ReadFile(path), IsOkAndHolds(before));
  DIR* d = opendir(dir.c_str());
  int entries = 0;
  while (dirent* e = readdir(d)) entries += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(entries, 1);
}

TEST(SafetensorsTest, DtypeConversions) {
  EXPECT_THAT(ToSafetensorsDtype(at::kBFloat16), IsOkAndHolds(SafetensorsDtype::kBF16));
  EXPECT_THAT(ToScalarType(SafetensorsDtype::kI16), IsOkAndHolds(at::kShort));
  EXPECT_THAT(ToScalarType(SafetensorsDtype::kF8E4M3).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("F8_E4M3")));
}

}  // namespace
}  // namespace loom::checkpoint
