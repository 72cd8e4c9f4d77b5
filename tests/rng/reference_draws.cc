#include "tests/rng/reference_draws.h"

#include <torch/types.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace loom::rng::testing {
namespace {

std::vector<double> ToDoubles(const torch::Tensor& t) {
  const torch::Tensor d = t.to(torch::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// Keep in step with RECIPE in reference_draws.py.
torch::Tensor Draw(absl::string_view name) {
  if (name == "rand5") return torch::rand({5});
  if (name == "randn5") return torch::randn({5});    // scalar Box-Muller path (caches a sample)
  if (name == "randn20") return torch::randn({20});  // vectorised path (>= 16 elements)
  if (name == "randint6") return torch::randint(0, 1000, {6}, torch::kLong);
  if (name == "randperm10") return torch::randperm(10);
  if (name == "dropout16") return torch::dropout(torch::ones({16}), 0.5, /*train=*/true);
  if (name == "bernoulli8") return torch::bernoulli(torch::full({8}, 0.3));
  return torch::Tensor();
}

}  // namespace

std::vector<std::string> ReferenceDrawNames() {
  return {"rand5", "randn5", "randn20", "randint6", "randperm10", "dropout16", "bernoulli8"};
}

absl::StatusOr<std::vector<double>> DrawReference(absl::string_view name) {
  torch::Tensor t = Draw(name);
  if (!t.defined()) return absl::InvalidArgumentError(absl::StrCat("unknown draw '", name, "'"));
  return ToDoubles(t);
}

DrawList DrawAllReference() {
  DrawList out;
  for (const std::string& name : ReferenceDrawNames())
    out.emplace_back(name, ToDoubles(Draw(name)));
  return out;
}

std::string FormatDraws(const DrawList& draws) {
  std::string out;
  for (const auto& [name, values] : draws) {
    absl::StrAppend(&out, name);
    for (double v : values) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), " %.17g", v);
      absl::StrAppend(&out, buf);
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

absl::StatusOr<DrawList> ParseDraws(absl::string_view text) {
  DrawList out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    if (line.front() == '#') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    std::vector<double> values;
    for (size_t i = 1; i < fields.size(); ++i) {
      double v;
      if (!absl::SimpleAtod(fields[i], &v)) {
        return absl::InvalidArgumentError(absl::StrCat("bad number '", fields[i], "' in: ", line));
      }
      values.push_back(v);
    }
    out.emplace_back(std::string(fields[0]), std::move(values));
  }
  return out;
}

std::string CompareDraws(const DrawList& expected, const DrawList& actual) {
  if (expected.size() != actual.size()) {
    return absl::StrCat(expected.size(), " draws expected, got ", actual.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] != actual[i]) {
      return absl::StrCat("draw ", i, " differs: expected ", FormatDraws({expected[i]}), "got ",
                          FormatDraws({actual[i]}));
    }
  }
  return "";
}

}  // namespace loom::rng::testing
