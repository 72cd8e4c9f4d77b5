#include "checkpoint/python_pickle_writer.h"

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "base/status_matchers.h"
#include "checkpoint/python_unpickler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string Hex(const std::string& bytes) { return absl::BytesToHexString(bytes); }

// Expected bytes: pickletools.optimize(pickle.dumps(value, protocol=2)).hex() from Python 3.11
// (optimize drops the memo puts, which the writer never emits).
TEST(PickleProtocol2Test, PlainValuesMatchPythonsPickle) {
  PythonValue v = PythonValue::Dict();
  v.Set("a", PythonValue());
  v.Set("b", PythonValue::Bool(true));
  v.Set("c", PythonValue::Bool(false));
  std::vector<PythonValue> ints;
  for (int64_t i : {int64_t{0}, int64_t{255}, int64_t{256}, int64_t{65535}, int64_t{65536},
                    int64_t{-1}, int64_t{INT32_MAX}, int64_t{INT32_MIN}, int64_t{1} << 31,
                    int64_t{INT32_MIN} - 1, int64_t{INT64_MAX}, int64_t{INT64_MIN}}) {
    ints.push_back(PythonValue::Int(i));
  }
  v.Set("i", PythonValue::List(std::move(ints)));
  v.Set("f", PythonValue::Float(2e-05));
  v.Set("s", PythonValue::Str("h\xc3\xa9llo \xe2\x82\xac"));
  v.Set("one", PythonValue::List({PythonValue::Int(1)}));
  v.Set("e", PythonValue::List());
  PythonValue d1 = PythonValue::Dict();
  d1.Set("k", PythonValue::Float(1.5));
  v.Set("d1", std::move(d1));
  ASSERT_OK_AND_ASSIGN(std::string bytes, PickleProtocol2(v));
  EXPECT_EQ(Hex(bytes),
            "80027d285801000000614e58010000006288580100000063895801000000695d284b004bff4d00014d"
            "ffff4a000001004affffffff4affffff7f4a000000808a0500000080008a05ffffff7fff8a08ffffff"
            "ffffffff7f8a08000000000000008065580100000066473ef4f8b588e368f158010000007358"
            "0a00000068c3a96c6c6f20e282ac58030000006f6e655d4b01615801000000655d5802000000643"
            "17d58010000006b473ff800000000000073752e");
}

TEST(PickleProtocol2Test, ObjectMatchesPythonsPickle) {
  PythonValue state = PythonValue::Dict();
  state.Set("x", PythonValue::Int(1));
  state.Set("y", PythonValue::Str("z"));
  ASSERT_OK_AND_ASSIGN(std::string bytes,
                       PickleProtocol2(PythonValue::Object("pkgmod", "Obj", std::move(state))));
  EXPECT_EQ(Hex(bytes),
            "800263706b676d6f640a4f626a0a29817d285801000000784b0158010000007958010000007a7562"
            "2e");
}

// An Enum member as its class applied to its value (Python 3.8-3.10's Enum.__reduce_ex__).
TEST(PickleProtocol2Test, EnumIsClassAppliedToValue) {
  ASSERT_OK_AND_ASSIGN(std::string bytes,
                       PickleProtocol2(PythonValue::Enum("m.n", "E", PythonValue::Str("v"))));
  EXPECT_EQ(bytes, std::string("\x80\x02"
                               "cm.n\nE\n"
                               "X\x01\x00\x00\x00v"
                               "\x85R.",
                               18));
}

// A batch of 1000 items, then a batch of one, each under its own MARK (Python's _pickle).
TEST(PickleProtocol2Test, LongListsAreBatchedLikePython) {
  std::vector<PythonValue> items;
  for (int i = 0; i < 1001; ++i) items.push_back(PythonValue::Int(i));
  ASSERT_OK_AND_ASSIGN(std::string bytes, PickleProtocol2(PythonValue::List(std::move(items))));
  EXPECT_EQ(Hex(bytes.substr(bytes.size() - 12)), "e6034de70365284de803652e");
}

TEST(PickleProtocol2Test, RefusesWhatPythonCannotRead) {
  EXPECT_THAT(PickleProtocol2(PythonValue::Str("\xff")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("UTF-8")));
  EXPECT_THAT(PickleProtocol2(PythonValue::Str("\xc3")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("UTF-8")));
  EXPECT_THAT(PickleProtocol2(PythonValue::Str("\xed\xa0\x80")),  // a surrogate
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("UTF-8")));
  EXPECT_THAT(PickleProtocol2(PythonValue::Enum("os\nsystem", "E", PythonValue())),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a Python name")));
  EXPECT_THAT(PickleProtocol2(PythonValue::Object("m", "", PythonValue::Dict())),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a Python name")));
}

TEST(PythonValueTest, FromJsonKeepsTypesAndOrder) {
  const auto j = nlohmann::ordered_json::parse(R"({"z": 1, "a": [2.0, "s", null, true]})");
  PythonValue v = PythonValue::FromJson(j);
  ASSERT_EQ(v.kind(), PythonValue::Kind::kDict);
  ASSERT_EQ(v.entries().size(), 2u);
  EXPECT_EQ(v.entries()[0].first, "z");
  EXPECT_EQ(v.entries()[0].second.kind(), PythonValue::Kind::kInt);
  const auto& list = v.entries()[1].second.items();
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[0].kind(), PythonValue::Kind::kFloat);
  EXPECT_EQ(list[1].str(), "s");
  EXPECT_EQ(list[2].kind(), PythonValue::Kind::kNone);
  EXPECT_TRUE(list[3].bool_value());
  v.Set("z", PythonValue::Str("replaced"));
  EXPECT_EQ(v.entries()[0].second.str(), "replaced");
}

class StringAdapter : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit StringAdapter(std::string bytes) : bytes_(std::move(bytes)) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char*) const override {
    if (pos >= bytes_.size()) return 0;
    n = std::min<size_t>(n, bytes_.size() - pos);
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

 private:
  std::string bytes_;
};

// The records torch.save writes for a file object (archive name "archive"), which torch's
// torch.load reads (//tests/checkpoint:training_args_bin_python_test loads one in Python):
// data.pkl and version; LibTorch 2.x's archive writer adds byteorder and
// .data/serialization_id by itself, as torch 2.x's torch.save does.
TEST(TorchSaveArchiveTest, HoldsDataPklAndVersion) {
  ASSERT_OK_AND_ASSIGN(std::string pickle, PickleProtocol2(PythonValue::Int(7)));
  ASSERT_OK_AND_ASSIGN(std::string archive, TorchSaveArchive(pickle));
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<StringAdapter>(archive));
  std::vector<std::string> records = reader.getAllRecords();
  EXPECT_THAT(records, ::testing::IsSupersetOf({"data.pkl", "version"}));
  EXPECT_THAT(records, ::testing::IsSubsetOf({"data.pkl", "version", "byteorder",
                                              ".data/serialization_id"}));
  auto [data, size] = reader.getRecord("data.pkl");
  EXPECT_EQ(std::string(static_cast<const char*>(data.get()), size), pickle);
  EXPECT_NE(archive.find("archive/data.pkl"), std::string::npos);
  EXPECT_NE(archive.find("archive/version"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(c10::IValue back, UnpickleTorchSave(archive));
  EXPECT_EQ(back.toInt(), 7);
}

}  // namespace
}  // namespace loom::checkpoint
