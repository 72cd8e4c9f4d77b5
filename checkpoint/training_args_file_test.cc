#include "checkpoint/training_args_file.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "args/serialize.h"
#include "args/training_args.h"
#include "args/training_args_testing.h"
#include "base/file_util.h"
#include "base/json_ivalue.h"
#include "base/status_matchers.h"
#include "checkpoint/python_pickle_writer.h"
#include "checkpoint/python_unpickler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::args::TrainingArguments;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TrainingArguments MustResolve(const std::vector<std::string>& flags) {
  auto a = args::testing::ResolveForTest(flags, nullptr, /*reject_unsupported=*/false);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : TrainingArguments();
}

// The command lines of args' golden JSON files (args/serialize_test.cc).
const std::vector<std::vector<std::string>>& Cases() {
  static const auto* cases = new std::vector<std::vector<std::string>>{
      {"--learning_rate", "2e-5", "--fsdp", "full_shard auto_wrap", "--log_on_each_node", "0"},
      {"--do_train",
       "--eval_strategy",
       "steps",
       "--logging_steps",
       "50",
       "--load_best_model_at_end",
       "--save_steps",
       "100",
       "--metric_for_best_model",
       "accuracy",
       "--report_to",
       "none",
       "--use_cpu",
       "--hub_token",
       "SECRET",
       "--warmup_ratio",
       "0.1",
       "--lr_scheduler_type",
       "cosine",
       "--label_names",
       "labels",
       "--debug",
       "underflow_overflow",
       "--per_gpu_train_batch_size",
       "4",
       "--lr_scheduler_kwargs",
       "{\"num_cycles\": 0.5}",
       "--seed",
       "7"},
  };
  return *cases;
}


std::string TempPath(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

TEST(TrainingArgsFileTest, RoundTripIsExact) {
  for (const auto& flags : Cases()) {
    TrainingArguments a = MustResolve(flags);
    a.clear_hub_token();  // tokens are never serialized
    const std::string path = TempPath("training_args.bin");
    ASSERT_OK(SaveTrainingArgs(a, path));
    TrainingArguments from_bin;
    ASSERT_OK(LoadTrainingArgs(path, &from_bin));
    EXPECT_TRUE(args::testing::EquivalentArgs(a, from_bin));
    EXPECT_EQ(args::ToJsonString(from_bin), args::ToJsonString(a));
    // A resolved, reloaded object resolves to itself.
    TrainingArguments again = from_bin;
    args::PostInitOptions options;
    options.reject_unsupported = false;
    ASSERT_OK(args::PostInit(&again, options).status());
    EXPECT_EQ(args::ToJsonString(again), args::ToJsonString(a));
  }
}

// The object HF's Trainer pickles: its class, its fields in order, enum members, the
// AcceleratorConfig object, _n_gpu last; no device objects.
TEST(TrainingArgsFileTest, WritesTheTrainingArgumentsObject) {
  TrainingArguments a =
      MustResolve({"--fsdp", "full_shard auto_wrap", "--eval_strategy", "steps", "--eval_steps",
                   "10", "--lr_scheduler_type", "cosine", "--use_cpu"});
  ASSERT_OK_AND_ASSIGN(std::string bytes, TrainingArgsToPickle(a));
  EXPECT_NE(bytes.find("ctransformers.training_args\nTrainingArguments\n)\x81"), std::string::npos);
  const std::string cosine(
      "ctransformers.trainer_utils\nSchedulerType\nX\x06\x00\x00\x00"
      "cosine\x85R",
      55);  // SchedulerType('cosine')
  EXPECT_NE(bytes.find(cosine), std::string::npos);
  EXPECT_NE(bytes.find("ctransformers.trainer_pt_utils\nAcceleratorConfig\n)\x81}"),
            std::string::npos);
  ASSERT_OK_AND_ASSIGN(c10::IValue v, UnpickleTorchSave(bytes, {.hf_training_arguments = true}));
  const auto d = v.toGenericDict();
  EXPECT_EQ(d.at("__class__").toStringRef(), "transformers.training_args.TrainingArguments");
  const nlohmann::ordered_json dict = args::ToDict(a);
  std::vector<std::string> keys, expected;
  for (const auto& entry : d) keys.push_back(entry.key().toStringRef());
  expected.push_back("__class__");
  for (const auto& [key, value] : dict.items()) expected.push_back(key);
  expected.push_back("_n_gpu");
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(d.at("eval_strategy").toStringRef(), "steps");
  EXPECT_EQ(d.at("fsdp").toListRef()[1].toStringRef(), "auto_wrap");
  EXPECT_TRUE(d.at("hub_token").isNone());
  EXPECT_EQ(d.at("_n_gpu").toInt(), 0);  // --use_cpu
  EXPECT_EQ(d.at("accelerator_config").toGenericDict().at("__class__").toStringRef(),
            "transformers.trainer_pt_utils.AcceleratorConfig");

  ASSERT_OK_AND_ASSIGN(std::string seq2seq, TrainingArgsToPickle(a, {.seq2seq = true}));
  EXPECT_NE(seq2seq.find("ctransformers.training_args_seq2seq\nSeq2SeqTrainingArguments\n"),
            std::string::npos);
  TrainingArguments back;
  ASSERT_OK(TrainingArgsFromPickle(seq2seq, "seq2seq.bin", &back, {.seq2seq = true}));
}

TEST(TrainingArgsFileTest, TokensAndUrlCredentialsNeverAppear) {
  TrainingArguments a = MustResolve({"--hub_token", "hf_SECRET", "--push_to_hub_token", "hf_OTHER",
                                     "--hub_model_id", "https://me:s3cret@git.example/r.git"});
  ASSERT_OK_AND_ASSIGN(std::string pickle, TrainingArgsToPickle(a));
  EXPECT_EQ(pickle.find("hf_SECRET"), std::string::npos);
  EXPECT_EQ(pickle.find("hf_OTHER"), std::string::npos);
  EXPECT_EQ(pickle.find("s3cret"), std::string::npos);
  EXPECT_NE(pickle.find("https://<credentials>@git.example/r.git"), std::string::npos);
  TrainingArguments back;
  ASSERT_OK(TrainingArgsFromPickle(pickle, "x.bin", &back));
  EXPECT_FALSE(back.has_hub_token());
  EXPECT_FALSE(back.has_push_to_hub_token());
}

// loom's earlier training_args.bin: LibTorch's pickle of to_dict()'s plain dict.
TEST(TrainingArgsFileTest, ReadsLoomsEarlierDictFiles) {
  for (const auto& flags : Cases()) {
    TrainingArguments a = MustResolve(flags);
    a.clear_hub_token();
    const std::vector<char> old = torch::jit::pickle_save(base::JsonToIValue(args::ToDict(a)));
    TrainingArguments back;
    ASSERT_OK(TrainingArgsFromPickle(std::string(old.begin(), old.end()), "old.bin", &back));
    EXPECT_TRUE(args::testing::EquivalentArgs(a, back));
  }
}

// Files transformers' Trainer wrote (testdata/make_hf_training_args_bin.py; Python 3.11, so
// enums by name, plus distributed_state and the cached device, and a fake token).
TEST(TrainingArgsFileTest, ReadsHfTrainerFiles) {
  for (const std::string version : {"4.38.2", "4.41.2"}) {
    TrainingArguments a;
    ASSERT_OK(LoadTrainingArgs("checkpoint/testdata/hf_" + version + "/training_args.bin", &a))
        << version;
    EXPECT_EQ(a.output_dir(), "out");
    EXPECT_EQ(a.learning_rate(), 3e-5);
    EXPECT_THAT(a.fsdp(), ::testing::ElementsAre("full_shard", "auto_wrap"));
    EXPECT_EQ(a.lr_scheduler_type(), "cosine");
    EXPECT_EQ(a.save_strategy(), "epoch");
    EXPECT_EQ(a.optim(), "adafactor");
    EXPECT_EQ(a.seed(), 7);
    EXPECT_EQ(a.logging_steps(), 50);
    EXPECT_EQ(a.logging_dir(), "out/runs/golden");
    EXPECT_THAT(a.debug(), ::testing::ElementsAre("underflow_overflow"));
    EXPECT_TRUE(a.use_cpu());
    EXPECT_FALSE(a.has_hub_token()) << "a token read from a file is never kept";
    const std::string json = args::ToJsonString(a);
    EXPECT_THAT(json, ::testing::Not(HasSubstr("hf_FAKE_GOLDEN")));
    EXPECT_THAT(json, HasSubstr("\"num_cycles\": 2"));
  }
}

TEST(TrainingArgsFileTest, BadInputIsAnErrorNotACrash) {
  TrainingArguments a;
  EXPECT_THAT(TrainingArgsFromPickle("garbage", "x.bin", &a),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("x.bin")));
  // Another allow-listed object at the top.
  ASSERT_OK_AND_ASSIGN(std::string pickle, PickleProtocol2(PythonValue::Object(
                                               "transformers.trainer_pt_utils", "AcceleratorConfig",
                                               PythonValue::Dict())));
  ASSERT_OK_AND_ASSIGN(std::string archive, TorchSaveArchive(pickle));
  EXPECT_THAT(TrainingArgsFromPickle(archive, "y.bin", &a),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not a TrainingArguments")));
  // An attribute that is no field.
  PythonValue state = PythonValue::Dict();
  state.Set("nope", PythonValue::Int(1));
  ASSERT_OK_AND_ASSIGN(
      pickle, PickleProtocol2(PythonValue::Object("transformers.training_args", "TrainingArguments",
                                                  std::move(state))));
  ASSERT_OK_AND_ASSIGN(archive, TorchSaveArchive(pickle));
  EXPECT_THAT(TrainingArgsFromPickle(archive, "z.bin", &a),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown key \"nope\"")));
}

}  // namespace
}  // namespace loom::checkpoint
