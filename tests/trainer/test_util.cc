#include "tests/trainer/test_util.h"

#include "args/parser.h"
#include "base/status_macros.h"
#include "tests/trainer/tiny_model.h"

namespace loom::trainer::testing {

absl::StatusOr<args::TrainingArguments> ParseArgs(const nlohmann::ordered_json& values) {
  args::TrainingArguments out;
  args::ArgParser parser({.program = "trainer_test"});
  parser.AddGroup("TrainingArguments", &out);
  RETURN_IF_ERROR(parser.ParseJson(values, "test arguments"));
  return out;
}

std::shared_ptr<const data::Dataset> ClassificationDataset(int64_t size, uint64_t seed) {
  absl::StatusOr<std::shared_ptr<data::TensorDataset>> ds =
      data::TensorDataset::Create(MakeClassificationData(size, /*seq_len=*/5, seed));
  return ds.ok() ? *ds : nullptr;
}

}  // namespace loom::trainer::testing
