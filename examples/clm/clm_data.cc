#include "examples/clm/clm_data.h"

#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "text/unicode.h"

namespace loom::examples::clm {
namespace {

using Json = nlohmann::ordered_json;

std::string Extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(dot + 1);
}

absl::Status FileError(const std::string& flag, const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": ", what));
}

// Python's universal newlines: "\r\n" and "\r" become "\n".
std::string UniversalNewlines(const std::string& raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\r') {
      out.push_back(raw[i]);
    } else {
      out.push_back('\n');
      if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
    }
  }
  return out;
}

TextColumn ReadLines(const std::string& text, bool keep_linebreaks) {
  TextColumn out{"text", {}};
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    const size_t end = nl == std::string::npos ? text.size() : nl + 1;
    std::string line = text.substr(start, end - start);
    if (!keep_linebreaks && !line.empty() && line.back() == '\n') line.pop_back();
    out.texts.push_back(std::move(line));
    start = end;
  }
  return out;
}

// The column run_clm reads: "text" if present, else the first key of the first record.
std::string PickColumn(const std::vector<std::string>& columns) {
  for (const std::string& c : columns) {
    if (c == "text") return c;
  }
  return columns.empty() ? "text" : columns.front();
}

absl::StatusOr<std::vector<Json>> JsonRecords(const std::string& text, const std::string& flag,
                                              const std::string& path) {
  const Json whole = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!whole.is_discarded() && whole.is_array()) return whole.get<std::vector<Json>>();
  std::vector<Json> records;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    Json record = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded() || !record.is_object()) {
      return FileError(flag, path,
                       absl::StrCat("line ", line_number,
                                    " is not a JSON object (JSON Lines: one object per line, or "
                                    "one JSON list of objects)"));
    }
    records.push_back(std::move(record));
  }
  return records;
}

absl::StatusOr<TextColumn> ReadJson(const std::string& text, const std::string& flag,
                                    const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<Json> records, JsonRecords(text, flag, path));
  std::vector<std::string> columns;
  if (!records.empty() && records[0].is_object()) {
    for (auto it = records[0].begin(); it != records[0].end(); ++it) columns.push_back(it.key());
  }
  TextColumn out{PickColumn(columns), {}};
  for (size_t i = 0; i < records.size(); ++i) {
    auto it = records[i].is_object() ? records[i].find(out.column) : records[i].end();
    if (!records[i].is_object() || it == records[i].end() || !it->is_string()) {
      return FileError(flag, path,
                       absl::StrCat("record ", i + 1, " has no string \"", out.column,
                                    "\" (the column run_clm reads: \"text\", else the first)"));
    }
    out.texts.push_back(it->get<std::string>());
  }
  return out;
}

// RFC 4180 records as pandas' C parser reads them: fields split on ','; a field that starts
// with '"' is quoted (it may hold ',', line breaks and "" for a quote) — a quote elsewhere is a
// literal character; rows end at "\n", "\r\n" or "\r" outside quotes.
absl::StatusOr<std::vector<std::vector<std::string>>> CsvRecords(const std::string& text,
                                                                 const std::string& flag,
                                                                 const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, field_started = false, row_started = false;
  int line = 1;
  auto end_field = [&] {
    row.push_back(std::move(field));
    field.clear();
    field_started = false;
  };
  auto end_row = [&] {
    if (row_started) {
      end_field();
      rows.push_back(std::move(row));
    }
    row.clear();
    field.clear();
    field_started = row_started = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field.push_back(c);
      }
    } else if (c == '"' && !field_started) {
      quoted = field_started = row_started = true;
    } else if (c == ',') {
      end_field();
      row_started = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_row();
      ++line;
    } else {
      field.push_back(c);
      field_started = row_started = true;
    }
  }
  if (quoted) {
    return FileError(flag, path,
                     absl::StrCat("a quoted field opened before line ", line, " never closes"));
  }
  end_row();
  return rows;
}

// pandas.read_csv's default na_values: a text cell holding one of them is NaN to pandas.
bool IsPandasNa(const std::string& v) {
  static const auto* na = new std::set<std::string>{
      "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
      "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"};
  return na->count(v) > 0;
}

absl::StatusOr<TextColumn> ReadCsv(const std::string& text, const std::string& flag,
                                   const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<std::vector<std::string>> rows, CsvRecords(text, flag, path));
  if (rows.empty()) return FileError(flag, path, "no header row");
  TextColumn out{PickColumn(rows[0]), {}};
  size_t column = 0;
  while (rows[0][column] != out.column) ++column;
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != rows[0].size()) {
      return FileError(flag, path, absl::StrCat("row ", r, " has ", rows[r].size(),
                                                " fields but the header has ", rows[0].size()));
    }
    if (IsPandasNa(rows[r][column])) {
      return FileError(flag, path,
                       absl::StrCat("row ", r, " has \"", rows[r][column], "\" in \"",
                                    out.column,
                                    "\" (pandas reads it as NaN, which cannot be tokenized)"));
    }
    out.texts.push_back(rows[r][column]);
  }
  return out;
}

}  // namespace

absl::StatusOr<TextColumn> ReadTextColumn(const std::string& path, const std::string& flag,
                                          bool keep_linebreaks) {
  ASSIGN_OR_RETURN(const std::string raw, base::ReadFile(path), flag);
  return ParseTextColumn(raw, path, flag, keep_linebreaks);
}

absl::StatusOr<TextColumn> ParseTextColumn(const std::string& raw, const std::string& path,
                                           const std::string& flag, bool keep_linebreaks) {
  if (absl::Status utf8 = text::DecodeUtf8(raw).status(); !utf8.ok()) {
    return FileError(flag, path, absl::StrCat("is not UTF-8 text: ", utf8.message()));
  }
  const std::string ext = Extension(path);
  absl::StatusOr<TextColumn> column;
  if (ext == "txt") {
    column = ReadLines(UniversalNewlines(raw), keep_linebreaks);
  } else if (ext == "json" || ext == "jsonl") {
    column = ReadJson(UniversalNewlines(raw), flag, path);
  } else if (ext == "csv") {
    column = ReadCsv(raw, flag, path);  // line breaks inside quoted fields stay as written
  } else {
    return FileError(flag, path, "must end in .txt, .json, .jsonl or .csv");
  }
  if (column.ok() && column->texts.empty()) return FileError(flag, path, "holds no examples");
  return column;
}

std::pair<std::vector<std::string>, std::vector<std::string>> SplitPercent(
    const std::vector<std::string>& texts, int64_t percent) {
  const double exact = static_cast<double>(percent) * static_cast<double>(texts.size()) / 100.0;
  const size_t boundary = static_cast<size_t>(std::nearbyint(exact));  // ties to even
  return {std::vector<std::string>(texts.begin(), texts.begin() + boundary),
          std::vector<std::string>(texts.begin() + boundary, texts.end())};
}

}  // namespace loom::examples::clm
