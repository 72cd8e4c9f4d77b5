// Helpers shared by the Trainer tests of tests/trainer: arguments from HF field names and the
// TinyClassifier's datasets.
//
// Example:
//   ASSERT_OK_AND_ASSIGN(args::TrainingArguments a,
//                        ParseArgs({{"output_dir", dir}, {"gradient_accumulation_steps", 2}}));
//   options.train_dataset = ClassificationDataset(/*size=*/10, /*seed=*/1);
#ifndef LOOM_TESTS_TRAINER_TEST_UTIL_H_
#define LOOM_TESTS_TRAINER_TEST_UTIL_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "data/dataset.h"
#include "nlohmann/json.hpp"

namespace loom::trainer::testing {

// TrainingArguments whose fields are set from `values` (keys are HF field names) exactly as
// args::ArgParser::ParseJson sets them; unnamed fields keep HF's defaults. The Trainer
// resolves them (PostInit) itself.
absl::StatusOr<args::TrainingArguments> ParseArgs(const nlohmann::ordered_json& values);

// MakeClassificationData(size, /*seq_len=*/5, seed) as a TensorDataset.
std::shared_ptr<const data::Dataset> ClassificationDataset(int64_t size, uint64_t seed);

}  // namespace loom::trainer::testing

#endif  // LOOM_TESTS_TRAINER_TEST_UTIL_H_
