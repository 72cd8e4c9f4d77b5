// --fsdp_config typing, unknown keys and the typed view (transformers 4.41). HF's
// derivations (prefix stripping, min_num_params, deprecated flags, mutual exclusion) are also
// covered in training_args_test.cc.
#include "args/fsdp_config.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "args/training_args_testing.h"
#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::args {
namespace {

using ::loom::args::testing::ResolveForTest;
using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using json = nlohmann::ordered_json;

absl::StatusOr<TrainingArguments> WithConfig(const std::string& config,
                                             std::vector<std::string>* warnings = nullptr,
                                             std::vector<std::string> more = {}) {
  std::vector<std::string> flags = {"--fsdp", "full_shard auto_wrap", "--fsdp_config", config};
  flags.insert(flags.end(), more.begin(), more.end());
  return ResolveForTest(flags, warnings, /*reject_unsupported=*/false);
}

TEST(FsdpConfigTest, AbsentConfigGivesTheDefaultsOfTheSpecTable) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, ResolveForTest({"--fsdp", "full_shard"}, nullptr, /*reject_unsupported=*/false));
  ASSERT_OK_AND_ASSIGN(FsdpConfig c, FsdpConfigOf(args));
  EXPECT_EQ(c.min_num_params, 0);
  EXPECT_THAT(c.transformer_layer_cls_to_wrap, IsEmpty());
  EXPECT_FALSE(c.backward_prefetch.has_value());
  EXPECT_FALSE(c.forward_prefetch);
  EXPECT_FALSE(c.limit_all_gathers);
  EXPECT_TRUE(c.use_orig_params);
  EXPECT_TRUE(c.sync_module_states);
  EXPECT_FALSE(c.cpu_ram_efficient_loading);
  EXPECT_FALSE(c.activation_checkpointing);
  EXPECT_FALSE(c.xla);
  EXPECT_FALSE(c.xla_fsdp_v2);
  EXPECT_FALSE(c.xla_fsdp_grad_ckpt);
  EXPECT_TRUE(c.xla_fsdp_settings.is_null());
}

TEST(FsdpConfigTest, EveryKeyReachesTheTypedView) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, WithConfig(R"({
      "transformer_layer_cls_to_wrap": ["BertLayer", "BertEmbeddings"],
      "backward_prefetch": "BACKWARD_POST", "forward_prefetch": true,
      "limit_all_gathers": "True", "use_orig_params": false, "sync_module_states": true,
      "cpu_ram_efficient_loading": "true", "activation_checkpointing": true,
      "xla_fsdp_grad_ckpt": false, "xla_fsdp_settings": {"compute_dtype": "bfloat16"}})",
                                                          &warnings));
  EXPECT_THAT(warnings, IsEmpty());
  ASSERT_OK_AND_ASSIGN(FsdpConfig c, FsdpConfigOf(args));
  EXPECT_EQ(c.min_num_params, 0);
  EXPECT_THAT(c.transformer_layer_cls_to_wrap, ElementsAre("BertLayer", "BertEmbeddings"));
  EXPECT_EQ(c.backward_prefetch, FsdpBackwardPrefetchPolicy::kBackwardPost);
  EXPECT_TRUE(c.forward_prefetch);
  EXPECT_TRUE(c.limit_all_gathers);
  EXPECT_FALSE(c.use_orig_params);
  EXPECT_TRUE(c.sync_module_states);
  EXPECT_TRUE(c.cpu_ram_efficient_loading);
  EXPECT_TRUE(c.activation_checkpointing);
  EXPECT_EQ(c.xla_fsdp_settings, json::parse(R"({"compute_dtype": "bfloat16"})"));

  ASSERT_OK_AND_ASSIGN(
      TrainingArguments size,
      WithConfig(R"({"min_num_params": 1e8, "backward_prefetch": "no_prefetch"})"));
  ASSERT_OK_AND_ASSIGN(FsdpConfig s, FsdpConfigOf(size));
  EXPECT_EQ(s.min_num_params, 100000000);
  EXPECT_EQ(s.backward_prefetch, FsdpBackwardPrefetchPolicy::kNoPrefetch);
  EXPECT_EQ(json::parse(size.fsdp_config())["min_num_params"], 100000000);
}

// Before the fix, a string min_num_params or an object class list threw from nlohmann::json.
TEST(FsdpConfigTest, WrongTypesAreErrorsNamingTheKeyNotCrashes) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"min_num_params": "x"})",
       "--fsdp_config: min_num_params must be a non-negative integer, got \"x\""},
      {R"({"min_num_params": -5})",
       "--fsdp_config: min_num_params must be a non-negative integer, got -5"},
      {R"({"min_num_params": 2.5})",
       "--fsdp_config: min_num_params must be a non-negative integer, got 2.5"},
      {R"({"transformer_layer_cls_to_wrap": {"a": 1}})",
       "--fsdp_config: transformer_layer_cls_to_wrap must be a class name or a list of class "
       "names, got {\"a\":1}"},
      {R"({"transformer_layer_cls_to_wrap": ["A", 2]})",
       "--fsdp_config: transformer_layer_cls_to_wrap must be a class name or a list of class "
       "names, got [\"A\",2]"},
      {R"({"backward_prefetch": 1})",
       "--fsdp_config: backward_prefetch must be \"backward_pre\" or \"backward_post\" (or "
       "\"no_prefetch\"), got 1"},
      {R"({"forward_prefetch": "yes"})",
       "--fsdp_config: forward_prefetch must be true or false, got \"yes\""},
      {R"({"sync_module_states": 1})",
       "--fsdp_config: sync_module_states must be true or false, got 1"},
      {R"({"xla_fsdp_settings": 3})", "--fsdp_config: xla_fsdp_settings must be an object, got 3"},
  };
  for (const auto& [config, message] : cases) {
    EXPECT_THAT(WithConfig(config), StatusIs(absl::StatusCode::kInvalidArgument, message))
        << config;
  }
  // With the deprecated flag appended to a mistyped list (HF would call list.append on it).
  EXPECT_THAT(WithConfig(R"({"transformer_layer_cls_to_wrap": {"a": 1}})", nullptr,
                         {"--fsdp_transformer_layer_cls_to_wrap", "T5Block"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("transformer_layer_cls_to_wrap must be")));
  // The string form of the flags counts for the cross-key rule too.
  EXPECT_THAT(WithConfig(R"({"cpu_ram_efficient_loading": "TRUE", "sync_module_states": "false"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--fsdp_config: `sync_module_states` must be `\"True\"` if "
                       "`cpu_ram_efficient_loading` is `\"True\"`"));
}

TEST(FsdpConfigTest, UnknownKeysAreWarnings) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(
      TrainingArguments args,
      WithConfig(R"({"min_num_param": 5, "colour": "red", "fsdp_forward_prefetch": true})",
                 &warnings));
  EXPECT_THAT(
      warnings,
      ElementsAre(
          "--fsdp_config: unknown key \"min_num_param\" is ignored; did you mean "
          "\"min_num_params\"?",
          "--fsdp_config: unknown key \"colour\" is ignored (known keys: min_num_params, "
          "transformer_layer_cls_to_wrap, backward_prefetch, xla_fsdp_settings, forward_prefetch, "
          "limit_all_gathers, use_orig_params, sync_module_states, cpu_ram_efficient_loading, "
          "activation_checkpointing, xla, xla_fsdp_v2, xla_fsdp_grad_ckpt)",
          "--fsdp_config: key \"fsdp_forward_prefetch\" is ignored: HF strips the fsdp_ prefix "
          "only when it reads a config file, not from inline JSON; write \"forward_prefetch\""));
  // Kept as given (HF keeps unknown keys in the dict), but not read.
  EXPECT_EQ(json::parse(args.fsdp_config())["fsdp_forward_prefetch"], true);
  ASSERT_OK_AND_ASSIGN(FsdpConfig c, FsdpConfigOf(args));
  EXPECT_FALSE(c.forward_prefetch);
  EXPECT_EQ(c.min_num_params, 0);
}

TEST(FsdpConfigTest, FilePrefixesAreStrippedSoNoWarning) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/fsdp_prefixed.json";
  ASSERT_OK(base::WriteFileAtomically(
      path, R"({"fsdp_min_num_params": 2000, "fsdp_backward_prefetch": "backward_pre"})"));
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, WithConfig(path, &warnings));
  EXPECT_THAT(warnings, IsEmpty());
  ASSERT_OK_AND_ASSIGN(FsdpConfig c, FsdpConfigOf(args));
  EXPECT_EQ(c.min_num_params, 2000);
  EXPECT_EQ(c.backward_prefetch, FsdpBackwardPrefetchPolicy::kBackwardPre);
}

TEST(FsdpConfigTest, TypedViewNeedsResolvedJson) {
  TrainingArguments raw;
  raw.set_fsdp_config("/some/file.json");
  EXPECT_THAT(FsdpConfigOf(raw),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("run PostInit on the TrainingArguments first")));
}

}  // namespace
}  // namespace loom::args
