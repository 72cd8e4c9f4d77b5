// libFuzzer target for hyperparameter search spaces (hpsearch/distribution.h): run_glue's
// --hp_space (inline JSON or a file, optuna's abbreviated form) through ParseSearchSpace, and
// optuna's serialized distributions (what a study journal holds) through DistributionFromJson.
// What parses must write back (SearchSpaceToJson, DistributionToJson) to text that parses to
// the same space, and every bound must be a value of its distribution.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "hpsearch/distribution.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom::hpsearch;  // NOLINT
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<SearchSpace> space = ParseSearchSpace(text);
  if (space.ok()) {
    fuzz::Check(!space->params.empty(), "a parsed space has parameters");
    const std::string written = SearchSpaceToJson(*space).dump();
    absl::StatusOr<SearchSpace> again = ParseSearchSpace(written);
    fuzz::Check(again.ok(), "a written space parses");
    fuzz::Check(SearchSpaceToJson(*again).dump() == written, "the space round-trips");
    for (const auto& [name, d] : space->params) {
      absl::StatusOr<Distribution> back = DistributionFromJson(DistributionToJson(d));
      fuzz::Check(back.ok() && SameDistribution(*back, d), "optuna's JSON round-trips");
      if (const auto* f = std::get_if<FloatDistribution>(&d)) {
        fuzz::Check(Contains(d, f->low) && Contains(d, f->high), "float bounds are values");
      } else if (const auto* i = std::get_if<IntDistribution>(&d)) {
        fuzz::Check(Contains(d, static_cast<double>(i->low)), "int low is a value");
        fuzz::Check(Contains(d, static_cast<double>(i->high)), "int high is a value");
      } else {
        const auto& c = std::get<CategoricalDistribution>(d);
        for (size_t k = 0; k < c.choices.size(); ++k) {
          absl::StatusOr<double> index = ToInternal(d, c.choices[k]);
          fuzz::Check(index.ok(), "every choice has an index");
        }
      }
    }
  } else {
    fuzz::Check(!space.status().message().empty(), "errors say what is wrong");
  }
  absl::StatusOr<Distribution> d = DistributionFromJson(text);
  if (d.ok()) {
    absl::StatusOr<Distribution> back = DistributionFromJson(DistributionToJson(*d));
    fuzz::Check(back.ok() && SameDistribution(*back, *d), "a distribution round-trips");
  }
  return 0;
}
