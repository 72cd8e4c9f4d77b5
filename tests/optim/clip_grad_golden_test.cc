// ClipGradNorm against torch.nn.utils.clip_grad_norm_ of Python torch 1.13
// (testdata/clip_grad.json from make_golden.py): clipping, the factor-1 case, a max_norm equal
// to the norm, parameters without gradients, none with gradients, mixed bf16/fp32 and zeros.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "optim/clip_grad.h"
#include "tests/optim/golden_util.h"

namespace loom::optim::testing {
namespace {

using json = nlohmann::json;

at::ScalarType DtypeOf(const std::string& name) {
  return name == "bfloat16" ? at::kBFloat16 : at::kFloat;
}

TEST(ClipGradGoldenTest, MatchesPythonClipGradNorm) {
  ASSERT_OK_AND_ASSIGN(const json golden, LoadGolden("clip_grad.json"));
  ASSERT_GE(golden["cases"].size(), 8u);
  for (const json& c : golden["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    std::vector<at::Tensor> params;
    for (const json& p : c["params"]) {
      const auto shape = p["shape"].get<std::vector<int64_t>>();
      const at::ScalarType dtype = DtypeOf(p["dtype"]);
      at::Tensor param = at::zeros(shape, at::TensorOptions().dtype(dtype)).set_requires_grad(true);
      if (!p["grad"].is_null()) param.mutable_grad() = TensorFromJson(p["grad"], shape, dtype);
      params.push_back(param);
    }
    const double total = ClipGradNorm(params, c["max_norm"].get<double>());
    EXPECT_TRUE(AllClose({total}, {c["total_norm"].get<double>()}, name + " total norm"));
    for (size_t i = 0; i < params.size(); ++i) {
      const json& expected = c["clipped"][i];
      if (expected.is_null()) {
        EXPECT_FALSE(params[i].grad().defined()) << name << " param " << i;
      } else {
        EXPECT_TRUE(AllClose(Flatten(params[i].grad()), expected.get<std::vector<double>>(),
                             absl::StrCat(name, " grad ", i)));
      }
    }
  }
}

}  // namespace
}  // namespace loom::optim::testing
