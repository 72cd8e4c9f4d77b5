// Test helper (testonly): a TrainingArguments resolved from flags the way a program does it
// (ArgParser + PostInit), with a fixed clock and host name so derived defaults are stable.
//
// Example:
//   ASSERT_OK_AND_ASSIGN(TrainingArguments args, ResolveForTest({"--fp16"}));
//   EXPECT_TRUE(EquivalentArgs(args, reloaded));
#ifndef LOOM_ARGS_TRAINING_ARGS_TESTING_H_
#define LOOM_ARGS_TRAINING_ARGS_TESTING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "args/training_args.h"

namespace loom::args::testing {

// Parses "--output_dir out" followed by `flags`, then PostInit (clock 1700000000 s, host
// "host"). `warnings` (may be null) receives PostInit's warnings.
absl::StatusOr<TrainingArguments> ResolveForTest(std::vector<std::string> flags,
                                                 std::vector<std::string>* warnings = nullptr,
                                                 bool reject_unsupported = true);

// Equal up to presence of fields at their default (HF has no notion of presence); on a
// difference the failure lists what differs.
::testing::AssertionResult EquivalentArgs(const TrainingArguments& a, const TrainingArguments& b);

}  // namespace loom::args::testing

#endif  // LOOM_ARGS_TRAINING_ARGS_TESTING_H_
