#include "trainer/numpy_mean.h"

#include <cstddef>
#include <limits>

namespace loom::trainer {
namespace {

constexpr size_t kBlock = 128;        // numpy's PW_BLOCKSIZE
constexpr size_t kBufferSize = 8192;  // numpy's default ufunc buffer size

// numpy's `FLOAT_pairwise_sum` (loops_utils.h): the order of its float additions.
float PairwiseSum(const float* a, size_t n) {
  if (n < 8) {
    float sum = 0.f;
    for (size_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= kBlock) {
    float r[8];
    for (size_t j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    float sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  size_t half = n / 2;
  half -= half % 8;
  return PairwiseSum(a, half) + PairwiseSum(a + half, n - half);
}

}  // namespace

float NumpyFloat32Mean(absl::Span<const float> values) {
  if (values.empty()) return std::numeric_limits<float>::quiet_NaN();
  float total = 0.f;  // np.add's identity, then one inner loop per buffer
  for (size_t start = 0; start < values.size(); start += kBufferSize) {
    const size_t n = values.size() - start < kBufferSize ? values.size() - start : kBufferSize;
    total += PairwiseSum(values.data() + start, n);
  }
  // np.float32 / the count computes in double, then rounds to float32.
  return static_cast<float>(static_cast<double>(total) / static_cast<double>(values.size()));
}

}  // namespace loom::trainer
