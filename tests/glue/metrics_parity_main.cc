// Reads the cases metrics_reference.py wrote and checks that loom::glue's metrics (plus run_glue's
// combined_score) give the same names in the same order and values equal to 1e-12 relative (an
// absolute 1e-15 for values at rounding-noise size; NaN must match NaN).
//   usage: metrics_parity_main CASES_JSON
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "glue/metrics.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"

namespace {

double FromHex(const std::string& text) {
  if (text == "nan") return std::nan("");
  return std::strtod(text.c_str(), nullptr);
}

bool Close(double got, double want) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  const double diff = std::fabs(got - want);
  return diff <= 1e-12 * std::fmax(std::fabs(got), std::fabs(want)) || diff <= 1e-15;
}

}  // namespace

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CASES_JSON\n", argv[0]);
    return 2;
  }
  absl::StatusOr<std::string> text = loom::base::ReadFile(argv[1]);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
    return 2;
  }
  const nlohmann::json cases = nlohmann::json::parse(*text, nullptr, false);
  if (!cases.is_array() || cases.empty()) {
    std::fprintf(stderr, "%s: expected a non-empty JSON list of cases\n", argv[1]);
    return 2;
  }
  int failures = 0;
  size_t values = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json& c = cases[i];
    const std::string task = c["task"];
    absl::StatusOr<loom::glue::MetricList> got;
    if (c["kind"] == "regression") {
      std::vector<double> p, r;
      for (const auto& v : c["predictions"]) p.push_back(FromHex(v));
      for (const auto& v : c["references"]) r.push_back(FromHex(v));
      got = loom::glue::EvaluateRegression(task, p, r);
    } else {
      const std::vector<int64_t> p = c["predictions"], r = c["references"];
      got = loom::glue::EvaluateClassification(task, p, r);
    }
    const std::string label =
        absl::StrCat("case ", i, " (task '", task, "', ", std::string(c["kind"]),
                     ", n=", c["predictions"].size(), ")");
    if (!got.ok()) {
      std::fprintf(stderr, "FAIL %s: %s\n", label.c_str(), got.status().ToString().c_str());
      ++failures;
      continue;
    }
    loom::glue::AddCombinedScore(*got);
    const nlohmann::json& want = c["expected"];
    if (got->size() != want.size()) {
      std::fprintf(stderr, "FAIL %s: %zu metrics, reference has %zu\n", label.c_str(), got->size(),
                   want.size());
      ++failures;
      continue;
    }
    for (size_t k = 0; k < want.size(); ++k) {
      const std::string name = want[k][0];
      const double expected = FromHex(want[k][1]);
      const auto& [got_name, got_value] = (*got)[k];
      ++values;
      if (got_name != name || !Close(got_value, expected)) {
        std::fprintf(stderr, "FAIL %s: metric %zu is %s=%.17g, reference %s=%.17g\n", label.c_str(),
                     k, got_name.c_str(), got_value, name.c_str(), expected);
        ++failures;
      }
    }
  }
  std::printf("metrics_parity: %zu cases, %zu values compared, %d failures\n", cases.size(), values,
              failures);
  return failures == 0 ? 0 : 1;
}
