#include "tests/optim/golden_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace loom::optim::testing {

absl::StatusOr<nlohmann::json> LoadGolden(const std::string& name) {
  std::string path = LOOM_OPTIM_GOLDEN_DIR + name;
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) {
    path = absl::StrCat(srcdir, "/", workspace, "/", path);
  }
  ASSIGN_OR_RETURN(const std::string text, base::ReadFile(path));
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::DataLossError(absl::StrCat(path, " is not JSON; rerun make_golden.py"));
  }
  return parsed;
}

at::Tensor TensorFromJson(const nlohmann::json& flat, const std::vector<int64_t>& shape,
                          at::ScalarType dtype) {
  const std::vector<double> values = flat.get<std::vector<double>>();
  return at::tensor(values, at::kDouble).reshape(shape).to(dtype).contiguous();
}

std::vector<double> Flatten(const at::Tensor& t) {
  const at::Tensor d = t.detach().to(at::kDouble).contiguous().reshape({-1});
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

::testing::AssertionResult AllClose(const std::vector<double>& actual,
                                    const std::vector<double>& expected, const std::string& what,
                                    double rel_tol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << what << ": " << actual.size() << " values, expected " << expected.size();
  }
  double worst = 0.0;
  int first_bad = -1;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] == expected[i]) continue;
    const double err = std::abs(actual[i] - expected[i]);
    const double rel = expected[i] == 0.0 ? INFINITY : err / std::abs(expected[i]);
    worst = std::max(worst, rel);
    if (!(err <= rel_tol * std::abs(expected[i])) && first_bad < 0) first_bad = static_cast<int>(i);
  }
  if (first_bad < 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": index " << first_bad << " is " << actual[first_bad] << ", expected "
         << expected[first_bad] << " (largest relative error " << worst << ", allowed " << rel_tol
         << ")";
}

}  // namespace loom::optim::testing
