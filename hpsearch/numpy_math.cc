#include "hpsearch/numpy_math.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace loom::hpsearch::numpy {
namespace {

constexpr ptrdiff_t kPairwiseBlock = 128;  // numpy's PW_BLOCKSIZE
constexpr ptrdiff_t kSmallQuicksort = 15;  // numpy's SMALL_QUICKSORT

// numpy's DOUBLE_pairwise_sum.
double PairwiseSum(const double* a, ptrdiff_t n) {
  if (n < 8) {
    double res = -0.0;
    for (ptrdiff_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= kPairwiseBlock) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    ptrdiff_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  ptrdiff_t n2 = n / 2;
  n2 -= n2 % 8;
  return PairwiseSum(a, n2) + PairwiseSum(a + n2, n - n2);
}

// numpy's DOUBLE_LT: NaNs sort last.
bool Less(double a, double b) { return a < b || (b != b && a == a); }

// numpy's aheapsort_ over tosort[0, n).
void ArgHeapSort(const double* v, int64_t* tosort, ptrdiff_t n) {
  int64_t* a = tosort - 1;  // 1-based heap indexing
  ptrdiff_t i, j, l;
  int64_t tmp;
  for (l = n >> 1; l > 0; --l) {
    tmp = a[l];
    for (i = l, j = l << 1; j <= n;) {
      if (j < n && Less(v[a[j]], v[a[j + 1]])) j += 1;
      if (!Less(v[tmp], v[a[j]])) break;
      a[i] = a[j];
      i = j;
      j += j;
    }
    a[i] = tmp;
  }
  for (; n > 1;) {
    tmp = a[n];
    a[n] = a[1];
    n -= 1;
    for (i = 1, j = 2; j <= n;) {
      if (j < n && Less(v[a[j]], v[a[j + 1]])) j++;
      if (!Less(v[tmp], v[a[j]])) break;
      a[i] = a[j];
      i = j;
      j += j;
    }
    a[i] = tmp;
  }
}

int MostSignificantBit(size_t n) {
  int depth = 0;
  while (n >>= 1) ++depth;
  return depth;
}

// One quicksort partition of [pl, pr] (numpy's median-of-three scheme); returns the pivot.
int64_t* Partition(const double* v, int64_t* pl, int64_t* pr) {
  int64_t* pm = pl + ((pr - pl) >> 1);
  if (Less(v[*pm], v[*pl])) std::swap(*pm, *pl);
  if (Less(v[*pr], v[*pm])) std::swap(*pr, *pm);
  if (Less(v[*pm], v[*pl])) std::swap(*pm, *pl);
  const double vp = v[*pm];
  int64_t* pi = pl;
  int64_t* pj = pr - 1;
  std::swap(*pm, *pj);
  for (;;) {
    do {
      ++pi;
    } while (Less(v[*pi], vp));
    do {
      --pj;
    } while (Less(vp, v[*pj]));
    if (pi >= pj) break;
    std::swap(*pi, *pj);
  }
  std::swap(*pi, *(pr - 1));
  return pi;
}

void InsertionSort(const double* v, int64_t* pl, int64_t* pr) {
  for (int64_t* pi = pl + 1; pi <= pr; ++pi) {
    const int64_t vi = *pi;
    const double vp = v[vi];
    int64_t* pj = pi;
    int64_t* pk = pi - 1;
    while (pj > pl && Less(vp, v[*pk])) *pj-- = *pk--;
    *pj = vi;
  }
}

}  // namespace

double Sum(const double* x, size_t n) { return 0.0 + PairwiseSum(x, static_cast<ptrdiff_t>(n)); }

// numpy's aquicksort_: introsort with an explicit stack, the larger side pushed.
std::vector<int64_t> ArgSort(const std::vector<double>& values) {
  std::vector<int64_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  if (values.empty()) return order;
  const double* v = values.data();
  std::vector<int64_t*> stack;
  std::vector<int> depths;
  int64_t* pl = order.data();
  int64_t* pr = order.data() + order.size() - 1;
  int cdepth = MostSignificantBit(values.size()) * 2;
  for (;;) {
    if (cdepth < 0) {
      ArgHeapSort(v, pl, pr - pl + 1);
    } else {
      while ((pr - pl) > kSmallQuicksort) {
        int64_t* pi = Partition(v, pl, pr);
        if (pi - pl < pr - pi) {
          stack.push_back(pi + 1);
          stack.push_back(pr);
          pr = pi - 1;
        } else {
          stack.push_back(pl);
          stack.push_back(pi - 1);
          pl = pi + 1;
        }
        depths.push_back(--cdepth);
      }
      InsertionSort(v, pl, pr);
    }
    if (stack.empty()) break;
    pr = stack.back();
    stack.pop_back();
    pl = stack.back();
    stack.pop_back();
    cdepth = depths.back();
    depths.pop_back();
  }
  return order;
}

std::vector<double> Linspace(double start, double stop, int64_t num) {
  std::vector<double> y(num > 0 ? num : 0);
  const int64_t div = num - 1;
  const double delta = stop - start;
  if (div > 0) {
    const double step = delta / static_cast<double>(div);
    for (int64_t i = 0; i < num; ++i) {
      y[i] = step == 0 ? static_cast<double>(i) / static_cast<double>(div) * delta + start
                       : static_cast<double>(i) * step + start;
    }
  } else {
    for (int64_t i = 0; i < num; ++i) y[i] = static_cast<double>(i) * delta + start;
  }
  if (num > 1) y[num - 1] = stop;
  return y;
}

int64_t ArgMax(const std::vector<double>& v) {
  if (v.empty()) return -1;
  int64_t best = 0;
  if (std::isnan(v[0])) return 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<int64_t>(i);
    if (v[i] > v[best]) best = static_cast<int64_t>(i);
  }
  return best;
}

double Max(const double* x, size_t n) {
  if (n == 0) return -std::numeric_limits<double>::infinity();
  double m = x[0];
  for (size_t i = 1; i < n; ++i) {
    m = (m >= x[i] || std::isnan(m)) ? m : x[i];
  }
  return m;
}

double Round(double x) { return std::nearbyint(x); }

double Clip(double x, double low, double high) {
  const double lifted = std::isnan(x) ? x : (x < low ? low : x);
  return std::isnan(lifted) ? lifted : (lifted > high ? high : lifted);
}

}  // namespace loom::hpsearch::numpy
