// dot_avx_vnni.cpp: the dot kernels on AVX2 with AVX-VNNI (Alder Lake,
// Sapphire Rapids and later): vpdpbusd does the byte products and their sum
// in one instruction, vpdpwssd the scaled sums of the K types. The same
// int32 lanes as the AVX2 kernels, so the same bits. Built with -mavxvnni
// (this file only); offered only when the CPU has it (cpu_features.h).
#include "dot.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__AVXVNNI__)
#include "cpu_features.h"
#include "dot_kernels.h"
#include "simd_avx2.h"

namespace md {
namespace simd {

struct AvxVnni : Avx2 {
  static constexpr const char* kName = "avx-vnni";
  static I dotU8S8(I acc, V u, V s, int16_t scaleLow, int16_t scaleHigh) {
    const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(scaleHigh), _mm_set1_epi16(scaleLow));
    return _mm256_dpwssd_avx_epi32(acc, _mm256_maddubs_epi16(u, s), scales);
  }
  static constexpr bool kExactU8Dot = true;
  static I dotU8S8Add(I acc, V u, V s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
  static I negatedOffset(V s, uint8_t k) {
    return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), splat(k), s));
  }
  static I dotS8S8(V a, V c) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(a, a), _mm256_sign_epi8(c, a));
  }
};

}  // namespace simd

const DotTable* avxVnniDotTable() {
  static const bool supported = cpuHasAvxVnni();
  static const DotTable table = DotKernels<simd::AvxVnni>::table();
  return supported ? &table : nullptr;
}

}  // namespace md
#else
namespace md {
const DotTable* avxVnniDotTable() { return nullptr; }
}  // namespace md
#endif
