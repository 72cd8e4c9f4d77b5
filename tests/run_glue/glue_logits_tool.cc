// glue_logits_tool MODEL_DIR TSV N MAX_LENGTH OUT.safetensors
//
// For //tests/run_glue:run_glue_reference_test: loads a folder run_glue wrote (tokenizer files,
// config.json, model.safetensors) the way a user of the saved model would, encodes the
// "sentence" column of the first N rows of an SST-2-layout TSV with run_glue's options
// (longest_first truncation and padding to MAX_LENGTH), runs the model in eval mode and writes
// input_ids, token_type_ids, attention_mask and expected_logits for the Python reference.
#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/safetensors.h"
#include "logging/process_logging.h"
#include "models/bert/pretrained.h"
#include "text/bert_tokenizer.h"

namespace {

absl::Status Run(const std::string& dir, const std::string& tsv, int n, int max_length,
                 const std::string& out) {
  ASSIGN_OR_RETURN(loom::text::BertTokenizer tok, loom::text::BertTokenizer::FromPretrained(dir));
  ASSIGN_OR_RETURN(loom::models::bert::LoadedBert loaded,
                   loom::models::bert::LoadBertForSequenceClassification(dir));
  if (!loaded.Report().empty()) {
    return absl::InternalError("loading " + dir + " was not exact: " + loaded.Report());
  }
  ASSIGN_OR_RETURN(std::string text, loom::base::ReadFile(tsv));
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  std::vector<std::string> header = absl::StrSplit(lines.at(0), '\t');
  size_t col = 0;
  while (col < header.size() && header[col] != "sentence") ++col;
  if (col == header.size()) return absl::InvalidArgumentError(tsv + ": no sentence column");
  loom::text::EncodeOptions opts;
  opts.max_length = max_length;
  opts.truncation = loom::text::Truncation::kLongestFirst;
  opts.padding = loom::text::Padding::kMaxLength;
  std::vector<int64_t> ids, types, mask;
  int rows = 0;
  for (size_t i = 1; i < lines.size() && rows < n; ++i, ++rows) {
    std::vector<std::string> fields = absl::StrSplit(lines[i], '\t');
    ASSIGN_OR_RETURN(loom::text::Encoding e, tok.Encode(fields.at(col), std::nullopt, opts));
    ids.insert(ids.end(), e.input_ids.begin(), e.input_ids.end());
    types.insert(types.end(), e.token_type_ids.begin(), e.token_type_ids.end());
    mask.insert(mask.end(), e.attention_mask.begin(), e.attention_mask.end());
  }
  auto make = [&](const std::vector<int64_t>& v) {
    return torch::tensor(v, torch::kLong).reshape({rows, max_length});
  };
  loom::data::Batch batch = {
      {"input_ids", make(ids)}, {"token_type_ids", make(types)}, {"attention_mask", make(mask)}};
  loaded.model->eval();
  torch::NoGradGuard no_grad;
  ASSIGN_OR_RETURN(loom::modeling::ModelOutput output, loaded.model->TryForward(batch));
  loom::checkpoint::NamedTensors tensors(batch.begin(), batch.end());
  tensors.emplace_back("expected_logits", output.Get("logits").contiguous());
  return loom::checkpoint::SaveSafetensors(out, tensors);
}

}  // namespace

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 6) {
    std::cerr << "usage: glue_logits_tool MODEL_DIR TSV N MAX_LENGTH OUT.safetensors\n";
    return 2;
  }
  absl::Status s = Run(argv[1], argv[2], std::atoi(argv[3]), std::atoi(argv[4]), argv[5]);
  if (!s.ok()) {
    std::cerr << "glue_logits_tool: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
