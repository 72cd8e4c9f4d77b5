// Writes the shared inputs of the Trainer parity test into DIR: weights.pt (TinyClassifier's
// initial parameters), train.pt and eval.pt (input_ids / labels), each a torch pickle of a
// plain dict that Python's torch.load reads. The LayerNorm's weight and bias are moved away
// from LibTorch's 1 / 0 so that wrongly decaying them would show in the final parameters.
//   usage: parity_init DIR
#include <torch/torch.h>

#include <iostream>
#include <string>

#include "absl/status/status.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "logging/process_logging.h"
#include "tests/trainer/tiny_model.h"

namespace loom::trainer::testing {
namespace {

// 21 training examples: batches of 4 give 6 per epoch, the last one with a single example.
constexpr int64_t kTrainSize = 21;
constexpr int64_t kEvalSize = 7;
constexpr int64_t kSeqLen = 5;

absl::Status Run(const std::string& dir) {
  RETURN_IF_ERROR(base::MakeDirs(dir));
  torch::manual_seed(20240611);
  TinyClassifier model;
  data::TensorMap weights = model.Weights();
  weights["norm.weight"] = 1 + 0.2 * torch::randn({TinyClassifier::kHidden});
  weights["norm.bias"] = 0.1 * torch::randn({TinyClassifier::kHidden});
  RETURN_IF_ERROR(SaveTensorMap(weights, dir + "/weights.pt"));
  RETURN_IF_ERROR(SaveTensorMap(MakeClassificationData(kTrainSize, kSeqLen, 1), dir + "/train.pt"));
  return SaveTensorMap(MakeClassificationData(kEvalSize, kSeqLen, 2), dir + "/eval.pt");
}

}  // namespace
}  // namespace loom::trainer::testing

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 2) {
    std::cerr << "usage: parity_init DIR\n";
    return 2;
  }
  absl::Status status = loom::trainer::testing::Run(argv[1]);
  if (!status.ok()) {
    std::cerr << "parity_init: " << status << "\n";
    return 1;
  }
  return 0;
}
