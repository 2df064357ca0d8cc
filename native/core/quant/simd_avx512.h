// simd_avx512.h: the repacked tiles' row-lane operations (simd_avx2.h's
// "Rows in lanes") on 512-bit vectors: two groups of 8 rows in one vector,
// lanes 0..7 the first group's rows and 8..15 the second's. Each lane gets
// the 256-bit operation's own integer and float steps, so 16 rows give the
// bits that two calls of 8 give; one vpdpbusd then sums 4 bytes of 16 rows
// against a token's broadcast 4 bytes, where the 256-bit tile took two.
// Only dot_avx512.cpp includes it; that file alone is built with AVX-512.
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace md::simd {

struct Avx512TwoGroups {
  static constexpr int kGroups = 2;
  static constexpr bool kExactU8Dot = true;        // vpdpbusd
  static constexpr bool kLaneDot = false;          // a token's 4 bytes broadcast (simd_avx2.h)
  static constexpr bool kSignedRepack = false;     // vpdpbusd's weights are unsigned (simd_avx2.h)
  static constexpr bool kBitInsert = false;        // (simd_avx2.h)
  static constexpr bool kActivationQuads = false;  // (simd_avx2.h)
  using V = __m512i;
  using I = __m512i;  // 16 x int32
  using F = __m512;   // 16 x float

  // The two groups' 32 bytes at p and p + groupBytes.
  static V chunk(const uint8_t* p, size_t groupBytes) {
    const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i second = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + groupBytes));
    return _mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1);
  }
  static V splat(uint8_t x) { return _mm512_set1_epi8(char(x)); }
  static V andV(V a, V c) { return _mm512_and_si512(a, c); }
  static V orV(V a, V c) { return _mm512_or_si512(a, c); }
  static V lowNibbles(V x) { return _mm512_and_si512(x, _mm512_set1_epi8(0x0F)); }
  static V highNibbles(V x) { return _mm512_and_si512(_mm512_srli_epi16(x, 4), _mm512_set1_epi8(0x0F)); }
  template <int N>
  static V shiftRight(V x) {
    return _mm512_and_si512(_mm512_srli_epi16(x, N), _mm512_set1_epi8(char(0xFF >> N)));
  }
  template <int N>
  static V shiftLeft(V x) {
    return _mm512_and_si512(_mm512_slli_epi16(x, N), _mm512_set1_epi8(char((0xFF << N) & 0xFF)));
  }
  // 0xFF where every bit of m is set in the byte, else 0.
  static V testMask(V x, uint8_t m) {
    const __m512i mask = _mm512_set1_epi8(char(m));
    return _mm512_movm_epi8(_mm512_cmpeq_epi8_mask(_mm512_and_si512(x, mask), mask));
  }

  static I izero() { return _mm512_setzero_si512(); }
  static F fzero() { return _mm512_setzero_ps(); }
  static I splat32(int32_t x) { return _mm512_set1_epi32(x); }
  static V repeat4(int32_t x) { return _mm512_set1_epi32(x); }
  // Lane j: acc + the sum of bytes 4j..4j+3 of u (unsigned) times s (signed), exact.
  static I dotU8S8Add(I acc, V u, V s) { return _mm512_dpbusd_epi32(acc, u, s); }
  static F halves(const uint8_t* p, size_t groupBytes) {
    const __m128i first = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i second = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + groupBytes));
    return _mm512_cvtph_ps(_mm256_set_m128i(second, first));
  }
  static F mulF(F a, float m) { return _mm512_mul_ps(a, _mm512_set1_ps(m)); }
  static F fmaddLanes(F acc, I i, F scale) { return _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), scale, acc); }
  static void storeRows(F f, float* out) { _mm512_storeu_ps(out, f); }
  static I bytes(const uint8_t* p, size_t groupBytes) { return _mm512_cvtepu8_epi32(eightAndEight(p, groupBytes)); }
  static I signedBytes(const uint8_t* p, size_t groupBytes) {
    return _mm512_cvtepi8_epi32(eightAndEight(p, groupBytes));
  }
  static I addI(I a, I b) { return _mm512_add_epi32(a, b); }
  static I mulAddI(I acc, I a, I b) { return _mm512_add_epi32(acc, _mm512_mullo_epi32(a, b)); }
  static F toF(I i) { return _mm512_cvtepi32_ps(i); }
  static F mulLanes(F a, F b) { return _mm512_mul_ps(a, b); }
  static F addF(F a, F b) { return _mm512_add_ps(a, b); }
  static F subF(F a, F b) { return _mm512_sub_ps(a, b); }

 private:
  // The 8 bytes at p, then the 8 at p + groupBytes.
  static __m128i eightAndEight(const uint8_t* p, size_t groupBytes) {
    return _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)),
                              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + groupBytes)));
  }
};

}  // namespace md::simd
