#include "glue/delimited.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace loom::glue {

namespace {

// One pass over the text: characters accumulate into the current field and row; newlines,
// delimiters and quoted fields end or fill them.
class Parser {
 public:
  Parser(absl::string_view text, const DelimitedOptions& options, absl::string_view file_name)
      : text_(text), options_(options), file_name_(file_name) {
    row_.line = 1;
  }

  absl::StatusOr<std::vector<DelimitedRow>> Run() {
    while (i_ < text_.size()) {
      const char c = text_[i_];
      if (!row_has_content_) row_.line = line_;
      if (TakeNewline()) {
        EndRow();
      } else if (c == options_.delimiter) {
        row_has_content_ = true;
        EndField();
        ++i_;
      } else if (AtOpeningQuote()) {
        RETURN_IF_ERROR(TakeQuoted());
      } else {
        row_has_content_ = true;
        field_.push_back(c);
        ++i_;
      }
    }
    EndRow();
    return std::move(rows_);
  }

 private:
  void EndField() {
    row_.fields.push_back(std::move(field_));
    field_.clear();
  }
  void EndRow() {
    if (row_has_content_) {
      EndField();
      rows_.push_back(std::move(row_));
    }
    row_ = DelimitedRow();
    field_.clear();
    row_has_content_ = false;
  }
  // Consumes a newline at the cursor ("\r\n", "\r" or "\n"); false when there is none.
  bool TakeNewline() {
    if (text_[i_] == '\n') {
      ++i_;
    } else if (text_[i_] == '\r') {
      ++i_;
      if (i_ < text_.size() && text_[i_] == '\n') ++i_;
    } else {
      return false;
    }
    ++line_;
    return true;
  }
  // A '"' that opens a field: quoting is on and it starts the field.
  bool AtOpeningQuote() const {
    if (!options_.quoting || text_[i_] != '"' || !field_.empty()) return false;
    if (i_ == 0) return true;
    const char before = text_[i_ - 1];
    return before == options_.delimiter || before == '\n' || before == '\r';
  }
  // A quoted field from its opening quote through its closing one ("" is a literal quote).
  absl::Status TakeQuoted() {
    row_has_content_ = true;
    const int quote_line = line_;
    const size_t n = text_.size();
    ++i_;
    while (i_ < n) {
      if (text_[i_] == '"') {
        if (i_ + 1 < n && text_[i_ + 1] == '"') {
          field_.push_back('"');
          i_ += 2;
          continue;
        }
        ++i_;
        return absl::OkStatus();
      }
      if (text_[i_] == '\n' || (text_[i_] == '\r' && !(i_ + 1 < n && text_[i_ + 1] == '\n'))) {
        ++line_;
      }
      field_.push_back(text_[i_]);
      ++i_;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(file_name_, ":", quote_line,
                     ": unterminated quoted field: a field opened with '\"' has no closing "
                     "'\"' before the end of the file (write a literal quote as '\"\"')"));
  }

  const absl::string_view text_;
  const DelimitedOptions& options_;
  const absl::string_view file_name_;
  std::vector<DelimitedRow> rows_;
  DelimitedRow row_;
  std::string field_;
  bool row_has_content_ = false;  // any character (or delimiter) seen since the row started
  int line_ = 1;
  size_t i_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<DelimitedRow>> ParseDelimited(absl::string_view text,
                                                         const DelimitedOptions& options,
                                                         absl::string_view file_name) {
  if (absl::string_view(text).substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return Parser(text, options, file_name).Run();
}

}  // namespace loom::glue
