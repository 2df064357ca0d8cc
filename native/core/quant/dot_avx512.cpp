// dot_avx512.cpp: the AVX-VNNI kernels built for AVX-512 (VL, BW, VNNI):
// the row-by-row tiles keep 256-bit vectors, but 32 of them, so the 4 x 4
// and 8 x 1 tiles keep every accumulator in a register; the repacked tiles
// take two groups of 8 rows in each 512-bit vector (simd_avx512.h); and
// VNNI's vpdpbusd on any AVX-512 VNNI CPU (Ice Lake, Cascade Lake, Zen
// 4...) whether or not it has AVX-VNNI.
// Built with the AVX-512 flags (this file only); offered only when the CPU
// has them.
// GCC 12 takes the 512-bit intrinsics' own undefined pass-through operands
// for uninitialized variables (their masks are all ones): a false warning.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "dot.h"

#if defined(__x86_64__) && defined(__AVX512VL__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include "cpu_features.h"
#include "dot_kernels.h"
#include "simd_avx2.h"
#include "simd_avx512.h"

namespace md {
namespace simd {

struct Avx512 : Avx2 {
  static constexpr const char* kName = "avx512";
  using Wide = Avx512TwoGroups;  // the repacked tiles take 16 rows a vector
  static I dotU8S8(I acc, V u, V s, int16_t scaleLow, int16_t scaleHigh) {
    const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(scaleHigh), _mm_set1_epi16(scaleLow));
    return _mm256_dpwssd_epi32(acc, _mm256_maddubs_epi16(u, s), scales);
  }
  static constexpr bool kExactU8Dot = true;
  static I dotU8S8Add(I acc, V u, V s) { return _mm256_dpbusd_epi32(acc, u, s); }
  static I negatedOffset(V s, uint8_t k) {
    return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32(_mm256_setzero_si256(), splat(k), s));
  }
  static I dotS8S8(V a, V c) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(a, a), _mm256_sign_epi8(c, a));
  }
};

}  // namespace simd

const DotTable* avx512DotTable() {
  static const bool supported = cpuHasAvx512Vnni();
  static const DotTable table = DotKernels<simd::Avx512>::table();
  return supported ? &table : nullptr;
}

}  // namespace md
#else
namespace md {
const DotTable* avx512DotTable() { return nullptr; }
}  // namespace md
#endif
