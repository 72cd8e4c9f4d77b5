// run_clm's data files, read as HF's `load_dataset(extension, data_files=...)` reads them
// (datasets 2.x's text, json and csv builders) and the validation split it takes from the
// training file. The CSV reader is written here (RFC 4180 records, as pandas.read_csv reads
// them by default): no packaged C++ CSV library is in Debian's base set this project uses.
//
// Contract:
//   - ReadTextColumn(path, flag, keep_linebreaks): the examples of one file, by extension:
//     .txt: one example per line (universal newlines: "\r\n" and "\r" read as "\n"); with
//       keep_linebreaks each example keeps its "\n" (the last line has none when the file does
//       not end with one); empty lines are examples too.
//     .json / .jsonl: JSON Lines (one object per non-blank line) or one JSON list of objects.
//     .csv: a header row, then one record per row (blank lines skipped; a field starting with
//       a quote may hold commas, line breaks — kept as written — and "" for a quote; a quote
//       elsewhere is a literal character, as pandas reads it).
//     The column is "text" when the file has one, else its first column (run_clm's rule); a
//     value that is not a string (JSON) or one of pandas' default NA strings (CSV: "", "NA",
//     "null", "None", ...: pandas reads NaN) is InvalidArgument
//     naming the file, the line or row, and the column. Not UTF-8, unreadable or empty
//     files are errors naming `flag` and the path.
//   - SplitPercent(texts, percent): datasets' train[:P%] and train[P%:] (the boundary rounded
//     to the closest integer, ties to even, as Python's round).
//
// Example:
//   ASSIGN_OR_RETURN(TextColumn train, ReadTextColumn("data/train.txt", "--train_file", true));
#ifndef LOOM_EXAMPLES_CLM_CLM_DATA_H_
#define LOOM_EXAMPLES_CLM_CLM_DATA_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::examples::clm {

struct TextColumn {
  std::string column;  // "text", the first column's name, or "text" for .txt files
  std::vector<std::string> texts;
};

absl::StatusOr<TextColumn> ReadTextColumn(const std::string& path, const std::string& flag,
                                          bool keep_linebreaks);
// ReadTextColumn on bytes already read: `path` gives the extension and names the file in
// errors (what the fuzz target drives).
absl::StatusOr<TextColumn> ParseTextColumn(const std::string& raw, const std::string& path,
                                           const std::string& flag, bool keep_linebreaks);

// {validation, train}.
std::pair<std::vector<std::string>, std::vector<std::string>> SplitPercent(
    const std::vector<std::string>& texts, int64_t percent);

}  // namespace loom::examples::clm

#endif  // LOOM_EXAMPLES_CLM_CLM_DATA_H_
