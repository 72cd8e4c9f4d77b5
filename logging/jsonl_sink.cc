#include "logging/jsonl_sink.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace loom::logging {
namespace {

// A JSON string literal for `text`, invalid UTF-8 replaced (nlohmann would throw otherwise).
std::string JsonString(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A JSON number, or Python's NaN / Infinity / -Infinity tokens.
std::string JsonNumber(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return nlohmann::json(value).dump();
}

}  // namespace

absl::StatusOr<std::string> FormatJsonlRecord(int64_t step, const Scalars& scalars,
                                              double wall_time) {
  std::string line = absl::StrCat("{\"step\": ", step, ", \"wall_time\": ", JsonNumber(wall_time));
  std::set<std::string> seen = {"step", "wall_time"};
  for (const auto& [tag, value] : scalars) {
    if (!seen.insert(tag).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric tag '", tag, "' ",
                       tag == "step" || tag == "wall_time" ? "is reserved" : "is repeated",
                       " in one JSONL record"));
    }
    absl::StrAppend(&line, ", ", JsonString(tag), ": ", JsonNumber(value));
  }
  line.push_back('}');
  return line;
}

absl::StatusOr<std::unique_ptr<JsonlSink>> JsonlSink::Create(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<internal::AppendFile> file,
                   internal::AppendFile::OpenForAppend(path));
  return std::unique_ptr<JsonlSink>(new JsonlSink(std::move(file)));
}

absl::Status JsonlSink::WriteScalars(int64_t step, const Scalars& scalars, double wall_time) {
  ASSIGN_OR_RETURN(std::string line, FormatJsonlRecord(step, scalars, wall_time), path());
  line.push_back('\n');
  return file_->Append(line);
}

absl::Status JsonlSink::Flush() { return file_->Flush(); }

}  // namespace loom::logging
