// libFuzzer target for GLUE data reading (glue/delimited.h, glue/data_files.h). The first input
// byte picks what the rest is:
//   byte % 4 == 0: text for ParseDelimited (',' or '\t', quoting on or off: bits 2-3). Rows
//     must start on increasing lines, and writing the rows back (quoting every field, or joined
//     by the delimiter without quoting) must parse to the same fields.
//   byte % 4 == 1: a GLUE distribution .tsv (ReadGlueTsv) of the task and split bits 2-7 pick.
//     Class ids must be -1 or below num_labels, idx increasing, text_b present exactly for
//     sentence-pair tasks.
//   byte % 4 >= 2: run_glue's --train_file / --validation_file / --test_file (LoadDataFiles):
//     the rest cut at "\n#next_file\n" into the train file and optional validation and test
//     files (validation defaults to the train file), with the extension (.csv, .tsv, .json,
//     .jsonl) bits 2-3 pick and json_field "data" when bit 4 is set. Labels must match the
//     label list, class ids be -1 or below num_labels.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "glue/data_files.h"
#include "glue/delimited.h"
#include "glue/tasks.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using fuzz::Check;
using loom::glue::GlueData;
using loom::glue::GlueExample;
using loom::glue::GlueSplit;

void CheckDelimited(const std::string& text, uint8_t pick) {
  const loom::glue::DelimitedOptions options{.delimiter = (pick & 4) ? '\t' : ',',
                                             .quoting = (pick & 8) != 0};
  absl::StatusOr<std::vector<loom::glue::DelimitedRow>> rows =
      loom::glue::ParseDelimited(text, options, "f.csv");
  if (!rows.ok()) return;
  int line = 0;
  std::string written;
  for (const loom::glue::DelimitedRow& row : *rows) {
    Check(row.line > line, "rows start on increasing lines");
    line = row.line;
    Check(!row.fields.empty(), "a row has a field");
    for (size_t i = 0; i < row.fields.size(); ++i) {
      if (i > 0) written += options.delimiter;
      if (!options.quoting) {
        written += row.fields[i];
        continue;
      }
      written += '"';
      for (char ch : row.fields[i]) written += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      written += '"';
    }
    written += '\n';
  }
  // A written-back first field starting with a byte-order mark would lose it to BOM removal.
  if (!rows->empty() && rows->front().fields[0].rfind("\xEF\xBB\xBF", 0) == 0) return;
  absl::StatusOr<std::vector<loom::glue::DelimitedRow>> back =
      loom::glue::ParseDelimited(written, options, "written.csv");
  Check(back.ok(), "rows written back parse");
  Check(back->size() == rows->size(), "rows written back are as many");
  for (size_t r = 0; r < rows->size(); ++r) {
    Check((*back)[r].fields == (*rows)[r].fields, "rows written back have the same fields");
  }
}

void CheckExample(const GlueExample& e, const GlueData& data, int64_t* last_idx) {
  Check(e.idx > *last_idx, "idx increases");
  *last_idx = e.idx;
  Check(e.text_b.has_value() == data.sentence2_key.has_value(),
        "text_b exactly for sentence-pair data");
  if (std::holds_alternative<int64_t>(e.label)) {
    Check(!data.is_regression, "class ids only for classification");
    Check(e.class_id() >= -1 && e.class_id() < data.num_labels, "class ids are -1 or a label");
  }
  if (std::holds_alternative<double>(e.label)) Check(data.is_regression, "scores for regression");
}

void CheckGlueTsv(const std::string& text, uint8_t pick) {
  const std::vector<loom::glue::GlueTask>& tasks = loom::glue::AllGlueTasks();
  const loom::glue::GlueTask& task = tasks[(pick >> 2) % tasks.size()];
  std::vector<std::string> splits = {"train"};
  splits.insert(splits.end(), task.validation_splits.begin(), task.validation_splits.end());
  splits.insert(splits.end(), task.test_splits.begin(), task.test_splits.end());
  const std::string& split_name = splits[(pick >> 5) % splits.size()];
  static const std::string path = fuzz::ScratchFile("glue.tsv");
  fuzz::WriteFileOrDie(path, text);
  absl::StatusOr<GlueSplit> split = loom::glue::ReadGlueTsv(task, split_name, path);
  if (!split.ok()) return;
  GlueData data;
  data.is_regression = task.is_regression;
  data.num_labels = task.num_labels;
  data.sentence2_key = task.sentence2_key;
  int64_t last = -1;
  for (const GlueExample& e : split->examples) CheckExample(e, data, &last);
}

void CheckDataFiles(const std::string& text, uint8_t pick) {
  static const char* kExtensions[] = {"csv", "tsv", "json", "jsonl"};
  const std::string ext = kExtensions[(pick >> 2) % 4];
  const std::vector<std::string> parts = fuzz::SplitParts(text, "\n#next_file\n");
  loom::glue::DataFilesOptions options;
  options.train_file = fuzz::ScratchFile("train." + ext);
  fuzz::WriteFileOrDie(options.train_file, parts[0]);
  options.validation_file = options.train_file;
  if (parts.size() > 1) {
    options.validation_file = fuzz::ScratchFile("validation." + ext);
    fuzz::WriteFileOrDie(options.validation_file, parts[1]);
  }
  if (parts.size() > 2) {
    options.test_file = fuzz::ScratchFile("test." + ext);
    fuzz::WriteFileOrDie(options.test_file, parts[2]);
  }
  if (pick & 16) options.json_field = "data";
  absl::StatusOr<GlueData> data = loom::glue::LoadDataFiles(options);
  if (!data.ok()) {
    Check(!data.status().message().empty(), "errors say what is wrong");
    return;
  }
  // (A header cell may be empty: pandas would call that column "Unnamed: N", loom keeps "".)
  Check(data->sentence1_key != "label" && data->sentence2_key != "label" &&
            data->sentence2_key != data->sentence1_key,
        "the sentence columns are two other columns than the label");
  if (data->is_regression) {
    Check(data->num_labels == 1, "regression has one label");
  } else {
    Check(data->num_labels == static_cast<int>(data->label_list.size()) &&
              data->label_to_id.size() == data->label_list.size(),
          "the label list and label_to_id agree");
  }
  for (const GlueSplit& split : data->splits) {
    int64_t last = -1;
    for (const GlueExample& e : split.examples) CheckExample(e, *data, &last);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0:
      CheckDelimited(text, data[0]);
      break;
    case 1:
      CheckGlueTsv(text, data[0]);
      break;
    default:
      CheckDataFiles(text, data[0]);
      break;
  }
  return 0;
}
