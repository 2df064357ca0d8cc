// simd_avx2.h: the dot kernels' byte-vector operations (see
// simd_portable.h for what each does) on AVX2 + FMA + F16C. Only
// dot_avx2.cpp includes it; that file alone is built with -mavx2.
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace md::simd {

struct Avx2 {
  static constexpr const char* kName = "avx2";
  using V = __m256i;
  using I = __m256i;  // 8 x int32
  using F = __m256;   // 8 x float

  static float half(uint16_t bits) { return _cvtsh_ss(bits); }
  static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static V splat(uint8_t x) { return _mm256_set1_epi8(char(x)); }
  static V nibbles16(const uint8_t* p) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
  }
  static V lowNibbles(V x) { return _mm256_and_si256(x, _mm256_set1_epi8(0x0F)); }
  static V highNibbles(V x) { return _mm256_and_si256(_mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0F)); }
  static V bitsToMask(uint32_t bits) {
    // Byte i gets byte i / 8 of `bits`, then tests its bit i % 8.
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(bits)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  }
  static V testMask(V x, uint8_t m) {
    const __m256i mask = _mm256_set1_epi8(char(m));
    return _mm256_cmpeq_epi8(_mm256_and_si256(x, mask), mask);
  }
  static V andV(V a, V c) { return _mm256_and_si256(a, c); }
  static V orV(V a, V c) { return _mm256_or_si256(a, c); }
  static V andNot(V a, V c) { return _mm256_andnot_si256(a, c); }
  static V subBytes(V a, V c) { return _mm256_sub_epi8(a, c); }
  template <int N>
  static V shiftRight(V x) {
    return _mm256_and_si256(_mm256_srli_epi16(x, N), _mm256_set1_epi8(char(0xFF >> N)));
  }
  template <int N>
  static V shiftLeft(V x) {
    return _mm256_and_si256(_mm256_slli_epi16(x, N), _mm256_set1_epi8(char((0xFF << N) & 0xFF)));
  }
  static V codebook16(const int8_t* table, V indices) {
    const __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
    return _mm256_shuffle_epi8(t, indices);
  }

  // ---- Rows in lanes (repack.h's groups of 8 rows): lane r of I and F is row r ----
  //
  // A vector holds kGroups groups (lanes 8g..8g + 7 are group g's rows);
  // the tiles read each group's bytes at p, p + groupBytes, ... AVX2's
  // vectors hold one group (DotKernels' RowLanes; a backend's Wide, where
  // it has one, holds two: simd_avx512.h).
  static constexpr bool kRowLanes = true;
  static constexpr int kGroups = 1;
  // Whether dotU8S8Add is exact for any unsigned byte (vpdpbusd): vpmaddubsw saturates.
  static constexpr bool kExactU8Dot = false;
  // Whether the tiles take a token's bytes by lane (NeonRows::dotLane); here broadcast.
  static constexpr bool kLaneDot = false;
  // Whether the tiles take Q4_0's and Q8_0's repacked quants signed
  // (repack.h): vpmaddubsw's and vpdpbusd's weight operand is unsigned.
  static constexpr bool kSignedRepack = false;
  // Whether the lanes insert bits under a mask (NeonRows::nibblesWithFifthBits).
  static constexpr bool kBitInsert = false;
  // Whether Q4_0's and Q8_0's tiles read their activations in quads of
  // tokens (repack.h; NeonRows): here Q8_0 rows, each token's 4 bytes broadcast.
  static constexpr bool kActivationQuads = false;
  static V chunk(const uint8_t* p, size_t) { return load(p); }
  // Bytes stored plus 128 back to signed: the high bit flipped.
  static V toSigned(V x) { return _mm256_xor_si256(x, _mm256_set1_epi8(char(0x80))); }
  static I splat32(int32_t x) { return _mm256_set1_epi32(x); }
  // The 4 bytes of x in every 4 bytes (a token's 4 bytes against each row's).
  static V repeat4(int32_t x) { return _mm256_set1_epi32(x); }
  // 8 float16 a group, as floats.
  static F halves(const uint8_t* p, size_t) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static F mulF(F a, float m) { return _mm256_mul_ps(a, _mm256_set1_ps(m)); }
  // acc + float(i) * scale, lane by lane.
  static F fmaddLanes(F acc, I i, F scale) { return _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), scale, acc); }
  // The lanes to out[0..8 kGroups).
  static void storeRows(F f, float* out) { _mm256_storeu_ps(out, f); }
  // 8 unsigned bytes a group, one per lane.
  static I bytes(const uint8_t* p, size_t) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  // 8 signed bytes a group, one per lane.
  static I signedBytes(const uint8_t* p, size_t) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static I addI(I a, I b) { return _mm256_add_epi32(a, b); }
  static I mulAddI(I acc, I a, I b) { return _mm256_add_epi32(acc, _mm256_mullo_epi32(a, b)); }
  static F toF(I i) { return _mm256_cvtepi32_ps(i); }
  static F mulLanes(F a, F b) { return _mm256_mul_ps(a, b); }
  static F addF(F a, F b) { return _mm256_add_ps(a, b); }
  static F subF(F a, F b) { return _mm256_sub_ps(a, b); }

  static I izero() { return _mm256_setzero_si256(); }
  static F fzero() { return _mm256_setzero_ps(); }
  static I dotU8S8(I acc, V u, V s, int16_t scaleLow, int16_t scaleHigh) {
    const __m256i pairs = _mm256_maddubs_epi16(u, s);  // 16 x int16, no overflow for u <= 63
    const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(scaleHigh), _mm_set1_epi16(scaleLow));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, scales));
  }
  // Lane j: the sum of bytes 4j..4j+3 of u * s (u unsigned, at most 127).
  static I dotU8S8Add(I acc, V u, V s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
  static I negatedOffset(V s, uint8_t k) {
    return _mm256_sub_epi32(_mm256_setzero_si256(), dotU8S8Add(_mm256_setzero_si256(), splat(k), s));
  }
  static I addScaled(I acc, I x, int32_t scale) {
    return _mm256_add_epi32(acc, _mm256_mullo_epi32(x, _mm256_set1_epi32(scale)));
  }
  static I dotS8S8(V a, V c) {
    // maddubs needs an unsigned first operand: |a| times c with a's sign.
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(c, a));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  }
  // The float16 scales (field d) of R blocks as R floats in one vector.
  template <int R>
  struct Scales {
    __m256 v;
  };
  template <int R, class Block>
  static Scales<R> scales(const Block* const* blocks) {
    __m128i bits = _mm_setzero_si128();
    if constexpr (R > 0) bits = _mm_insert_epi16(bits, blocks[0]->d, 0);
    if constexpr (R > 1) bits = _mm_insert_epi16(bits, blocks[1]->d, 1);
    if constexpr (R > 2) bits = _mm_insert_epi16(bits, blocks[2]->d, 2);
    if constexpr (R > 3) bits = _mm_insert_epi16(bits, blocks[3]->d, 3);
    if constexpr (R > 4) bits = _mm_insert_epi16(bits, blocks[4]->d, 4);
    if constexpr (R > 5) bits = _mm_insert_epi16(bits, blocks[5]->d, 5);
    if constexpr (R > 6) bits = _mm_insert_epi16(bits, blocks[6]->d, 6);
    if constexpr (R > 7) bits = _mm_insert_epi16(bits, blocks[7]->d, 7);
    return {_mm256_cvtph_ps(bits)};
  }
  template <int R>
  static Scales<R> times(Scales<R> s, float m) {
    return {_mm256_mul_ps(s.v, _mm256_set1_ps(m))};
  }
  template <int R>
  static F fmaddScale(F acc, I i, Scales<R> s, int r) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_permutevar8x32_ps(s.v, _mm256_set1_epi32(r)), acc);
  }
  static F fmaddI(F acc, I i, float d) { return _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_set1_ps(d), acc); }
  static int32_t hsumI(I i) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
  }
  static float hsumF(F f) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(f), _mm256_extractf128_ps(f, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // ---- Float rows (DotKernels::floatTile): Kind 0 float32, 1 float16, 2 bfloat16 ----
  static constexpr bool kFloatTiles = true;
  // floatTile's blocks: the whole tile (8 x 4).
  static constexpr int kFloatBlockRows = 8, kFloatBlockTokens = 4;
  // Its steps one at a time, not unrolled by turns of 64 values: so, the
  // 1-token tile took 1.13x the time on AVX2, 1.25x on AVX-512.
  static constexpr bool kFloatTurnUnrolled = false;
  template <int Kind>
  static F floats8(const uint8_t* p) {
    if constexpr (Kind == 0) {
      return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    } else if constexpr (Kind == 1) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else {
      const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    }
  }
  static F fmaddF(F a, F b, F acc) { return _mm256_fmadd_ps(a, b, acc); }
  static F splatF(float x) { return _mm256_set1_ps(x); }
  static F loadF(const float* p) { return _mm256_loadu_ps(p); }
  static void storeF(F f, float* p) { _mm256_storeu_ps(p, f); }
};

}  // namespace md::simd
