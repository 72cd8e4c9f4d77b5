// Shared pieces of the C++ halves of the BERT parity tests in this package
// (bert_parity_tool, bert_autocast_tool, bert_sdpa_tool): the tiny model they build, the
// "logits / loss / grad/<key>" safetensors file their Python references compare, and the
// `TOOL write DIR` entry point.
//
// Usage:
//   BertConfig c = TinyBertConfig();            // vocab 50, hidden 32, 2 layers, 4 heads
//   c.set_num_labels(3);
//   ... out = model->TryForward(batch); out.loss.backward();
//   RETURN_IF_ERROR(SaveStepTensors(*model, logits, loss, dir + "/loom.safetensors", name));
//
//   int main(int argc, char** argv) { return RunWriteTool(argc, argv, "my_tool", &Write); }
#ifndef LOOM_TESTS_MODELS_BERT_TOOL_UTIL_H_
#define LOOM_TESTS_MODELS_BERT_TOOL_UTIL_H_

#include <torch/torch.h>

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "models/bert/bert_config.h"

namespace loom::models::bert {

// vocab 50, hidden 32, 2 layers of 4 heads, intermediate 37, 16 positions; every other field
// BertConfig's default (HF's).
BertConfig TinyBertConfig();

// Writes `path` with "logits" and "loss" (detached, loss reshaped to [1]) and
// "grad/<parameter key>" for every parameter of `model`, in named_parameters() order. A
// parameter without a gradient is an InternalError naming `scenario` and the key.
absl::Status SaveStepTensors(const torch::nn::Module& model, const at::Tensor& logits,
                             const at::Tensor& loss, const std::string& path,
                             const std::string& scenario);

// main() of a `TOOL write DIR` tool: process logging, one intra-op thread (as the Python
// references), then `write(DIR)`. Returns 0; 1 with the Status on stderr; 2 on a usage error.
int RunWriteTool(int argc, char** argv, const std::string& tool,
                 absl::FunctionRef<absl::Status(const std::string&)> write);

}  // namespace loom::models::bert

#endif  // LOOM_TESTS_MODELS_BERT_TOOL_UTIL_H_
