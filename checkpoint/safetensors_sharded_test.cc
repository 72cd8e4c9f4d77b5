#include "checkpoint/safetensors_sharded.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

namespace fs = std::filesystem;
using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;

std::string TempDir() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string tmpl = std::string(root ? root : "/tmp") + "/sharded.XXXXXX";
  return mkdtemp(tmpl.data());
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// U8 tensors of the given byte sizes, named t0, t1, ...; values i * 10 + position.
NamedTensors OfSizes(const std::vector<int64_t>& sizes) {
  NamedTensors out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.emplace_back("t" + std::to_string(i),
                     (at::arange(sizes[i], at::kInt) + static_cast<int>(i * 10)).to(at::kByte));
  }
  return out;
}

TEST(PlanShardsTest, HfDocstringExample) {
  // "if the limit is 10GB and we have weights of sizes [6GB, 6GB, 2GB, 6GB, 2GB, 2GB] they
  // will get sharded as [6GB], [6+2GB], [6+2+2GB]"
  const ShardPlan plan = PlanShards(OfSizes({6, 6, 2, 6, 2, 2}), 10);
  EXPECT_THAT(plan.shards, ElementsAre(ElementsAre(0), ElementsAre(1, 2), ElementsAre(3, 4, 5)));
  EXPECT_EQ(plan.total_size, 24u);
}

TEST(PlanShardsTest, ATensorOverTheLimitGetsItsOwnShard) {
  EXPECT_THAT(PlanShards(OfSizes({3, 20, 3}), 10).shards,
              ElementsAre(ElementsAre(0), ElementsAre(1), ElementsAre(2)));
  EXPECT_THAT(PlanShards(OfSizes({20, 3, 4}), 10).shards,
              ElementsAre(ElementsAre(0), ElementsAre(1, 2)));
  // Exactly at the limit stays together; one byte more splits.
  EXPECT_THAT(PlanShards(OfSizes({4, 6, 1}), 10).shards,
              ElementsAre(ElementsAre(0, 1), ElementsAre(2)));
  // Element size counts: 3 float32 = 12 bytes.
  const NamedTensors mixed = {{"f", at::zeros({3})}, {"h", at::zeros({3}, at::kHalf)}};
  const ShardPlan plan = PlanShards(mixed, 12);
  EXPECT_THAT(plan.shards, ElementsAre(ElementsAre(0), ElementsAre(1)));
  EXPECT_EQ(plan.total_size, 18u);
}

TEST(ShardFileNameTest, HfNames) {
  EXPECT_EQ(ShardFileName("model.safetensors", 0, 3), "model-00001-of-00003.safetensors");
  EXPECT_EQ(ShardFileName("model.safetensors", 2, 3), "model-00003-of-00003.safetensors");
  EXPECT_EQ(ShardFileName("pytorch_model.bin", 1, 2), "pytorch_model-00002-of-00002.bin");
  EXPECT_EQ(ShardFileName("model.safetensors", 123455, 200000),
            "model-123456-of-200000.safetensors");
}

TEST(ShardIndexJsonTest, PythonJsonDumpsIndent2SortKeys) {
  // Expected text printed by Python: json.dumps(index, indent=2, sort_keys=True) + "\n".
  EXPECT_EQ(ShardIndexJson(24, {{"b", "model-00002-of-00002.safetensors"},
                                {"a", "model-00001-of-00002.safetensors"},
                                {"\xc3\xa9\xf0\x9f\x98\x80", "x"}}),
            "{\n  \"metadata\": {\n    \"total_size\": 24\n  },\n  \"weight_map\": {\n    \"a\": "
            "\"model-00001-of-00002.safetensors\",\n    \"b\": "
            "\"model-00002-of-00002.safetensors\",\n    \"\\u00e9\\ud83d\\ude00\": \"x\"\n  }\n"
            "}\n");
}

TEST(SaveShardedTest, WritesShardsAndIndexAndLoadsThemBack) {
  const std::string dir = TempDir();
  const NamedTensors tensors = OfSizes({6, 6, 2, 6, 2, 2});
  SaveShardedOptions options;
  options.max_shard_size = 10;
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> written,
                       SaveShardedSafetensors(dir, tensors, options));
  EXPECT_THAT(written,
              ElementsAre("model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                          "model-00003-of-00003.safetensors", "model.safetensors.index.json"));
  EXPECT_THAT(Listing(dir),
              ElementsAre("model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                          "model-00003-of-00003.safetensors", "model.safetensors.index.json"));
  EXPECT_THAT(base::ReadFile(dir + "/model.safetensors.index.json"),
              IsOkAndHolds("{\n  \"metadata\": {\n    \"total_size\": 24\n  },\n"
                           "  \"weight_map\": {\n"
                           "    \"t0\": \"model-00001-of-00003.safetensors\",\n"
                           "    \"t1\": \"model-00002-of-00003.safetensors\",\n"
                           "    \"t2\": \"model-00002-of-00003.safetensors\",\n"
                           "    \"t3\": \"model-00003-of-00003.safetensors\",\n"
                           "    \"t4\": \"model-00003-of-00003.safetensors\",\n"
                           "    \"t5\": \"model-00003-of-00003.safetensors\"\n  }\n}\n"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile shard2,
                       LoadSafetensors(dir + "/model-00002-of-00003.safetensors"));
  ASSERT_EQ(shard2.tensors.size(), 2u);
  EXPECT_EQ(shard2.metadata, kHfSafetensorsMetadata);

  ASSERT_OK_AND_ASSIGN(SafetensorsFile all, LoadSafetensorsCheckpoint(dir));
  ASSERT_EQ(all.tensors.size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    const at::Tensor* got = FindTensor(all.tensors, name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_TRUE(at::equal(*got, tensor)) << name;
  }
  EXPECT_EQ(all.metadata, kHfSafetensorsMetadata);
}

TEST(SaveShardedTest, RemovesAnEarlierSavesShardsLikeHf) {
  const std::string dir = TempDir();
  for (const char* name :
       {"model-00001-of-00005.safetensors", "model-00005-of-00005.safetensors",
        "model-00002-of-00009.bin", "model-notes.txt", "other-00001-of-00002.safetensors"}) {
    ASSERT_OK(base::WriteFileAtomically(dir + "/" + name, "old"));
  }
  SaveShardedOptions options;
  options.max_shard_size = 10;
  ASSERT_OK(SaveShardedSafetensors(dir, OfSizes({8, 8}), options).status());
  EXPECT_THAT(Listing(dir),
              ElementsAre("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                          "model-notes.txt", "model.safetensors.index.json",
                          "other-00001-of-00002.safetensors"));
  // A single-file save then removes the shards and the index, and a sharded save the single
  // file.
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> written,
                       SaveShardedSafetensors(dir, OfSizes({8, 8})));
  EXPECT_THAT(written, ElementsAre("model.safetensors"));
  EXPECT_THAT(Listing(dir), ElementsAre("model-notes.txt", "model.safetensors",
                                        "other-00001-of-00002.safetensors"));
  ASSERT_OK(SaveShardedSafetensors(dir, OfSizes({8, 8}), options).status());
  EXPECT_THAT(Listing(dir),
              ElementsAre("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                          "model-notes.txt", "model.safetensors.index.json",
                          "other-00001-of-00002.safetensors"));
}

// A save that fails at its third shard (a full disk) leaves the folder as it was: the earlier
// save's shards and index untouched, nothing of its own under a final name, no partial file.
TEST(SaveShardedTest, AFailedSaveLeavesTheFolderAsItWas) {
  const std::string dir = TempDir();
  SaveShardedOptions options;
  options.max_shard_size = 10;
  ASSERT_OK(SaveShardedSafetensors(dir, OfSizes({8, 8}), options).status());
  const std::vector<std::string> before = Listing(dir);
  ASSERT_OK_AND_ASSIGN(const std::string index, base::ReadFile(dir + "/model.safetensors.index.json"));
  int calls = 0;
  const absl::StatusOr<std::vector<std::string>> failed = SaveShardedFiles(
      dir, OfSizes({8, 8, 8, 8}), 10, "model.safetensors",
      [&](const std::string& path, const NamedTensors& shard) -> absl::Status {
        if (++calls == 3) return absl::ResourceExhaustedError(path + ": No space left on device");
        return SaveSafetensors(path, shard);
      });
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kResourceExhausted,
                               HasSubstr(".model-00003-of-00004.safetensors.loom-partial")));
  EXPECT_EQ(Listing(dir), before);
  EXPECT_THAT(base::ReadFile(dir + "/model.safetensors.index.json"), IsOkAndHolds(Eq(index)));
}

TEST(LoadShardedTest, BadIndexesAreReported) {
  const std::string dir = TempDir();
  SaveShardedOptions options;
  options.max_shard_size = 4;
  ASSERT_OK(SaveShardedSafetensors(dir, OfSizes({4, 4}), options).status());
  const std::string index = dir + "/model.safetensors.index.json";
  const std::string hint =
      " (expected HF's {\"metadata\": {...}, \"weight_map\": {tensor: shard file}}; re-create "
      "the checkpoint with save_pretrained or SaveShardedSafetensors)";
  auto expect_error = [&](const std::string& text, const std::string& what) {
    ASSERT_OK(base::WriteFileAtomically(index, text));
    EXPECT_THAT(LoadShardedSafetensors(index).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, Eq(index + ": " + what + hint)));
  };
  expect_error("{", "not valid JSON");
  expect_error("[]", "not a JSON object");
  expect_error(R"({"metadata": {}})", "no \"weight_map\" object");
  expect_error(R"({"weight_map": {"t0": 3}})", "weight_map[\"t0\"] is not a string");
  expect_error(R"({"weight_map": {"t0": "../model-00001-of-00002.safetensors"}})",
               "weight_map[\"t0\"] = \"../model-00001-of-00002.safetensors\" is not a file name "
               "in the index's folder");
  expect_error(R"({"weight_map": {"t0": "model-00002-of-00002.safetensors"}})",
               "tensor \"t0\" is mapped to model-00002-of-00002.safetensors, which does not hold "
               "it");
  ASSERT_OK(SaveSafetensors(dir + "/dup.safetensors", OfSizes({4, 4})));
  expect_error(
      R"({"weight_map": {"t0": "model-00001-of-00002.safetensors", "t1": "dup.safetensors"}})",
      "tensor \"t0\" is in both dup.safetensors and model-00001-of-00002.safetensors");
  ASSERT_OK(base::WriteFileAtomically(index, R"({"weight_map": {"t0": "gone.safetensors"}})"));
  EXPECT_THAT(LoadShardedSafetensors(index).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("loading a shard named by " + index + ": cannot open '" + dir +
                                 "/gone.safetensors'")));
}

TEST(LoadSafetensorsCheckpointTest, NeitherFileIsNotFound) {
  const std::string dir = TempDir();
  EXPECT_THAT(LoadSafetensorsCheckpoint(dir).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       Eq("'" + dir +
                          "' holds neither model.safetensors nor model.safetensors.index.json")));
}

}  // namespace
}  // namespace loom::checkpoint
