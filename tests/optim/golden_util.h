// Helpers for the tests that compare //optim with the golden files written by
// make_golden.py (Python torch 1.13): locating and parsing the files, building tensors from
// their flat value lists, and comparing with a relative tolerance.
//
// Example:
//   ASSERT_OK_AND_ASSIGN(const nlohmann::json golden, LoadGolden("schedulers.json"));
//   at::Tensor t = TensorFromJson(golden["x"], {2, 3}, at::kFloat);
//   EXPECT_TRUE(AllClose(Flatten(t), golden["y"].get<std::vector<double>>(), "after step 1"));
#ifndef LOOM_TESTS_OPTIM_GOLDEN_UTIL_H_
#define LOOM_TESTS_OPTIM_GOLDEN_UTIL_H_

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace loom::optim::testing {

// ≤1e-6 relative: the parity bound of the project rules (values that are exactly equal,
// zeros included, always pass).
inline constexpr double kRelTol = 1e-6;

// tests/optim/testdata/<name> (testdata/torch2.11/<name> when built against LibTorch 2.11)
// from the test's runfiles, parsed.
absl::StatusOr<nlohmann::json> LoadGolden(const std::string& name);

// A tensor of `shape` and `dtype` holding the numbers of `flat` (row-major).
at::Tensor TensorFromJson(const nlohmann::json& flat, const std::vector<int64_t>& shape,
                          at::ScalarType dtype);

std::vector<double> Flatten(const at::Tensor& t);

// Every |actual[i] - expected[i]| <= rel_tol * |expected[i]| (and equal sizes); the failure
// message names `what`, the first bad index and the largest relative error.
::testing::AssertionResult AllClose(const std::vector<double>& actual,
                                    const std::vector<double>& expected, const std::string& what,
                                    double rel_tol = kRelTol);

}  // namespace loom::optim::testing

#endif  // LOOM_TESTS_OPTIM_GOLDEN_UTIL_H_
