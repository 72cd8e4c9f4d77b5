#include "tests/models/bert_tool_util.h"

#include <ATen/Parallel.h>

#include <iostream>

#include "checkpoint/safetensors.h"
#include "logging/process_logging.h"

namespace loom::models::bert {

BertConfig TinyBertConfig() {
  BertConfig c;
  c.vocab_size = 50;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 37;
  c.max_position_embeddings = 16;
  return c;
}

absl::Status SaveStepTensors(const torch::nn::Module& model, const at::Tensor& logits,
                             const at::Tensor& loss, const std::string& path,
                             const std::string& scenario) {
  checkpoint::NamedTensors tensors = {{"logits", logits.detach()},
                                      {"loss", loss.detach().reshape({1})}};
  for (const auto& item : model.named_parameters()) {
    if (!item.value().grad().defined()) {
      return absl::InternalError(scenario + ": no gradient for " + item.key());
    }
    tensors.emplace_back("grad/" + item.key(), item.value().grad().clone());
  }
  return checkpoint::SaveSafetensors(path, tensors);
}

int RunWriteTool(int argc, char** argv, const std::string& tool,
                 absl::FunctionRef<absl::Status(const std::string&)> write) {
  logging::InitProcessLogging(argv[0]);
  if (argc != 3 || std::string(argv[1]) != "write") {
    std::cerr << "usage: " << tool << " write DIR\n";
    return 2;
  }
  at::set_num_threads(1);
  const absl::Status status = write(argv[2]);
  if (!status.ok()) {
    std::cerr << tool << " write: " << status << "\n";
    return 1;
  }
  return 0;
}

}  // namespace loom::models::bert
