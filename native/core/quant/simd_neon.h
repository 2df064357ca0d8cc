// simd_neon.h: the dot kernels' byte-vector operations (see
// simd_portable.h for what each does) on arm64 NEON. Apple's M chips have
// the dot-product extension (sdot); without it, widening multiplies.
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace md::simd {

struct NeonRows;

struct Neon {
  static constexpr const char* kName = "neon";
  // Repacked tiles (repack.h) on NeonRows: a group's 8 rows in two 128-bit vectors.
  static constexpr bool kRowLanes = true;
  using Rows = NeonRows;
  // Float rows in tiles (DotKernels::floatTile) on NeonRows' 8 lanes.
  static constexpr bool kFloatTiles = true;
  struct V {
    uint8x16_t lo, hi;
  };
  using I = int32x4_t;
  using F = float32x4_t;

  static float half(uint16_t bits) {
    __fp16 h;
    std::memcpy(&h, &bits, 2);
    return float(h);
  }
  static V load(const void* p) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    return {vld1q_u8(b), vld1q_u8(b + 16)};
  }
  static V splat(uint8_t x) { return {vdupq_n_u8(x), vdupq_n_u8(x)}; }
  static V nibbles16(const uint8_t* p) {
    const uint8x16_t raw = vld1q_u8(p);
    return {vandq_u8(raw, vdupq_n_u8(0x0F)), vshrq_n_u8(raw, 4)};
  }
  static V lowNibbles(V x) { return {vandq_u8(x.lo, vdupq_n_u8(0x0F)), vandq_u8(x.hi, vdupq_n_u8(0x0F))}; }
  static V highNibbles(V x) { return {vshrq_n_u8(x.lo, 4), vshrq_n_u8(x.hi, 4)}; }
  static V bitsToMask(uint32_t bits) {
    static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t bit = vld1q_u8(kBit);
    const uint8x8_t b0 = vdup_n_u8(uint8_t(bits)), b1 = vdup_n_u8(uint8_t(bits >> 8));
    const uint8x8_t b2 = vdup_n_u8(uint8_t(bits >> 16)), b3 = vdup_n_u8(uint8_t(bits >> 24));
    return {vtstq_u8(vcombine_u8(b0, b1), bit), vtstq_u8(vcombine_u8(b2, b3), bit)};
  }
  static V testMask(V x, uint8_t m) { return {vtstq_u8(x.lo, vdupq_n_u8(m)), vtstq_u8(x.hi, vdupq_n_u8(m))}; }
  static V andV(V a, V c) { return {vandq_u8(a.lo, c.lo), vandq_u8(a.hi, c.hi)}; }
  static V orV(V a, V c) { return {vorrq_u8(a.lo, c.lo), vorrq_u8(a.hi, c.hi)}; }
  static V andNot(V a, V c) { return {vbicq_u8(c.lo, a.lo), vbicq_u8(c.hi, a.hi)}; }
  static V subBytes(V a, V c) { return {vsubq_u8(a.lo, c.lo), vsubq_u8(a.hi, c.hi)}; }
  template <int N>
  static V shiftRight(V x) {
    return {vshrq_n_u8(x.lo, N), vshrq_n_u8(x.hi, N)};
  }
  template <int N>
  static V shiftLeft(V x) {
    return {vshlq_n_u8(x.lo, N), vshlq_n_u8(x.hi, N)};
  }
  static V codebook16(const int8_t* table, V indices) {
    const uint8x16_t t = vreinterpretq_u8_s8(vld1q_s8(table));
    return {vqtbl1q_u8(t, indices.lo), vqtbl1q_u8(t, indices.hi)};
  }

  static I izero() { return vdupq_n_s32(0); }
  static F fzero() { return vdupq_n_f32(0); }

  // Lane j: acc + the sum of a[i] * c[i] over bytes 4j..4j+3 (sdot's
  // lanes, which the repacked tiles' row lanes rely on; without the
  // extension, widening multiplies and two pairwise adds give the same).
  static int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t c) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(acc, a, c);
#else
    const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(c));
    const int16x8_t hi = vmull_s8(vget_high_s8(a), vget_high_s8(c));
    return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
#endif
  }
  // The unsigned bytes are at most 63 here, so they read as signed too.
  static I dotU8S8(I acc, V u, V s, int16_t scaleLow, int16_t scaleHigh) {
    const int32x4_t lo = dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(u.lo), vreinterpretq_s8_u8(s.lo));
    const int32x4_t hi = dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(u.hi), vreinterpretq_s8_u8(s.hi));
    return vmlaq_n_s32(vmlaq_n_s32(acc, lo, scaleLow), hi, scaleHigh);
  }
  static I dotU8S8Add(I acc, V u, V s) {
    acc = dot16(acc, vreinterpretq_s8_u8(u.lo), vreinterpretq_s8_u8(s.lo));
    return dot16(acc, vreinterpretq_s8_u8(u.hi), vreinterpretq_s8_u8(s.hi));
  }
  static I negatedOffset(V s, uint8_t k) {
    const int8x16_t minusK = vdupq_n_s8(int8_t(-int(k)));
    return dot16(dot16(vdupq_n_s32(0), minusK, vreinterpretq_s8_u8(s.lo)), minusK, vreinterpretq_s8_u8(s.hi));
  }
  static I addScaled(I acc, I x, int32_t scale) { return vmlaq_n_s32(acc, x, scale); }
  static I dotS8S8(V a, V c) {
    const int32x4_t lo = dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(a.lo), vreinterpretq_s8_u8(c.lo));
    return dot16(lo, vreinterpretq_s8_u8(a.hi), vreinterpretq_s8_u8(c.hi));
  }
  // The float16 scales (field d) of R blocks as R floats.
  template <int R>
  struct Scales {
    float v[R];
  };
  template <int R, class Block>
  static Scales<R> scales(const Block* const* blocks) {
    Scales<R> s;
    for (int r = 0; r < R; ++r) s.v[r] = half(blocks[r]->d);
    return s;
  }
  template <int R>
  static Scales<R> times(Scales<R> s, float m) {
    for (int r = 0; r < R; ++r) s.v[r] *= m;
    return s;
  }
  template <int R>
  static F fmaddScale(F acc, I i, const Scales<R>& s, int r) {
    return fmaddI(acc, i, s.v[r]);
  }
  static F fmaddI(F acc, I i, float d) { return vfmaq_n_f32(acc, vcvtq_f32_s32(i), d); }
  static int32_t hsumI(I i) { return vaddvq_s32(i); }
  static float hsumF(F f) { return vaddvq_f32(f); }

  // Float rows of any length: 8 values a step, then the last n % 8 one by
  // one onto the reduced sum (as ggml adds its leftovers).
  static float dotF32(const float* a, const float* b, int64_t n) {
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
      acc1 = vfmaq_f32(acc1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    }
    float sum = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
  }
  static float dotF16(const uint16_t* a, const uint16_t* b, int64_t n) {
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const float16x8_t x = vreinterpretq_f16_u16(vld1q_u16(a + i)), y = vreinterpretq_f16_u16(vld1q_u16(b + i));
      acc0 = vfmaq_f32(acc0, vcvt_f32_f16(vget_low_f16(x)), vcvt_f32_f16(vget_low_f16(y)));
      acc1 = vfmaq_f32(acc1, vcvt_f32_f16(vget_high_f16(x)), vcvt_f32_f16(vget_high_f16(y)));
    }
    float sum = vaddvq_f32(vaddq_f32(acc0, acc1));
    auto half1 = [](uint16_t h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); };
    for (; i < n; ++i) sum += half1(a[i]) * half1(b[i]);
    return sum;
  }
  static float dotBF16(const uint16_t* a, const uint16_t* b, int64_t n) {
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
    auto wide = [](uint16x4_t h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const uint16x8_t x = vld1q_u16(a + i), y = vld1q_u16(b + i);
      acc0 = vfmaq_f32(acc0, wide(vget_low_u16(x)), wide(vget_low_u16(y)));
      acc1 = vfmaq_f32(acc1, wide(vget_high_u16(x)), wide(vget_high_u16(y)));
    }
    float sum = vaddvq_f32(vaddq_f32(acc0, acc1));
    auto bf1 = [](uint16_t h) { return vgetq_lane_f32(vreinterpretq_f32_u32(vdupq_n_u32(uint32_t(h) << 16)), 0); };
    for (; i < n; ++i) sum += bf1(a[i]) * bf1(b[i]);
    return sum;
  }
};

// The repacked tiles' row lanes (simd_avx2.h's "Rows in lanes") on NEON:
// one group of 8 rows, rows 0..3 in `lo` and 4..7 in `hi` of each pair of
// 128-bit vectors. Each lane takes the AVX2 lanes' integer and float steps
// (fused multiply-adds where they fuse), so the K types keep the plain
// tiles' bits here too. With the dot-product extension one sdot sums 4
// bytes of 4 rows against a token's 4 bytes, read once with ld1r.
// The byte operations are Neon's (its V is a pair of 128-bit vectors too).
struct NeonRows : Neon {
  static constexpr int kGroups = 1;
  // sdot multiplies signed bytes: dotU8S8Add's unsigned operand must stay
  // under 128 (Q8_0x8 takes the signed dot; i8mm's usdot would take them).
  static constexpr bool kExactU8Dot = false;
  // The tiles load 16 bytes of a token once and take 4 of them at a time
  // by lane (sdot's by-element form), where a broadcast took a load and a
  // move per 4 bytes.
  static constexpr bool kLaneDot = true;
  // sdot multiplies signed bytes, so Q4_0's and Q8_0's repacked quants are
  // stored signed (repack.h): no offset through the activations' sums, no
  // flip of Q8_0's bytes. Q4_0's nibbles come out as 16 times the quant
  // (shifted to the high nibble or masked there), so its sums are 16 times
  // the quants' and convert as sixteenths (fmaddSixteenths).
  static constexpr bool kSignedRepack = true;
  // sli and sri insert shifted bits under the others (nibblesWithFifthBits).
  static constexpr bool kBitInsert = true;
  // Q4_0's and Q8_0's tiles read their activations in quads of tokens
  // (repack.h): 16 bytes hold 4 bytes of each of the 4 tokens, token t in
  // lane t, as sdot's by-element form takes them, and one load gives the
  // 4 tokens' scales (quadHalves, mulByLane).
  static constexpr bool kActivationQuads = true;
  using Token16 = int8x16_t;
  struct I {
    int32x4_t lo, hi;
  };
  struct F {
    float32x4_t lo, hi;
  };
  // floatTile's blocks: 4 rows x 2 tokens, 16 of the 32 registers for
  // the sums (each pair's 8 lanes take two), 8 for the rows, 2 for a token.
  static constexpr int kFloatBlockRows = 4, kFloatBlockTokens = 2;
  // A turn of 64 values unrolled: no loop count or branch each 8 values
  // (clang's 4-token F16 tile: 732 -> 612 instructions a block of 32).
  static constexpr bool kFloatTurnUnrolled = true;

  static V chunk(const uint8_t* p, size_t) { return load(p); }
  // 0xFF where every bit of m is set in the byte, else 0 (Neon's tests for any bit).
  static V testMask(V x, uint8_t m) {
    const uint8x16_t mask = vdupq_n_u8(m);
    return {vceqq_u8(vandq_u8(x.lo, mask), mask), vceqq_u8(vandq_u8(x.hi, mask), mask)};
  }
  static V toSigned(V x) { return {veorq_u8(x.lo, vdupq_n_u8(0x80)), veorq_u8(x.hi, vdupq_n_u8(0x80))}; }
  // Q6_K's runs u and u + 2 (u 0 or 1): ql's low (high) nibbles with bits
  // 2u, 2u + 1 (2u + 4, 2u + 5) of qh above them, each inserted by one sli
  // (sri) where a shift, a mask and an or took three.
  template <int U>
  static void q6_kRunPair(V ql, V qh, V& lo, V& hi) {
    static_assert(U == 0 || U == 1, "runs 0 and 2, or 1 and 3");
    auto one = [](uint8x16_t l, uint8x16_t h, uint8x16_t& runU, uint8x16_t& runU2) {
      const uint8x16_t bits = U == 0 ? h : vshrq_n_u8(h, 2);
      runU = vsliq_n_u8(l, vandq_u8(bits, vdupq_n_u8(3)), 4);
      runU2 = vsriq_n_u8(vandq_u8(bits, vdupq_n_u8(0x30)), l, 4);
    };
    one(ql.lo, qh.lo, lo.lo, hi.lo);
    one(ql.hi, qh.hi, lo.hi, hi.hi);
  }
  // Q5_K's values: raw's low (high) nibbles with bit `bit` (bit + 1) of qh
  // above them at bit 4. qh shifted once, then each bit inserted over its
  // nibble (sli, sri): six operations where a test, a mask and an or for
  // each bit took eight.
  static void nibblesWithFifthBits(V raw, V qh, int bit, V& lo, V& hi) {
    const int8x16_t shift = vdupq_n_s8(int8_t(-bit));
    auto one = [&](uint8x16_t r, uint8x16_t h, uint8x16_t& l, uint8x16_t& u) {
      const uint8x16_t bits = vshlq_u8(h, shift);
      l = vsliq_n_u8(r, vandq_u8(bits, vdupq_n_u8(1)), 4);
      u = vsriq_n_u8(vshlq_n_u8(vandq_u8(bits, vdupq_n_u8(2)), 3), r, 4);
    };
    one(raw.lo, qh.lo, lo.lo, hi.lo);
    one(raw.hi, qh.hi, lo.hi, hi.hi);
  }
  // Lane j: the sum of a[i] * c[i] over bytes 4j..4j+3, both signed.
  static I dotS8S8(V a, V c) {
    return {Neon::dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(a.lo), vreinterpretq_s8_u8(c.lo)),
            Neon::dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(a.hi), vreinterpretq_s8_u8(c.hi))};
  }
  static Token16 token16(const int8_t* p) { return vld1q_s8(p); }
  // The 4 float16 at p, as floats (a quad's tokens' scales).
  static float32x4_t quadHalves(const uint8_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
  }
  // a times lane k of s: mulF's bits (k a constant once unrolled; the switch folds).
  static F mulByLane(F a, float32x4_t s, int k) {
    switch (k) {
      case 0: return {vmulq_laneq_f32(a.lo, s, 0), vmulq_laneq_f32(a.hi, s, 0)};
      case 1: return {vmulq_laneq_f32(a.lo, s, 1), vmulq_laneq_f32(a.hi, s, 1)};
      case 2: return {vmulq_laneq_f32(a.lo, s, 2), vmulq_laneq_f32(a.hi, s, 2)};
      default: return {vmulq_laneq_f32(a.lo, s, 3), vmulq_laneq_f32(a.hi, s, 3)};
    }
  }
  // Lane j: acc + the sum of bytes 4j..4j+3 of v times bytes 4k..4k+3 of
  // x, both signed (v's bytes under 128 where unsigned), exact. k is a
  // constant once the tiles' loops are unrolled, and the switch folds.
  static I dotLane(I acc, V v, Token16 x, int k) {
    switch (k) {
      case 0: return dotLaneAt<0>(acc, v, x);
      case 1: return dotLaneAt<1>(acc, v, x);
      case 2: return dotLaneAt<2>(acc, v, x);
      default: return dotLaneAt<3>(acc, v, x);
    }
  }
  template <int K>
  static I dotLaneAt(I acc, V v, Token16 x) {
#if defined(__ARM_FEATURE_DOTPROD)
    return {vdotq_laneq_s32(acc.lo, vreinterpretq_s8_u8(v.lo), x, K),
            vdotq_laneq_s32(acc.hi, vreinterpretq_s8_u8(v.hi), x, K)};
#else
    const uint8x16_t b = vreinterpretq_u8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x), K));
    return dotU8S8Add(acc, v, {b, b});
#endif
  }
  // A Q8_K block's 8 sums of pairs of its 16 part sums (the K types' parts
  // of 32 values): pair j in lane j % 4 of low (j < 4) or high. Two loads
  // and two pairwise adds for the 8, where each took two scalar loads, an
  // add and a dup.
  struct PairSums {
    int32x4_t low, high;
  };
  static PairSums pairSums(const int16_t* bsums) {
    return {vpaddlq_s16(vld1q_s16(bsums)), vpaddlq_s16(vld1q_s16(bsums + 8))};
  }
  // acc + a times pair sum j, exact (mulAddI with the sum splat; j a
  // constant once unrolled, and the switch folds).
  static inline __attribute__((always_inline)) I mulAddPairSum(I acc, I a, const PairSums& s, int j) {
    switch (j) {
      case 0: return mulAddLane<0>(acc, a, s.low);
      case 1: return mulAddLane<1>(acc, a, s.low);
      case 2: return mulAddLane<2>(acc, a, s.low);
      case 3: return mulAddLane<3>(acc, a, s.low);
      case 4: return mulAddLane<0>(acc, a, s.high);
      case 5: return mulAddLane<1>(acc, a, s.high);
      case 6: return mulAddLane<2>(acc, a, s.high);
      default: return mulAddLane<3>(acc, a, s.high);
    }
  }
  template <int K>
  static I mulAddLane(I acc, I a, int32x4_t s) {
    return {vmlaq_laneq_s32(acc.lo, a.lo, s, K), vmlaq_laneq_s32(acc.hi, a.hi, s, K)};
  }
  static V repeat4(int32_t x) {
    const uint8x16_t r = vreinterpretq_u8_s32(vdupq_n_s32(x));
    return {r, r};
  }

  static I izero() { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }
  static F fzero() { return {vdupq_n_f32(0), vdupq_n_f32(0)}; }
  static I splat32(int32_t x) { return {vdupq_n_s32(x), vdupq_n_s32(x)}; }
  // Lane j: acc + the sum of bytes 4j..4j+3 of u times s, u under 128 (read as signed), exact.
  static I dotU8S8Add(I acc, V u, V s) {
    return {Neon::dot16(acc.lo, vreinterpretq_s8_u8(u.lo), vreinterpretq_s8_u8(s.lo)),
            Neon::dot16(acc.hi, vreinterpretq_s8_u8(u.hi), vreinterpretq_s8_u8(s.hi))};
  }
  static F halves(const uint8_t* p, size_t) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(p)));
    return {vcvt_f32_f16(vget_low_f16(h)), vcvt_f32_f16(vget_high_f16(h))};
  }
  static F mulF(F a, float m) { return {vmulq_n_f32(a.lo, m), vmulq_n_f32(a.hi, m)}; }
  // acc + float(i) * scale, fused as AVX2's vfmadd.
  static F fmaddLanes(F acc, I i, F scale) {
    return {vfmaq_f32(acc.lo, vcvtq_f32_s32(i.lo), scale.lo), vfmaq_f32(acc.hi, vcvtq_f32_s32(i.hi), scale.hi)};
  }
  // acc + (i / 16) * scale, fused: i is 16 times an integer, so the
  // conversion's division is exact and the bits are fmaddLanes' of i / 16.
  static F fmaddSixteenths(F acc, I i, F scale) {
    return {vfmaq_f32(acc.lo, vcvtq_n_f32_s32(i.lo, 4), scale.lo),
            vfmaq_f32(acc.hi, vcvtq_n_f32_s32(i.hi, 4), scale.hi)};
  }
  static void storeRows(F f, float* out) {
    vst1q_f32(out, f.lo);
    vst1q_f32(out + 4, f.hi);
  }
  static I bytes(const uint8_t* p, size_t) {
    const uint16x8_t wide = vmovl_u8(vld1_u8(p));
    return {vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(wide))),
            vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(wide)))};
  }
  static I signedBytes(const uint8_t* p, size_t) {
    const int16x8_t wide = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(p)));
    return {vmovl_s16(vget_low_s16(wide)), vmovl_s16(vget_high_s16(wide))};
  }
  static I addI(I a, I b) { return {vaddq_s32(a.lo, b.lo), vaddq_s32(a.hi, b.hi)}; }
  static I mulAddI(I acc, I a, I b) { return {vmlaq_s32(acc.lo, a.lo, b.lo), vmlaq_s32(acc.hi, a.hi, b.hi)}; }
  static F toF(I i) { return {vcvtq_f32_s32(i.lo), vcvtq_f32_s32(i.hi)}; }

  // ---- Float rows (DotKernels::floatTile, weightedRows): Kind 0 float32, 1 float16, 2 bfloat16 ----
  // 8 values of a row: 0..3 in lo, 4..7 in hi, as Neon::dotF16's accumulators take them.
  template <int Kind>
  static F floats8(const uint8_t* p) {
    if constexpr (Kind == 0) {
      const float* f = reinterpret_cast<const float*>(p);
      return {vld1q_f32(f), vld1q_f32(f + 4)};
    } else if constexpr (Kind == 1) {
      const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(p)));
      return {vcvt_f32_f16(vget_low_f16(h)), vcvt_f32_f16(vget_high_f16(h))};
    } else {
      const uint16x8_t b = vld1q_u16(reinterpret_cast<const uint16_t*>(p));
      return {vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(b), 16)),
              vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(b), 16))};
    }
  }
  static F fmaddF(F a, F b, F acc) { return {vfmaq_f32(acc.lo, a.lo, b.lo), vfmaq_f32(acc.hi, a.hi, b.hi)}; }
  static float hsumF(F f) { return vaddvq_f32(vaddq_f32(f.lo, f.hi)); }
  static F splatF(float x) { return {vdupq_n_f32(x), vdupq_n_f32(x)}; }
  static F loadF(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }
  static void storeF(F f, float* p) {
    vst1q_f32(p, f.lo);
    vst1q_f32(p + 4, f.hi);
  }
  static F mulLanes(F a, F b) { return {vmulq_f32(a.lo, b.lo), vmulq_f32(a.hi, b.hi)}; }
  static F addF(F a, F b) { return {vaddq_f32(a.lo, b.lo), vaddq_f32(a.hi, b.hi)}; }
  static F subF(F a, F b) { return {vsubq_f32(a.lo, b.lo), vsubq_f32(a.hi, b.hi)}; }
};

}  // namespace md::simd
