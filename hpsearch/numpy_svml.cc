#include "hpsearch/numpy_svml.h"

#include <cmath>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LOOM_HPSEARCH_HAVE_SVML_PATH 1
#include <immintrin.h>
#endif

namespace loom::hpsearch::numpy {
namespace {

#ifdef LOOM_HPSEARCH_HAVE_SVML_PATH

#define LOOM_AVX512_SKX __attribute__((target("avx512f,avx512cd,avx512bw,avx512dq,avx512vl")))

constexpr int kRn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
constexpr int kRz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;

// __svml_dexp_data_internal_avx512 (bit patterns): 2^(j/16) for j = 0..15, then the
// broadcast constants at their byte offsets in the table.
constexpr uint64_t kExpTable[16] = {
    0x3ff0000000000000, 0x3ff0b5586cf9890f, 0x3ff172b83c7d517b, 0x3ff2387a6e756238,
    0x3ff306fe0a31b715, 0x3ff3dea64c123422, 0x3ff4bfdad5362a27, 0x3ff5ab07dd485429,
    0x3ff6a09e667f3bcd, 0x3ff7a11473eb0187, 0x3ff8ace5422aa0db, 0x3ff9c49182a3f090,
    0x3ffae89f995ad3ad, 0x3ffc199bdd85529c, 0x3ffd5818dcfba487, 0x3ffea4afa2a490da};
constexpr uint64_t kExpLog2E = 0x3ff71547652b82fe;        // +256
constexpr uint64_t kExpShifter = 0x42f8000000003ff0;      // +320
constexpr uint64_t kExpLn2High = 0x3fe62e42fefa39ef;      // +384
constexpr uint64_t kExpLn2Low = 0x3c7abc9e3b39803f;       // +448
constexpr uint64_t kExpReducedMask = 0xbfffffffffffffff;  // +512
constexpr uint64_t kExpC6 = 0x3f572eb5ef0d213d;           // +576
constexpr uint64_t kExpC5 = 0x3f81106603d97c00;           // +640
constexpr uint64_t kExpC4 = 0x3fa555564bb4f5f0;           // +704
constexpr uint64_t kExpC3 = 0x3fc5555554b508a2;           // +768
constexpr uint64_t kExpC2 = 0x3fe0000000002622;           // +832
constexpr uint64_t kExpAbsMask = 0x7fffffffffffffff;      // +960
constexpr uint64_t kExpThreshold = 0x40861da04cbafe44;    // +1024

// __svml_dlog_data_internal_avx512: -log(Rcp) for the 16 table reciprocals, then constants.
constexpr uint64_t kLogTable[16] = {
    0x0000000000000000, 0xbfaf0a30c01162a6, 0xbfbe27076e2af2e6, 0xbfc5ff3070a793d4,
    0xbfcc8ff7c79a9a22, 0xbfd1675cababa60e, 0xbfd4618bc21c5ec2, 0xbfd739d7f6bbd007,
    0x3fd269621134db92, 0x3fcf991c6cb3b379, 0x3fca93ed3c8ad9e3, 0x3fc5bf406b543db2,
    0x3fc1178e8227e47c, 0x3fb9335e5d594989, 0x3fb08598b59e3a07, 0x3fa0415d89e74444};
constexpr uint64_t kLogOne = 0x3ff0000000000000;            // +128
constexpr uint64_t kLogThreeQuarters = 0x3fe8000000000000;  // +192
constexpr uint64_t kLogC256 = 0x3fbc81cd309d7c70;
constexpr uint64_t kLogC320 = 0xbfc007357e93af62;
constexpr uint64_t kLogC384 = 0x3fc249229cee81ef;
constexpr uint64_t kLogC448 = 0xbfc55553fb28db06;
constexpr uint64_t kLogC512 = 0x3fc9999999cc9f5c;
constexpr uint64_t kLogC576 = 0xbfd00000000c05bd;
constexpr uint64_t kLogC640 = 0x3fd5555555555466;
constexpr uint64_t kLogC704 = 0xbfdfffffffffffc6;
constexpr uint64_t kLogLn2 = 0x3fe62e42fefa39ef;  // +768

// __svml_dexpm1_data_internal_avx512: the low parts of 2^(j/16) - rounding (Tlr), then the
// constants (its 2^(j/16) table is kExpTable).
constexpr uint64_t kExpm1LowTable[16] = {
    0x0000000000000000, 0x3c979aa65d837b6d, 0xbc801b15eaa59348, 0x3c968efde3a8a894,
    0x3c834d754db0abb6, 0x3c859f48a72a4c6d, 0x3c7690cebb7aafb0, 0x3c9063e1e21c5409,
    0xbc93b3efbf5e2228, 0xbc7b32dcb94da51d, 0x3c8db72fc1f0eab4, 0x3c71affc2b91ce27,
    0x3c8c1a7792cb3387, 0x3c736eae30af0cb3, 0x3c74a385a63d07a7, 0xbc8ff7128fd391f0};
constexpr uint64_t kExpm1Threshold = 0x40861da04cbafe44;  // +384
constexpr uint64_t kSignMask = 0x8000000000000000;        // -0.0
constexpr uint64_t kExpm1MinZ = 0xc060000000000000;       // +640: -128.0
constexpr uint64_t kExpm1C832 = 0x3f2a020410303d8a;
constexpr uint64_t kExpm1C896 = 0x3f56c1c38e164a2f;
constexpr uint64_t kExpm1C960 = 0x3f81111110865214;
constexpr uint64_t kExpm1C1024 = 0x3fa5555554ad3d06;
constexpr uint64_t kExpm1C1088 = 0x3fc5555555555656;
constexpr uint64_t kExpm1C1152 = 0x3fe00000000000a2;

LOOM_AVX512_SKX __m512d Broadcast(uint64_t bits) {
  return _mm512_castsi512_pd(_mm512_set1_epi64(static_cast<long long>(bits)));
}

LOOM_AVX512_SKX __m512d Load8(const uint64_t* bits) {
  return _mm512_castsi512_pd(_mm512_loadu_si512(bits));
}

// __svml_exp8's main path on lane 0.
LOOM_AVX512_SKX double SvmlExp(double x_in) {
  const __m512d x = _mm512_set1_pd(x_in);
  const __m512d shifter = Broadcast(kExpShifter);
  const __m512d z = _mm512_fmadd_round_pd(x, Broadcast(kExpLog2E), shifter, kRz);
  const __m512d n = _mm512_sub_round_pd(z, shifter, kRn);
  const __m512d abs_x = _mm512_and_pd(x, Broadcast(kExpAbsMask));
  const __m512d th =
      _mm512_permutex2var_pd(Load8(kExpTable), _mm512_castpd_si512(z), Load8(kExpTable + 8));
  __m512d r = _mm512_fnmadd_round_pd(n, Broadcast(kExpLn2High), x, kRn);
  const __mmask8 rare = _mm512_cmp_pd_mask(abs_x, Broadcast(kExpThreshold), _CMP_GE_OQ);
  r = _mm512_fnmadd_round_pd(Broadcast(kExpLn2Low), n, r, kRn);
  r = _mm512_and_pd(r, Broadcast(kExpReducedMask));
  const __m512d r2 = _mm512_mul_round_pd(r, r, kRn);
  __m512d p56 = _mm512_fmadd_round_pd(Broadcast(kExpC6), r, Broadcast(kExpC5), kRn);
  const __m512d p34 = _mm512_fmadd_round_pd(Broadcast(kExpC4), r, Broadcast(kExpC3), kRn);
  const __m512d r3 = _mm512_mul_round_pd(r2, r, kRn);
  const __m512d p12 = _mm512_fmadd_round_pd(r2, Broadcast(kExpC2), r, kRn);
  p56 = _mm512_fmadd_round_pd(r2, p56, p34, kRn);
  p56 = _mm512_fmadd_round_pd(r3, p56, p12, kRn);
  p56 = _mm512_fmadd_round_pd(th, p56, th, kRn);
  const __m512d result = _mm512_scalef_round_pd(p56, n, kRn);
  if (rare & 1) return std::exp(x_in);
  return _mm512_cvtsd_f64(result);
}

// __svml_log8's main path on lane 0.
LOOM_AVX512_SKX double SvmlLog(double x_in) {
  const __m512d x = _mm512_set1_pd(x_in);
  const __m512d one = Broadcast(kLogOne);
  const __m512d mant =
      _mm512_getmant_round_pd(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_nan, _MM_FROUND_NO_EXC);
  __m512d expon = _mm512_getexp_round_pd(x, _MM_FROUND_NO_EXC);
  const __m512d rcp_raw = _mm512_rcp14_pd(mant);
  const __mmask8 rare = _mm512_fpclass_pd_mask(x, 94);  // +-0, +-inf, negative
  const __m512d rcp = _mm512_roundscale_round_pd(rcp_raw, 88, _MM_FROUND_NO_EXC);
  const __m512d r = _mm512_fmsub_round_pd(rcp, mant, one, kRn);
  const __mmask8 small_rcp = _mm512_cmp_pd_mask(rcp, Broadcast(kLogThreeQuarters), _CMP_LT_OQ);
  const __m512d a14 = _mm512_fmadd_round_pd(Broadcast(kLogC384), r, Broadcast(kLogC448), kRn);
  __m512d a1 = _mm512_fmadd_round_pd(Broadcast(kLogC256), r, Broadcast(kLogC320), kRn);
  const __m512d a15 = _mm512_fmadd_round_pd(Broadcast(kLogC640), r, Broadcast(kLogC704), kRn);
  const __m512d r2 = _mm512_mul_round_pd(r, r, kRn);
  __m512d a11 = _mm512_fmadd_round_pd(Broadcast(kLogC512), r, Broadcast(kLogC576), kRn);
  const __m512i index = _mm512_srli_epi64(_mm512_castpd_si512(rcp), 48);
  expon = _mm512_mask_add_round_pd(expon, small_rcp, expon, one, kRn);
  const __m512d r4 = _mm512_mul_round_pd(r2, r2, kRn);
  a1 = _mm512_fmadd_round_pd(r2, a1, a14, kRn);
  a11 = _mm512_fmadd_round_pd(r2, a11, a15, kRn);
  const __m512d table = _mm512_permutex2var_pd(Load8(kLogTable), index, Load8(kLogTable + 8));
  a1 = _mm512_fmadd_round_pd(r4, a1, a11, kRn);
  a1 = _mm512_fmadd_round_pd(r2, a1, r, kRn);
  const __m512d sum = _mm512_add_round_pd(table, a1, kRn);
  const __m512d result = _mm512_fmadd_round_pd(Broadcast(kLogLn2), expon, sum, kRn);
  if (rare & 1) return std::log(x_in);
  return _mm512_cvtsd_f64(result);
}

// __svml_log1p8's main path on lane 0 (log1p's table and polynomial are log's, at other
// offsets).
LOOM_AVX512_SKX double SvmlLog1p(double x_in) {
  const __m512d x = _mm512_set1_pd(x_in);
  const __m512d one = Broadcast(kLogOne);
  const __m512d sign_mask = Broadcast(kSignMask);
  const __m512d one_plus_x = _mm512_add_round_pd(one, x, kRn);
  const __m512d sign = _mm512_and_pd(x, sign_mask);
  const __m512d high = _mm512_max_round_pd(one, x, _MM_FROUND_NO_EXC);
  const __m512d low = _mm512_min_round_pd(one, x, _MM_FROUND_NO_EXC);
  __m512d mant =
      _mm512_getmant_round_pd(one_plus_x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_nan, _MM_FROUND_NO_EXC);
  __m512d expon = _mm512_getexp_round_pd(one_plus_x, _MM_FROUND_NO_EXC);
  const __m512d rounding = _mm512_sub_round_pd(one_plus_x, high, kRn);
  const __m512d rcp_raw = _mm512_rcp14_pd(mant);
  const __m512d x_low = _mm512_sub_round_pd(low, rounding, kRn);
  const __m512d neg_expon = _mm512_xor_pd(expon, sign_mask);
  const __m512d rcp = _mm512_roundscale_round_pd(rcp_raw, 88, _MM_FROUND_NO_EXC);
  const __m512d x_low_scaled = _mm512_scalef_round_pd(x_low, neg_expon, kRn);
  __m512d r = _mm512_fmsub_round_pd(rcp, mant, one, kRn);
  const __m512i index = _mm512_srli_epi64(_mm512_castpd_si512(rcp), 48);
  r = _mm512_fmadd_round_pd(x_low_scaled, rcp, r, kRn);
  const __mmask8 small_rcp = _mm512_cmp_pd_mask(rcp, Broadcast(kLogThreeQuarters), _CMP_LT_OQ);
  const __mmask8 rare = _mm512_cmp_pd_mask(r, r, _CMP_NEQ_UQ);
  __m512d a1 = _mm512_fmadd_round_pd(Broadcast(kLogC256), r, Broadcast(kLogC320), kRn);
  const __m512d a14 = _mm512_fmadd_round_pd(Broadcast(kLogC384), r, Broadcast(kLogC448), kRn);
  const __m512d table = _mm512_permutex2var_pd(Load8(kLogTable), index, Load8(kLogTable + 8));
  expon = _mm512_mask_add_round_pd(expon, small_rcp, expon, one, kRn);
  const __m512d r2 = _mm512_mul_round_pd(r, r, kRn);
  __m512d a10 = _mm512_fmadd_round_pd(Broadcast(kLogC512), r, Broadcast(kLogC576), kRn);
  const __m512d r4 = _mm512_mul_round_pd(r2, r2, kRn);
  const __m512d a12 = _mm512_fmadd_round_pd(Broadcast(kLogC640), r, Broadcast(kLogC704), kRn);
  a1 = _mm512_fmadd_round_pd(r2, a1, a14, kRn);
  a10 = _mm512_fmadd_round_pd(r2, a10, a12, kRn);
  a1 = _mm512_fmadd_round_pd(r4, a1, a10, kRn);
  a1 = _mm512_fmadd_round_pd(r2, a1, r, kRn);
  const __m512d sum = _mm512_add_round_pd(table, a1, kRn);
  expon = _mm512_fmadd_round_pd(Broadcast(kLogLn2), expon, sum, kRn);
  const __m512d result = _mm512_or_pd(expon, sign);
  if (rare & 1) return std::log1p(x_in);
  return _mm512_cvtsd_f64(result);
}

// __svml_expm18's main path on lane 0.
LOOM_AVX512_SKX double SvmlExpm1(double x_in) {
  const __m512d x = _mm512_set1_pd(x_in);
  const __m512d shifter = Broadcast(kExpShifter);
  const __m512d z = _mm512_fmadd_round_pd(x, Broadcast(kExpLog2E), shifter, kRn);
  const __mmask8 rare = _mm512_cmp_pd_mask(x, Broadcast(kExpm1Threshold), _CMP_NLT_UQ);
  const __m512d z0 = _mm512_sub_round_pd(z, shifter, kRn);
  const __m512i zi = _mm512_castpd_si512(z);
  const __m512d th = _mm512_permutex2var_pd(Load8(kExpTable), zi, Load8(kExpTable + 8));
  const __m512d tl = _mm512_permutex2var_pd(Load8(kExpm1LowTable), zi, Load8(kExpm1LowTable + 8));
  const __m512d sign = _mm512_and_pd(x, Broadcast(kSignMask));
  __m512d r = _mm512_fnmadd_round_pd(z0, Broadcast(kExpLn2High), x, kRn);
  const __m512d z0_clamped = _mm512_max_round_pd(z0, Broadcast(kExpm1MinZ), _MM_FROUND_NO_EXC);
  r = _mm512_fnmadd_round_pd(Broadcast(kExpLn2Low), z0, r, kRn);
  r = _mm512_and_pd(r, Broadcast(kExpReducedMask));
  const __m512d th_scaled = _mm512_scalef_round_pd(th, z0_clamped, kRn);
  __m512d p15 = _mm512_fmadd_round_pd(Broadcast(kExpm1C960), r, Broadcast(kExpm1C1024), kRn);
  __m512d p11 = _mm512_fmadd_round_pd(Broadcast(kExpm1C832), r, Broadcast(kExpm1C896), kRn);
  const __m512d r2 = _mm512_mul_round_pd(r, r, kRn);
  const __m512d p12 = _mm512_fmadd_round_pd(Broadcast(kExpm1C1088), r, Broadcast(kExpm1C1152), kRn);
  p11 = _mm512_fmadd_round_pd(r2, p11, p15, kRn);
  p11 = _mm512_fmadd_round_pd(r2, p11, p12, kRn);
  p11 = _mm512_fmadd_round_pd(r2, p11, tl, kRn);
  const __m512d poly = _mm512_add_round_pd(p11, r, kRn);
  const __m512d th_minus_one = _mm512_sub_round_pd(th_scaled, Broadcast(kLogOne), kRn);
  const __m512d result =
      _mm512_or_pd(_mm512_fmadd_round_pd(poly, th_scaled, th_minus_one, kRn), sign);
  if (rare & 1) return std::expm1(x_in);
  return _mm512_cvtsd_f64(result);
}

// numpy's AVX512_SKX dispatch condition.
bool CpuHasAvx512Skx() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
}

#else

bool CpuHasAvx512Skx() { return false; }
double SvmlExp(double x) { return std::exp(x); }
double SvmlLog(double x) { return std::log(x); }
double SvmlLog1p(double x) { return std::log1p(x); }
double SvmlExpm1(double x) { return std::expm1(x); }

#endif  // LOOM_HPSEARCH_HAVE_SVML_PATH

}  // namespace

bool UsesSvml() {
  static const bool uses = CpuHasAvx512Skx();
  return uses;
}

double Exp(double x) { return UsesSvml() ? SvmlExp(x) : std::exp(x); }

double Log(double x) { return UsesSvml() ? SvmlLog(x) : std::log(x); }

double Log1p(double x) { return UsesSvml() ? SvmlLog1p(x) : std::log1p(x); }

double Expm1(double x) { return UsesSvml() ? SvmlExpm1(x) : std::expm1(x); }

}  // namespace loom::hpsearch::numpy
