// LoadDataFiles: --train_file / --validation_file / --test_file (see data_files.h).
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "glue/data_files.h"
#include "glue/data_files_internal.h"
#include "glue/delimited.h"
#include "nlohmann/json.hpp"

namespace loom::glue {
namespace {

using internal::Where;
using Json = nlohmann::ordered_json;

// One file as a table. CSV/TSV cells are JSON strings; JSON cells are the record's values
// (null where a record lacks the key).
struct Table {
  std::string path;
  bool typed = false;  // JSON: cells carry types; CSV/TSV: every cell is text
  std::vector<std::string> columns;
  struct Row {
    int line = 0;
    std::vector<Json> cells;
  };
  std::vector<Row> rows;
  std::string unit;  // "" (rows are lines) or "record " (rows of a JSON list)

  // "<path>:<line>: " or "<path>:record <n>: ".
  std::string At(const Row& row) const { return absl::StrCat(path, ":", unit, row.line, ": "); }

  int Column(absl::string_view name) const {
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
};

// Python's path.split(".")[-1].
std::string Extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

absl::StatusOr<Table> ReadDelimitedTable(const std::string& path, char delimiter) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  ASSIGN_OR_RETURN(std::vector<DelimitedRow> rows,
                   ParseDelimited(text, {.delimiter = delimiter, .quoting = true}, path));
  if (rows.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": empty file; expected a header row naming the columns"));
  }
  Table table;
  table.path = path;
  table.columns = rows[0].fields;
  std::set<std::string> seen;
  for (const std::string& name : table.columns) {
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat(Where(path, rows[0].line),
                                                     "the header names column '", name,
                                                     "' twice; give every column its own name"));
    }
  }
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].fields.size() != table.columns.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(path, rows[r].line), "the row has ", rows[r].fields.size(),
                       " fields but the header (line ", rows[0].line, ") names ",
                       table.columns.size(), " columns; quote fields that contain the delimiter"));
    }
    Table::Row row;
    row.line = rows[r].line;
    for (std::string& field : rows[r].fields) row.cells.push_back(Json(std::move(field)));
    table.rows.push_back(std::move(row));
  }
  return table;
}

// Adds `records` (JSON objects) to `table`, columns in order of first appearance.
absl::Status AddRecords(Table& table, std::vector<std::pair<int, Json>> records,
                        absl::string_view unit) {
  for (auto& [number, record] : records) {
    if (!record.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(table.path, ":", unit, number, ": expected a ",
                                                     "JSON object (one record), got ",
                                                     record.type_name()));
    }
    for (auto it = record.begin(); it != record.end(); ++it) {
      if (table.Column(it.key()) < 0) table.columns.push_back(it.key());
    }
  }
  for (auto& [number, record] : records) {
    Table::Row row;
    row.line = number;
    for (const std::string& column : table.columns) {
      auto it = record.find(column);
      row.cells.push_back(it == record.end() ? Json(nullptr) : *it);
    }
    table.rows.push_back(std::move(row));
  }
  return absl::OkStatus();
}

using Records = std::vector<std::pair<int, Json>>;  // (line or record number, record)

// The records of `field`'s object of equally long column lists, which `datasets` also accepts.
absl::StatusOr<Records> ColumnsToRecords(const std::string& path, const std::string& field,
                                         const Json& columns) {
  size_t length = 0;
  bool first = true;
  for (auto it = columns.begin(); it != columns.end(); ++it) {
    if (!it->is_array() || (!first && it->size() != length)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": json_field '", field, "' holds an object whose member '", it.key(),
                       "' is not a list as long as the others; expected a list of records or an "
                       "object of equally long lists"));
    }
    length = it->size();
    first = false;
  }
  Records records;
  for (size_t i = 0; i < length; ++i) {
    Json record = Json::object();
    for (auto it = columns.begin(); it != columns.end(); ++it) record[it.key()] = (*it)[i];
    records.emplace_back(static_cast<int>(i + 1), std::move(record));
  }
  return records;
}

// A file that is one JSON document: a list of records, or an object whose member `field`
// holds the records (a list, or an object of columns).
absl::Status ReadJsonDocument(const std::string& path, const std::string& text,
                              const std::optional<std::string>& field, Table& table) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON"));
  table.unit = "record ";
  if (field.has_value()) {
    if (!doc.is_object() || !doc.contains(*field)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": json_field '", *field, "' is not a member of the file's top-level object"));
    }
    doc = doc[*field];
    if (doc.is_object()) {
      ASSIGN_OR_RETURN(Records records, ColumnsToRecords(path, *field, doc));
      return AddRecords(table, std::move(records), "record ");
    }
  }
  if (!doc.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a list of records, got ", doc.type_name()));
  }
  Records records;
  for (size_t i = 0; i < doc.size(); ++i) {
    records.emplace_back(static_cast<int>(i + 1), std::move(doc[i]));
  }
  return AddRecords(table, std::move(records), "record ");
}

// The error for a JSON Lines line that does not parse; a file that is one JSON object gets
// its own explanation.
absl::Status JsonLinesError(const std::string& path, const std::string& text, int line) {
  Json whole = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (whole.is_object()) {
    std::vector<std::string> keys;
    for (auto it = whole.begin(); it != whole.end(); ++it) keys.push_back(it.key());
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the file is one JSON object (fields: ", absl::StrJoin(keys, ", "),
        "), not records; HF's json loader cannot read it without `field` either. Write "
        "JSON Lines or a list of records, or name the member holding the records with "
        "json_field"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      Where(path, line), "not a JSON value; JSON Lines files hold one object per line"));
}

// JSON Lines: one record per non-blank line.
absl::Status ReadJsonLines(const std::string& path, const std::string& text, Table& table) {
  Records records;
  int line = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line;
    const absl::string_view content =
        absl::StripAsciiWhitespace(absl::string_view(text).substr(start, end - start));
    start = end + 1;
    if (content.empty()) continue;
    Json record = Json::parse(content, nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded()) return JsonLinesError(path, text, line);
    records.emplace_back(line, std::move(record));
  }
  return AddRecords(table, std::move(records), "");
}

absl::StatusOr<Table> ReadJsonTable(const std::string& path,
                                    const std::optional<std::string>& field) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  Table table;
  table.path = path;
  table.typed = true;
  const absl::string_view stripped = absl::StripLeadingAsciiWhitespace(text);
  if (field.has_value() || (!stripped.empty() && stripped[0] == '[')) {
    RETURN_IF_ERROR(ReadJsonDocument(path, text, field, table));
  } else {
    RETURN_IF_ERROR(ReadJsonLines(path, text, table));
  }
  return table;
}

// A cell as JSON text for messages. CSV/TSV cells hold the file's bytes, which need not be
// UTF-8; those show as U+FFFD instead of making dump() throw.
std::string Shown(const Json& cell) {
  return cell.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

enum class LabelKind { kInteger, kFloat, kText };

const char* KindName(LabelKind kind) {
  switch (kind) {
    case LabelKind::kInteger:
      return "integer";
    case LabelKind::kFloat:
      return "float";
    case LabelKind::kText:
      return "text";
  }
  return "?";
}

// The kind of one label cell, as pandas (CSV) or pyarrow (JSON) would type its column.
absl::StatusOr<LabelKind> CellKind(const Table& table, const Table::Row& row, const Json& cell) {
  if (!table.typed) {
    const std::string& text = cell.get_ref<const std::string&>();
    if (absl::StripAsciiWhitespace(text).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(table.At(row), "empty 'label'; every training row needs a label"));
    }
    if (internal::ParseInteger(text).has_value()) return LabelKind::kInteger;
    if (internal::ParseFloat(text).has_value()) return LabelKind::kFloat;
    return LabelKind::kText;
  }
  if (cell.is_number_integer()) return LabelKind::kInteger;
  if (cell.is_number_float()) return LabelKind::kFloat;
  if (cell.is_string()) return LabelKind::kText;
  return absl::InvalidArgumentError(absl::StrCat(
      table.At(row), "'label' is ", cell.is_null() ? "missing or null" : cell.type_name(),
      "; labels must be integers, floats (regression) or strings"));
}

// The canonical text of a label cell of `kind` ("3" for 3 and 3.0 when integral), or an error.
absl::StatusOr<std::string> LabelKey(const Table& table, const Table::Row& row, const Json& cell,
                                     LabelKind kind) {
  if (kind == LabelKind::kText) {
    if (cell.is_string()) return cell.get<std::string>();
  } else if (!table.typed && cell.is_string()) {
    if (std::optional<int64_t> v = internal::ParseInteger(cell.get_ref<const std::string&>())) {
      return absl::StrCat(*v);
    }
  } else if (cell.is_number_integer()) {
    return cell.dump();
  } else if (cell.is_number_float()) {
    const double v = cell.get<double>();
    if (std::isfinite(v) && std::fabs(v) < 9e18 &&
        v == static_cast<double>(static_cast<int64_t>(v))) {
      return absl::StrCat(static_cast<int64_t>(v));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(table.At(row), "'label' ", Shown(cell),
                                                 " is not a ", KindName(kind),
                                                 " label like the training labels"));
}

absl::StatusOr<double> FloatLabel(const Table& table, const Table::Row& row, const Json& cell) {
  if (cell.is_number()) return cell.get<double>();
  if (!table.typed && cell.is_string()) {
    if (std::optional<double> v = internal::ParseFloat(cell.get_ref<const std::string&>())) {
      return *v;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      table.At(row), "'label' ", Shown(cell),
      " is not a number; the training labels are floats, so this is a regression task"));
}

absl::StatusOr<std::string> TextCell(const Table& table, const Table::Row& row, int column,
                                     const GlueData& data) {
  const Json& cell = row.cells[column];
  if (cell.is_string()) return cell.get<std::string>();
  return absl::InvalidArgumentError(absl::StrCat(
      table.At(row), "column '", table.columns[column], "' is ",
      cell.is_null() ? "missing or null" : cell.type_name(),
      ", not text; run_glue tokenizes the sentence columns '", data.sentence1_key,
      data.sentence2_key.has_value() ? absl::StrCat("' and '", *data.sentence2_key) : "",
      "' (\"sentence1\"/\"sentence2\" when both exist, else the first two non-label columns)"));
}

absl::StatusOr<Table> ReadTable(const std::string& path, const std::optional<std::string>& field) {
  const std::string ext = Extension(path);
  if (ext == "csv") return ReadDelimitedTable(path, ',');
  if (ext == "tsv") return ReadDelimitedTable(path, '\t');
  return ReadJsonTable(path, field);
}

absl::StatusOr<GlueSplit> BuildSplit(const Table& table, const std::string& name,
                                     const GlueData& data, LabelKind kind) {
  GlueSplit split;
  split.name = name;
  split.path = table.path;
  const int key1 = table.Column(data.sentence1_key);
  const int key2 = data.sentence2_key.has_value() ? table.Column(*data.sentence2_key) : -1;
  for (const auto& [key, column] : {std::pair<const std::string*, int>{&data.sentence1_key, key1},
                                    {data.sentence2_key ? &*data.sentence2_key : nullptr, key2}}) {
    if (key != nullptr && column < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(table.path, ": no column '", *key,
                       "', which the train file's columns made a sentence "
                       "column (columns here: ",
                       absl::StrJoin(table.columns, ", "), ")"));
    }
  }
  const int label = table.Column("label");
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const Table::Row& row = table.rows[r];
    GlueExample example;
    example.idx = static_cast<int64_t>(r);
    ASSIGN_OR_RETURN(example.text_a, TextCell(table, row, key1, data));
    if (key2 >= 0) {
      ASSIGN_OR_RETURN(std::string text_b, TextCell(table, row, key2, data));
      example.text_b = std::move(text_b);
    }
    if (label >= 0) {
      const Json& cell = row.cells[label];
      if (data.is_regression) {
        ASSIGN_OR_RETURN(double value, FloatLabel(table, row, cell));
        example.label = value;
      } else {
        ASSIGN_OR_RETURN(std::string key, LabelKey(table, row, cell, kind));
        auto it = data.label_to_id.find(key);
        if (kind != LabelKind::kText && key == "-1") {
          example.label = int64_t{-1};  // run_glue keeps -1 ("no label") as -1
        } else if (it == data.label_to_id.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat(table.At(row), "label ", Shown(cell), " is not among the training ",
                           "labels (", absl::StrJoin(data.label_list, ", "), ")"));
        } else {
          example.label = static_cast<int64_t>(it->second);
        }
      }
    }
    split.examples.push_back(std::move(example));
  }
  return split;
}

// run_glue's checks of the file names: train and validation given, one known extension.
absl::Status CheckFileNames(const DataFilesOptions& options) {
  if (options.train_file.empty() || options.validation_file.empty()) {
    return absl::InvalidArgumentError(
        "Need either a GLUE task (--task_name) or a training/validation file "
        "(--train_file and --validation_file)");
  }
  const std::string train_ext = Extension(options.train_file);
  if (train_ext != "csv" && train_ext != "json" && train_ext != "tsv" && train_ext != "jsonl") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--train_file=", options.train_file,
        ": `train_file` should be a csv or a json file (loom also reads .tsv and .jsonl)"));
  }
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string*>{"validation_file", &options.validation_file},
        {"test_file", &options.test_file}}) {
    if (!path->empty() && Extension(*path) != train_ext) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, "=", *path, ": `", flag,
          "` should have the same extension (csv or json) as `train_file` (", train_ext, ")"));
    }
  }
  return absl::OkStatus();
}

// The train file, which must have examples and a 'label' column.
absl::StatusOr<Table> ReadTrainTable(const DataFilesOptions& options) {
  ASSIGN_OR_RETURN(Table train, ReadTable(options.train_file, options.json_field));
  if (train.Column("label") < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--train_file=", options.train_file,
        ": no column 'label'; run_glue takes the labels from a column named 'label' (columns: ",
        absl::StrJoin(train.columns, ", "), ")"));
  }
  if (train.rows.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--train_file=", options.train_file, ": the file has no examples"));
  }
  return train;
}

// Label kind of the train column: text wins over numbers in CSV (pandas reads an object
// column); JSON mixing strings and numbers is an error (pyarrow cannot type the column).
absl::StatusOr<LabelKind> TrainLabelKind(const Table& train, int label) {
  bool any_text = false, any_float = false, any_number = false;
  for (const Table::Row& row : train.rows) {
    ASSIGN_OR_RETURN(LabelKind kind, CellKind(train, row, row.cells[label]));
    if (kind == LabelKind::kText) {
      if (train.typed && any_number) {
        return absl::InvalidArgumentError(absl::StrCat(
            train.At(row), "'label' is a string but earlier labels are numbers; use one type"));
      }
      any_text = true;
    } else {
      if (train.typed && any_text) {
        return absl::InvalidArgumentError(absl::StrCat(
            train.At(row), "'label' is a number but earlier labels are strings; use one type"));
      }
      any_number = true;
      any_float = any_float || kind == LabelKind::kFloat;
    }
  }
  return any_text ? LabelKind::kText : (any_float ? LabelKind::kFloat : LabelKind::kInteger);
}

// num_labels and the sorted label list (integers numerically, text lexicographically).
absl::Status SetLabels(const Table& train, int label, LabelKind kind, GlueData& data) {
  data.is_regression = kind == LabelKind::kFloat;
  if (data.is_regression) {
    data.num_labels = 1;
    return absl::OkStatus();
  }
  if (kind == LabelKind::kInteger) {
    std::set<int64_t> unique;
    for (const Table::Row& row : train.rows) {
      ASSIGN_OR_RETURN(std::string key, LabelKey(train, row, row.cells[label], kind));
      unique.insert(*internal::ParseInteger(key));
    }
    data.labels_are_integers = true;
    data.int_label_list.assign(unique.begin(), unique.end());
    for (int64_t v : unique) data.label_list.push_back(absl::StrCat(v));
  } else {
    std::set<std::string> unique;
    for (const Table::Row& row : train.rows) unique.insert(row.cells[label].get<std::string>());
    data.label_list.assign(unique.begin(), unique.end());
  }
  data.num_labels = static_cast<int>(data.label_list.size());
  for (size_t i = 0; i < data.label_list.size(); ++i) {
    data.label_to_id[data.label_list[i]] = static_cast<int>(i);
  }
  return absl::OkStatus();
}

// run_glue's sentence keys, from the train file's columns: sentence1/sentence2 when both
// exist, else the first one or two non-label columns.
absl::Status SetSentenceKeys(const Table& train, const DataFilesOptions& options, GlueData& data) {
  std::vector<std::string> non_label;
  for (const std::string& column : train.columns) {
    if (column != "label") non_label.push_back(column);
  }
  if (non_label.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--train_file=", options.train_file, ": the only column is 'label'; add a text column"));
  }
  const bool has_pair = std::count(non_label.begin(), non_label.end(), "sentence1") > 0 &&
                        std::count(non_label.begin(), non_label.end(), "sentence2") > 0;
  if (has_pair) {
    data.sentence1_key = "sentence1";
    data.sentence2_key = "sentence2";
  } else {
    data.sentence1_key = non_label[0];
    if (non_label.size() >= 2) data.sentence2_key = non_label[1];
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GlueData> LoadDataFiles(const DataFilesOptions& options) {
  RETURN_IF_ERROR(CheckFileNames(options));
  ASSIGN_OR_RETURN(Table train, ReadTrainTable(options));
  const int label = train.Column("label");
  ASSIGN_OR_RETURN(const LabelKind kind, TrainLabelKind(train, label));
  GlueData data;
  RETURN_IF_ERROR(SetLabels(train, label, kind, data));
  RETURN_IF_ERROR(SetSentenceKeys(train, options, data));
  ASSIGN_OR_RETURN(GlueSplit train_split, BuildSplit(train, "train", data, kind));
  data.splits.push_back(std::move(train_split));
  for (const auto& [name, path] :
       {std::pair<const char*, const std::string*>{"validation", &options.validation_file},
        {"test", &options.test_file}}) {
    if (path->empty()) continue;
    ASSIGN_OR_RETURN(Table table, ReadTable(*path, options.json_field));
    ASSIGN_OR_RETURN(GlueSplit split, BuildSplit(table, name, data, kind));
    data.splits.push_back(std::move(split));
  }
  return data;
}

}  // namespace loom::glue
