#include "checkpoint/safetensors_header.h"

#include <cstdint>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::IsEmpty;

std::string Le64(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

// A file: the length, `json` (unpadded) and `data_size` zero bytes.
std::string File(const std::string& json, size_t data_size) {
  return Le64(json.size()) + json + std::string(data_size, '\0');
}

absl::Status ParseError(const std::string& json, size_t data_size) {
  return ParseSafetensorsBuffer(File(json, data_size)).status();
}

void ExpectHeaderError(const std::string& json, size_t data_size, const std::string& message) {
  EXPECT_THAT(ParseError(json, data_size),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq("safetensors header: " + message)))
      << json;
}

TensorEntry Entry(std::string name, SafetensorsDtype dtype, std::vector<uint64_t> shape) {
  TensorEntry t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

std::vector<std::string> Names(const std::vector<TensorEntry>& tensors) {
  std::vector<std::string> names;
  for (const TensorEntry& t : tensors) names.push_back(t.name);
  return names;
}

TEST(DtypeTest, NamesAndSizes) {
  const std::vector<std::pair<std::string, uint64_t>> expected = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto dtype = static_cast<SafetensorsDtype>(i);
    EXPECT_EQ(DtypeName(dtype), expected[i].first);
    EXPECT_EQ(DtypeSize(dtype), expected[i].second);
    EXPECT_EQ(DtypeFromName(expected[i].first), dtype);
  }
  EXPECT_EQ(DtypeFromName("f32"), std::nullopt);
  EXPECT_EQ(DtypeFromName("F128"), std::nullopt);
}

// The byte vectors of the reference implementation's own serialization tests.
TEST(SerializeTest, MatchesReferenceBytesWithoutPadding) {
  std::vector<TensorEntry> tensors = {Entry("attn.0", SafetensorsDtype::kF32, {1, 2, 3})};
  ASSERT_OK_AND_ASSIGN(uint64_t data_size, OrderForWriting(tensors));
  EXPECT_EQ(data_size, 24u);
  ASSERT_OK_AND_ASSIGN(std::string header, SerializeSafetensorsHeader(tensors, {}));
  EXPECT_EQ(header,
            Le64(64) + R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})");
}

TEST(SerializeTest, PadsWithSpacesToEightBytes) {
  std::vector<TensorEntry> tensors = {Entry("attn0", SafetensorsDtype::kF32, {1, 1, 2, 3})};
  ASSERT_OK(OrderForWriting(tensors).status());
  ASSERT_OK_AND_ASSIGN(std::string header, SerializeSafetensorsHeader(tensors, {}));
  EXPECT_EQ(header, Le64(72) +
                        R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})" +
                        std::string(7, ' '));
}

TEST(SerializeTest, EmptyAndMetadataOnly) {
  ASSERT_OK_AND_ASSIGN(std::string empty, SerializeSafetensorsHeader({}, {}));
  EXPECT_EQ(empty, Le64(8) + "{}" + std::string(6, ' '));
  ASSERT_OK_AND_ASSIGN(std::string meta, SerializeSafetensorsHeader({}, {{"framework", "pt"}}));
  EXPECT_EQ(meta, Le64(40) + R"({"__metadata__":{"framework":"pt"}})" + std::string(5, ' '));
}

TEST(SerializeTest, MetadataFirstSortedAndEscapedLikeSerdeJson) {
  std::vector<TensorEntry> tensors = {
      Entry("a\"b\\c\n\x01\x7f\xc3\xa9", SafetensorsDtype::kU8, {0})};
  ASSERT_OK(OrderForWriting(tensors).status());
  ASSERT_OK_AND_ASSIGN(std::string header,
                       SerializeSafetensorsHeader(tensors, {{"z", "1"}, {"format", "pt"}}));
  const std::string json = header.substr(8);
  EXPECT_EQ(json.substr(0, json.find_last_not_of(' ') + 1),
            "{\"__metadata__\":{\"format\":\"pt\",\"z\":\"1\"},"
            "\"a\\\"b\\\\c\\n\\u0001\x7f\xc3\xa9\":{\"dtype\":\"U8\",\"shape\":[0],"
            "\"data_offsets\":[0,0]}}");
  // And it parses back to the same name.
  ASSERT_OK_AND_ASSIGN(SafetensorsHeader parsed, ParseSafetensorsBuffer(header));
  EXPECT_THAT(Names(parsed.tensors), ElementsAre("a\"b\\c\n\x01\x7f\xc3\xa9"));
}

TEST(OrderForWritingTest, DescendingAlignmentThenName) {
  using D = SafetensorsDtype;
  std::vector<TensorEntry> tensors = {
      Entry("a", D::kF32, {2}), Entry("b", D::kI64, {1}),  Entry("c", D::kBool, {3}),
      Entry("d", D::kF32, {1}), Entry("e", D::kBF16, {1}), Entry("f", D::kF64, {1}),
      Entry("g", D::kI32, {1}), Entry("h", D::kF16, {1}),  Entry("i", D::kI16, {1}),
      Entry("j", D::kI8, {1}),  Entry("k", D::kU8, {1}),   Entry("B", D::kF32, {1})};
  ASSERT_OK_AND_ASSIGN(uint64_t size, OrderForWriting(tensors));
  EXPECT_THAT(Names(tensors),
              ElementsAre("b", "f", "B", "a", "d", "g", "e", "h", "i", "j", "k", "c"));
  // b 8 | f 8 | B 4 | a 8 | d 4 | g 4 | e 2 | h 2 | i 2 | j 1 | k 1 | c 3
  std::vector<uint64_t> begins;
  for (const TensorEntry& t : tensors) begins.push_back(t.begin);
  EXPECT_THAT(begins, ElementsAre(0, 8, 16, 20, 28, 32, 36, 38, 40, 42, 43, 44));
  EXPECT_EQ(size, 47u);
}

TEST(OrderForWritingTest, RejectsDuplicatesAndOverflow) {
  std::vector<TensorEntry> dup = {Entry("w", SafetensorsDtype::kF32, {1}),
                                  Entry("w", SafetensorsDtype::kF16, {1})};
  EXPECT_THAT(OrderForWriting(dup),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq("tensor name \"w\" appears twice")));
  std::vector<TensorEntry> huge = {Entry("big", SafetensorsDtype::kF32, {uint64_t{1} << 62, 2})};
  EXPECT_THAT(OrderForWriting(huge), StatusIs(absl::StatusCode::kInvalidArgument,
                                              Eq("tensor \"big\" is larger than 2^64 bytes")));
  std::vector<TensorEntry> bad_utf8 = {Entry("\xff", SafetensorsDtype::kF32, {1})};
  EXPECT_THAT(OrderForWriting(bad_utf8), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  Eq("tensor name \"\\xff\" is not valid UTF-8")));
}

TEST(ParseTest, ReadsTensorsInDataOrderWithMetadata) {
  // Entries listed out of data order; an unknown field is ignored; metadata may sit anywhere.
  const std::string json =
      R"({"b":{"dtype":"I64","shape":[],"data_offsets":[16,24],"extra":{"x":[1,[2]]}},)"
      R"("__metadata__":{"format":"pt","k":"v"},)"
      R"("a":{"shape":[2,2],"dtype":"F32","data_offsets":[0,16]},)"
      R"("z":{"dtype":"BOOL","shape":[0,5],"data_offsets":[24,24]}}  )";
  ASSERT_OK_AND_ASSIGN(SafetensorsHeader header, ParseSafetensorsBuffer(File(json, 24)));
  EXPECT_THAT(Names(header.tensors), ElementsAre("a", "b", "z"));
  EXPECT_EQ(header.tensors[0].dtype, SafetensorsDtype::kF32);
  EXPECT_THAT(header.tensors[0].shape, ElementsAre(2, 2));
  EXPECT_EQ(header.tensors[1].dtype, SafetensorsDtype::kI64);
  EXPECT_THAT(header.tensors[1].shape, IsEmpty());
  EXPECT_EQ(header.tensors[1].begin, 16u);
  EXPECT_EQ(header.tensors[1].end, 24u);
  EXPECT_EQ(header.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"k", "v"}}));
  EXPECT_EQ(header.header_size, json.size());
  EXPECT_EQ(header.data_start(), 8 + json.size());
  EXPECT_EQ(header.data_size, 24u);
}

TEST(ParseTest, NullMetadataAndEmptyFile) {
  ASSERT_OK_AND_ASSIGN(SafetensorsHeader header,
                       ParseSafetensorsBuffer(File(R"({"__metadata__":null})", 0)));
  EXPECT_THAT(header.tensors, IsEmpty());
  EXPECT_THAT(header.metadata, IsEmpty());
}

TEST(ParseTest, HeaderLengthChecks) {
  EXPECT_THAT(ParseSafetensorsBuffer("1234567"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("file is 7 bytes, too short for the 8-byte header length")));
  EXPECT_THAT(ParseSafetensorsBuffer(Le64(100'000'001) + "{}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("header length 100000001 exceeds the 100000000-byte limit")));
  EXPECT_THAT(ParseSafetensorsBuffer(Le64(~uint64_t{0}) + "{}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("header length 18446744073709551615 exceeds the 100000000-byte "
                          "limit")));
  EXPECT_THAT(ParseSafetensorsBuffer(Le64(3) + "{}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("header length 3 runs past the end of the file (10 bytes)")));
  EXPECT_THAT(ParseHeaderLength(Le64(2), 10), ::loom::base::testing::IsOkAndHolds(2u));
}

TEST(ParseTest, RejectsNonUtf8AndBadJson) {
  ExpectHeaderError("{\"a\xff\":1}", 0, "not valid UTF-8");
  ExpectHeaderError("{\"\xed\xa0\x80\":1}", 0, "not valid UTF-8");  // a surrogate
  ExpectHeaderError("{\"\xc0\xaf\":1}", 0, "not valid UTF-8");      // overlong '/'
  ExpectHeaderError(" {}", 0, "does not start with '{'");
  ExpectHeaderError("", 0, "does not start with '{'");
  ExpectHeaderError("{\"a\":", 0,
                    "invalid JSON: [json.exception.parse_error.101] parse error at line 1, "
                    "column 6: syntax error while parsing value - unexpected end of input; "
                    "expected '[', '{', or a literal");
  ExpectHeaderError("{} x", 0,
                    "invalid JSON: [json.exception.parse_error.101] parse error at line 1, "
                    "column 4: syntax error while parsing value - invalid literal; last read: "
                    "'{} x'; expected end of input");
  // nlohmann's lexer would stop at a NUL byte and ignore the rest; JSON allows none.
  ExpectHeaderError(std::string("{}\0{\"a\":1}", 10), 0,
                    "NUL byte at offset 2 (JSON text cannot contain one)");
}

TEST(ParseTest, RejectsDuplicateKeys) {
  ExpectHeaderError(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                    R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                    2, "key \"a\" appears twice");
  ExpectHeaderError(R"({"a":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}})", 1,
                    "tensor \"a\" has \"dtype\" twice");
  ExpectHeaderError(R"({"__metadata__":{"k":"1","k":"2"}})", 0, "__metadata__ has key \"k\" twice");
  ExpectHeaderError(R"({"__metadata__":{},"__metadata__":{}})", 0,
                    "key \"__metadata__\" appears twice");
}

TEST(ParseTest, RejectsWrongTypes) {
  ExpectHeaderError(R"({"a":[1]})", 0,
                    "entry \"a\" is an array, not an object with dtype, shape and data_offsets");
  ExpectHeaderError(R"({"a":3})", 0,
                    "entry \"a\" is a number, not an object with dtype, shape and data_offsets");
  ExpectHeaderError(R"({"__metadata__":"x"})", 0,
                    "__metadata__ is a string, not an object of strings");
  ExpectHeaderError(R"({"__metadata__":{"k":1}})", 0,
                    "__metadata__ value of \"k\" is a number, not a string");
  ExpectHeaderError(R"({"__metadata__":{"k":{}}})", 0,
                    "__metadata__ value of \"k\" is an object, not a string");
  ExpectHeaderError(R"({"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16,
                    "tensor \"a\" has unknown dtype \"F128\" (known: BOOL, U8, I8, F8_E5M2, "
                    "F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64)");
  ExpectHeaderError(R"({"a":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", 4,
                    "tensor \"a\": \"dtype\" is a number, not a string");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4,
                    "tensor \"a\": \"shape\" holds a negative number; it must be an array of "
                    "non-negative integers");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", 4,
                    "tensor \"a\": \"shape\" holds a non-integer number; it must be an array of "
                    "non-negative integers");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", 4,
                    "tensor \"a\": \"shape\" holds an array; it must be an array of "
                    "non-negative integers");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":3,"data_offsets":[0,4]}})", 4,
                    "tensor \"a\": \"shape\" holds a number; it must be an array of "
                    "non-negative integers");
  // 2^64 is not a u64: nlohmann reads it as a float.
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})",
                    4,
                    "tensor \"a\": \"shape\" holds a non-integer number; it must be an array of "
                    "non-negative integers");
  const std::string offsets_error =
      "tensor \"a\": \"data_offsets\" must be an array of two non-negative integers";
  ExpectHeaderError(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1, offsets_error);
  ExpectHeaderError(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 1, offsets_error);
  ExpectHeaderError(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":{"b":0}}})", 1, offsets_error);
  ExpectHeaderError(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", 1, offsets_error);
  ExpectHeaderError(R"({"a":{"dtype":"U8","shape":[1]}})", 1,
                    "tensor \"a\" lacks \"data_offsets\"");
  ExpectHeaderError(R"({"a":{"shape":[1],"data_offsets":[0,1]}})", 1,
                    "tensor \"a\" lacks \"dtype\"");
  ExpectHeaderError(R"({"a":{"dtype":"U8","data_offsets":[0,1]}})", 1,
                    "tensor \"a\" lacks \"shape\"");
}

TEST(ParseTest, RejectsDeeplyNestedUnknownField) {
  const std::string deep = std::string(65, '[') + std::string(65, ']');
  ExpectHeaderError(R"({"a":{"x":)" + deep + R"(,"dtype":"U8","shape":[0],"data_offsets":[0,0]}})",
                    0, "tensor \"a\": a value is nested more than 64 levels deep");
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_OK(ParseSafetensorsBuffer(
      File(R"({"a":{"x":)" + ok + R"(,"dtype":"U8","shape":[0],"data_offsets":[0,0]}})", 0)));
}

TEST(ParseTest, RejectsBadLayouts) {
  // Overlap: b starts inside a.
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                    12,
                    "tensor \"b\": data_offsets [4, 12] overlap the previous tensor \"a\", "
                    "which ends at 8");
  // The same range twice.
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                    8,
                    "tensor \"b\": data_offsets [0, 8] overlap the previous tensor \"a\", "
                    "which ends at 8");
  // Gap between tensors, and before the first one.
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
                    20,
                    "tensor \"b\": data_offsets [12, 20] leave a gap after the previous "
                    "tensor \"a\", which ends at 8");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12,
                    "tensor \"a\": data_offsets [4, 12] leave a gap: the first tensor must "
                    "start at 0");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8,
                    "tensor \"a\": data_offsets [8, 0] end before they begin");
  // Wrong byte count for the shape.
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12,
                    "tensor \"a\": data_offsets [0, 12] hold 12 bytes but dtype F32 and shape "
                    "[2, 2] need 16");
  // Shape product overflowing 64 bits (and the dtype size multiplication overflowing).
  ExpectHeaderError(
      R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0,
      "tensor \"a\": dtype U8 and shape [4294967296, 4294967296] need more than 2^64 bytes");
  ExpectHeaderError(
      R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})", 0,
      "tensor \"a\": dtype F64 and shape [2305843009213693952] need more than 2^64 bytes");
  // Offsets past the data, and data past the tensors.
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 15,
                    "tensor \"a\": data_offsets [0, 16] run past the end of the data section "
                    "(15 bytes): the file is truncated");
  ExpectHeaderError(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 17,
                    "the tensors cover 16 bytes but the data section has 17 (trailing bytes "
                    "after the last tensor)");
  ExpectHeaderError(R"({})", 1,
                    "the tensors cover 0 bytes but the data section has 1 (trailing bytes "
                    "after the last tensor)");
}

TEST(ParseTest, RoundTripsAWrittenHeader) {
  using D = SafetensorsDtype;
  std::vector<TensorEntry> tensors = {Entry("w", D::kBF16, {3, 5}), Entry("ids", D::kI64, {7}),
                                      Entry("mask", D::kBool, {2, 2})};
  ASSERT_OK_AND_ASSIGN(uint64_t data_size, OrderForWriting(tensors));
  ASSERT_OK_AND_ASSIGN(std::string header, SerializeSafetensorsHeader(tensors, {{"format", "pt"}}));
  ASSERT_OK_AND_ASSIGN(SafetensorsHeader parsed,
                       ParseSafetensorsBuffer(header + std::string(data_size, 'x')));
  ASSERT_EQ(parsed.tensors.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(parsed.tensors[i].name, tensors[i].name);
    EXPECT_EQ(parsed.tensors[i].dtype, tensors[i].dtype);
    EXPECT_EQ(parsed.tensors[i].shape, tensors[i].shape);
    EXPECT_EQ(parsed.tensors[i].begin, tensors[i].begin);
    EXPECT_EQ(parsed.tensors[i].end, tensors[i].end);
  }
  EXPECT_EQ(parsed.header_size % 8, 0u);
  EXPECT_EQ(parsed.metadata.at("format"), "pt");
}

TEST(Utf8Test, Validator) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));                      // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));                     // U+110000
  EXPECT_FALSE(IsValidUtf8("\x80"));                                 // lone continuation
  EXPECT_FALSE(IsValidUtf8("\xc3"));                                 // truncated
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));                             // truncated
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\x80"));                         // overlong NUL
  EXPECT_FALSE(IsValidUtf8("\xed\xbf\xbf"));                         // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf8\x88\x80\x80\x80"));                 // 5-byte form
  EXPECT_FALSE(IsValidUtf8("\xc3\x28"));                             // bad continuation
}

}  // namespace
}  // namespace loom::checkpoint
