// dot_neon_i8mm.cpp: the repacked layouts' tiles on arm64 with the int8
// matrix-multiply extension (i8mm: Apple M2 and later, Armv8.6 cores), the
// one file built for it; offered when the OS reports it and the dot
// product and FEAT_FHM (cpu_features.h). The other types' tiles are the
// NEON table's (F16's on fmlal, dot_neon_fhm.cpp).
//
// smmla multiplies a 2 x 8 matrix of signed bytes by another's transpose
// into a 2 x 2 matrix of int32 sums: two tokens' 8 activation bytes
// against two rows' 8 weight bytes, 32 products in one instruction, where
// sdot takes 16 (4 rows' 4 bytes against one token's). So the weights here
// are interleaved 8 bytes a row (repack.h): a chunk's 16-byte vector m
// holds rows 2m and 2m + 1, and a tile takes its tokens in pairs, [t0 | t1]
// (an odd last token is paired with itself, or for Q4_0 and Q8_0 with the
// next token of its quad, its second sums dropped). llama.cpp's i8mm tiles
// (q4_0_4x8, q4_K_8x8) take the same shape.
//
// The integer sums are exact, as sdot's are. After them each tile takes
// the NEON row-lane tiles' float steps (simd_neon.h's NeonRows, dot_kernels.h)
// lane by lane, in the same order, so a row has the same bits on both
// tables. Those steps are written again here rather than included: this
// file is built for other instructions, so it shares no inline function
// with the plain NEON file (the linker keeps one copy of each).
#include "dot.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_MATMUL_INT8) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

#include "blocks.h"
#include "cpu_features.h"
#include "repack.h"
#include "unroll.h"

namespace md {
namespace {

// A group's 8 rows in lanes: rows 0..3 in lo, 4..7 in hi (NeonRows' I and F).
struct RowInts {
  int32x4_t lo, hi;
};
struct RowFloats {
  float32x4_t lo, hi;
};

RowFloats halves(const uint8_t* p) {
  const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(p)));
  return {vcvt_f32_f16(vget_low_f16(h)), vcvt_f32_f16(vget_high_f16(h))};
}
// The 4 float16 at p, as floats (a quad's tokens' scales).
float32x4_t quadHalves(const uint8_t* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
}
RowInts unsignedBytes(const uint8_t* p) {
  const uint16x8_t wide = vmovl_u8(vld1_u8(p));
  return {vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(wide))), vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(wide)))};
}
RowInts signedBytes(const uint8_t* p) {
  const int16x8_t wide = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(p)));
  return {vmovl_s16(vget_low_s16(wide)), vmovl_s16(vget_high_s16(wide))};
}
RowInts splat(int32_t x) { return {vdupq_n_s32(x), vdupq_n_s32(x)}; }
// A Q8_K block's 8 sums of pairs of its 16 part sums, pair j in lane j % 4
// of the first (j < 4) or second vector (NeonRows::pairSums).
struct PairSums {
  int32x4_t low, high;
};
PairSums pairSums(const int16_t* bsums) { return {vpaddlq_s16(vld1q_s16(bsums)), vpaddlq_s16(vld1q_s16(bsums + 8))}; }
template <int K>
RowInts mulAddLane(RowInts acc, RowInts a, int32x4_t s) {
  return {vmlaq_laneq_s32(acc.lo, a.lo, s, K), vmlaq_laneq_s32(acc.hi, a.hi, s, K)};
}
// acc + a times pair sum j, exact (j a constant once unrolled; the switch folds).
inline __attribute__((always_inline)) RowInts mulAddPairSum(RowInts acc, RowInts a, const PairSums& s, int j) {
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
RowInts mulAdd(RowInts acc, RowInts a, RowInts b) {
  return {vmlaq_s32(acc.lo, a.lo, b.lo), vmlaq_s32(acc.hi, a.hi, b.hi)};
}
RowFloats toFloats(RowInts i) { return {vcvtq_f32_s32(i.lo), vcvtq_f32_s32(i.hi)}; }
RowFloats mul(RowFloats a, float m) { return {vmulq_n_f32(a.lo, m), vmulq_n_f32(a.hi, m)}; }
// a times lane k of s: mul's bits (k a constant once unrolled; the switch folds).
RowFloats mulLane(RowFloats a, float32x4_t s, int k) {
  switch (k) {
    case 0: return {vmulq_laneq_f32(a.lo, s, 0), vmulq_laneq_f32(a.hi, s, 0)};
    case 1: return {vmulq_laneq_f32(a.lo, s, 1), vmulq_laneq_f32(a.hi, s, 1)};
    case 2: return {vmulq_laneq_f32(a.lo, s, 2), vmulq_laneq_f32(a.hi, s, 2)};
    default: return {vmulq_laneq_f32(a.lo, s, 3), vmulq_laneq_f32(a.hi, s, 3)};
  }
}
RowFloats mulLanes(RowFloats a, RowFloats b) { return {vmulq_f32(a.lo, b.lo), vmulq_f32(a.hi, b.hi)}; }
RowFloats add(RowFloats a, RowFloats b) { return {vaddq_f32(a.lo, b.lo), vaddq_f32(a.hi, b.hi)}; }
RowFloats sub(RowFloats a, RowFloats b) { return {vsubq_f32(a.lo, b.lo), vsubq_f32(a.hi, b.hi)}; }
// acc + float(i) * scale, fused (NeonRows::fmaddLanes).
RowFloats fmaddLanes(RowFloats acc, RowInts i, RowFloats scale) {
  return {vfmaq_f32(acc.lo, vcvtq_f32_s32(i.lo), scale.lo), vfmaq_f32(acc.hi, vcvtq_f32_s32(i.hi), scale.hi)};
}
// acc + (i / 16) * scale, i 16 times an integer (NeonRows::fmaddSixteenths).
RowFloats fmaddSixteenths(RowFloats acc, RowInts i, RowFloats scale) {
  return {vfmaq_f32(acc.lo, vcvtq_n_f32_s32(i.lo, 4), scale.lo), vfmaq_f32(acc.hi, vcvtq_n_f32_s32(i.hi, 4), scale.hi)};
}

// The tokens of a tile in pairs: pair p is tokens 2p and 2p + 1, or 2p
// twice when it is the last of an odd count.
template <int T>
struct TokenPairs {
  static constexpr int kPairs = (T + 1) / 2;
  static constexpr int first(int p) { return 2 * p; }
  static constexpr int second(int p) { return 2 * p + 1 < T ? 2 * p + 1 : 2 * p; }
};

// smmla's first operands from 16 bytes of each token of a pair, at
// `offset` of their quants: [first's bytes 0..7 | second's 0..7] and the
// same of bytes 8..15. Two 16-byte loads and two zips: an 8-byte load into
// each half took clang four instructions a vector (an address, a load to a
// general register, a move, a load to the lane).
struct PairChunks {
  int8x16_t first8, second8;
  int8x16_t operator[](int k) const { return k == 0 ? first8 : second8; }
};
PairChunks pairChunks(const int8_t* first, const int8_t* second, size_t offset) {
  const int64x2_t f = vreinterpretq_s64_s8(vld1q_s8(first + offset));
  const int64x2_t s = vreinterpretq_s64_s8(vld1q_s8(second + offset));
  return {vreinterpretq_s8_s64(vzip1q_s64(f, s)), vreinterpretq_s8_s64(vzip2q_s64(f, s))};
}

// Token t's row lanes from its pair's sums (pairSums[t / 2]): sums[m] =
// [t0 x row 2m, t0 x row 2m + 1, t1 x row 2m, t1 x row 2m + 1], smmla's
// 2 x 2 result; the even token takes the low halves, the odd the high.
RowInts tokenRows(const int32x4_t (*pairSums)[4], int t) {
  const int32x4_t* sums = pairSums[t / 2];
  auto pick = [t](int32x4_t a, int32x4_t b) {
    const int64x2_t a64 = vreinterpretq_s64_s32(a), b64 = vreinterpretq_s64_s32(b);
    return vreinterpretq_s32_s64(t % 2 == 0 ? vzip1q_s64(a64, b64) : vzip2q_s64(a64, b64));
  };
  return {pick(sums[0], sums[1]), pick(sums[2], sums[3])};
}
// A pair's sums starting at each token's own value: [a, a, b, b].
int32x4_t pairStart(int32_t first, int32_t second) { return vcombine_s32(vdup_n_s32(first), vdup_n_s32(second)); }
void startPair(int32x4_t sums[4], int32_t first, int32_t second) {
  const int32x4_t start = pairStart(first, second);
  MD_UNROLL for (int m = 0; m < 4; ++m) sums[m] = start;
}
// sums[m] += the pair's bytes x rows 2m, 2m + 1's (weights[m]).
void multiplyPair(int32x4_t sums[4], int8x16_t pair, const int8x16_t weights[4]) {
  MD_UNROLL for (int m = 0; m < 4; ++m) sums[m] = vmmlaq_s32(sums[m], pair, weights[m]);
}

// Row r of a token's lanes to o[r * os]. The tile's sums go one token at a
// time, by value: with the array passed by reference, GCC kept them on the
// stack for the whole loop, a store of each every block.
void storeToken(RowFloats lanes, float* o, size_t os) {
  vst1q_lane_f32(o, lanes.lo, 0);
  vst1q_lane_f32(o + os, lanes.lo, 1);
  vst1q_lane_f32(o + 2 * os, lanes.lo, 2);
  vst1q_lane_f32(o + 3 * os, lanes.lo, 3);
  vst1q_lane_f32(o + 4 * os, lanes.hi, 0);
  vst1q_lane_f32(o + 5 * os, lanes.hi, 1);
  vst1q_lane_f32(o + 6 * os, lanes.hi, 2);
  vst1q_lane_f32(o + 7 * os, lanes.hi, 3);
}

template <class Block>
const Block* tokenBlocks(const uint8_t* a, size_t as, int t) {
  return reinterpret_cast<const Block*>(a + size_t(t) * as);
}

// ---- Q4_0 and Q8_0 (blocks of 32) ----
//
// Per block and token the rows' exact sums of quant x activation. The
// quants are stored signed (repack.h's signed form): Q4_0's nibbles come
// out as 16 q (shifted to the high nibble, or masked there), so its sums
// are 16 times the quants' and convert as sixteenths, exactly. Then one
// multiply-add per block, as dot_kernels.h's block32x8Tile.
//
// The activations are a quad of tokens interleaved 8 bytes a token
// (repack.h's toActivationQuad): the 16 bytes of chunk c of pair p are
// smmla's operand as they are, [first's 8 | second's 8], where tokens
// read as rows took two loads and two zips per pair of chunks; and one
// load gives the 4 tokens' scales. A tile of an odd count multiplies its
// last pair whole (the quad's next token, or its zeros) and drops the
// second's sums.
template <bool kQ8, int T>
void block32Tile(const uint8_t* w, const uint8_t* quad, size_t, int64_t n, float* out, size_t os) {
  constexpr int kPairs = TokenPairs<T>::kPairs;
  constexpr size_t kBlockBytes = kQ8 ? kQ8_0x8BlockBytes : kQ4_0x8BlockBytes;
  RowFloats acc[T];
  MD_UNROLL for (int t = 0; t < T; ++t) acc[t] = {vdupq_n_f32(0), vdupq_n_f32(0)};
  const int64_t nb = n / blocks::kBlock;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* g = w + size_t(i) * kBlockBytes;
    const uint8_t* quants = g + 16;
    const uint8_t* q = quad + size_t(i) * kQ8_0QuadBlockBytes;
    const int8_t* xs = reinterpret_cast<const int8_t*>(q + 2 * kActivationQuadTokens);
    // Chunk c (values 8c..8c+7) of pair p.
    auto pairChunk = [xs](int p, int c) { return vld1q_s8(xs + 8 * (kActivationQuadTokens * c + 2 * p)); };
    int32x4_t sums[kPairs][4];
    MD_UNROLL for (int p = 0; p < kPairs; ++p) startPair(sums[p], 0, 0);
    if constexpr (kQ8) {
      MD_UNROLL for (int c = 0; c < 4; ++c) {  // chunk c: values 8c..8c+7 of each row
        int8x16_t v[4];
        MD_UNROLL for (int m = 0; m < 4; ++m) v[m] =
            vld1q_s8(reinterpret_cast<const int8_t*>(quants + 64 * c + 16 * m));
        MD_UNROLL for (int p = 0; p < kPairs; ++p) multiplyPair(sums[p], pairChunk(p, c), v);
      }
    } else {
      MD_UNROLL for (int c = 0; c < 2; ++c) {  // chunk c: low nibbles values 8c.., high 16 + 8c..
        int8x16_t low[4], high[4];
        MD_UNROLL for (int m = 0; m < 4; ++m) {
          const int8x16_t raw = vld1q_s8(reinterpret_cast<const int8_t*>(quants + 64 * c + 16 * m));
          low[m] = vshlq_n_s8(raw, 4);
          high[m] = vandq_s8(raw, vdupq_n_s8(int8_t(0xF0)));
        }
        MD_UNROLL for (int p = 0; p < kPairs; ++p) {
          multiplyPair(sums[p], pairChunk(p, c), low);
          multiplyPair(sums[p], pairChunk(p, c + 2), high);
        }
      }
    }
    const RowFloats dw = halves(g);
    const float32x4_t dx = quadHalves(q);
    MD_UNROLL for (int t = 0; t < T; ++t) {
      const RowFloats scale = mulLane(dw, dx, t);
      acc[t] = kQ8 ? fmaddLanes(acc[t], tokenRows(sums, t), scale) : fmaddSixteenths(acc[t], tokenRows(sums, t), scale);
    }
  }
  MD_UNROLL for (int t = 0; t < T; ++t) storeToken(acc[t], out + t, os);
}

// ---- Q4_K and Q5_K ----
//
// Per super-block, sub-block s (parts 2s: low nibbles, 2s + 1: high) and
// token: each part's exact row sums, times the part's row scales, as
// dot_kernels.h's k45x8Tile; the fifth bits (Q5_K) from qh's chunk q,
// whose bit 2s (2s + 1) belongs to the low (high) nibbles of quant chunk
// 4s + q. Then k45x8Tile's float steps.
template <bool kFive, int T>
void k45Tile(const uint8_t* w, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
  using Pairs = TokenPairs<T>;
  constexpr size_t kBlockBytes = kFive ? kQ5_Kx8BlockBytes : kQ4_Kx8BlockBytes;
  RowFloats sum[T];
  MD_UNROLL for (int t = 0; t < T; ++t) sum[t] = {vdupq_n_f32(0), vdupq_n_f32(0)};
  for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
    const uint8_t* g = w + size_t(i) * kBlockBytes;
    const uint8_t* quants = g + kQ4_Kx8QuantOffset;
    const int8_t* x[T];
    MD_UNROLL for (int t = 0; t < T; ++t) x[t] = tokenBlocks<blocks::Q8_K>(a, as, t)[i].qs;
    RowInts isum[T];
    MD_UNROLL for (int t = 0; t < T; ++t) isum[t] = splat(0);
    for (int s = 0; s < 4; ++s) {
      int32x4_t low32[Pairs::kPairs][4], high32[Pairs::kPairs][4];
      MD_UNROLL for (int p = 0; p < Pairs::kPairs; ++p) {
        startPair(low32[p], 0, 0);
        startPair(high32[p], 0, 0);
      }
      [[maybe_unused]] const int8x16_t fifthShift = vdupq_n_s8(int8_t(-2 * s));
      for (int qq = 0; qq < 2; ++qq) {
        // Each pair's bytes of both parts' values 16qq..16qq+15.
        PairChunks xLow[Pairs::kPairs], xHigh[Pairs::kPairs];
        MD_UNROLL for (int p = 0; p < Pairs::kPairs; ++p) {
          xLow[p] = pairChunks(x[Pairs::first(p)], x[Pairs::second(p)], 64 * s + 16 * qq);
          xHigh[p] = pairChunks(x[Pairs::first(p)], x[Pairs::second(p)], 64 * s + 32 + 16 * qq);
        }
        MD_UNROLL for (int k = 0; k < 2; ++k) {
          const int q = 2 * qq + k;  // values 8q..8q+7 of parts 2s and 2s + 1
          int8x16_t low[4], high[4];
          MD_UNROLL for (int m = 0; m < 4; ++m) {
            const uint8x16_t raw = vld1q_u8(quants + 64 * (4 * s + q) + 16 * m);
            uint8x16_t lo, hi;
            if constexpr (kFive) {
              // Bits 2s, 2s + 1 of qh to bits 0, 1; each inserted above its
              // nibble (NeonRows::nibblesWithFifthBits).
              const uint8x16_t qh = vshlq_u8(vld1q_u8(g + kQ4_Kx8BlockBytes + 64 * q + 16 * m), fifthShift);
              lo = vsliq_n_u8(raw, vandq_u8(qh, vdupq_n_u8(1)), 4);
              hi = vsriq_n_u8(vshlq_n_u8(vandq_u8(qh, vdupq_n_u8(2)), 3), raw, 4);
            } else {
              lo = vandq_u8(raw, vdupq_n_u8(0x0F));
              hi = vshrq_n_u8(raw, 4);
            }
            low[m] = vreinterpretq_s8_u8(lo);
            high[m] = vreinterpretq_s8_u8(hi);
          }
          MD_UNROLL for (int p = 0; p < Pairs::kPairs; ++p) {
            multiplyPair(low32[p], xLow[p][k], low);
            multiplyPair(high32[p], xHigh[p][k], high);
          }
        }
      }
      const RowInts scaleLow = unsignedBytes(g + 32 + 16 * s), scaleHigh = unsignedBytes(g + 40 + 16 * s);
      MD_UNROLL for (int t = 0; t < T; ++t) isum[t] =
          mulAdd(mulAdd(isum[t], tokenRows(low32, t), scaleLow), tokenRows(high32, t), scaleHigh);
    }
    const RowFloats d = halves(g), dmin = halves(g + 16);
    MD_UNROLL for (int t = 0; t < T; ++t) {
      const blocks::Q8_K& y = tokenBlocks<blocks::Q8_K>(a, as, t)[i];
      RowInts mins = splat(0);
      const PairSums pairs = pairSums(y.bsums);
      MD_UNROLL for (int j = 0; j < 8; ++j) mins = mulAddPairSum(mins, unsignedBytes(g + 96 + 8 * j), pairs, j);
      sum[t] = add(sum[t], sub(mulLanes(mul(d, y.d), toFloats(isum[t])), mulLanes(mul(dmin, y.d), toFloats(mins))));
    }
  }
  MD_UNROLL for (int t = 0; t < T; ++t) storeToken(sum[t], out + t, os);
}

// ---- Q6_K ----
//
// Per part of 16 values, the rows' exact sums of (6-bit quant - 32) x
// activation (q6_kRuns says where the 32 comes off), times the part's row
// scales, as dot_kernels.h's q6_kx8Tile; then its float steps.
// Run u (0..3) of half h holds values 128h + 32u + l (l < 32): the low
// nibbles (u < 2) or high nibbles of ql byte 64h + 32(u % 2) + l, with bits
// 2u, 2u + 1 of qh byte 32h + l above them. Chunk c8 of a run (values
// 8c8..8c8+7) is ql's chunk 8h + 4(u % 2) + c8 and qh's chunk 4h + c8;
// chunks 0, 1 are part 8h + 2u, chunks 2, 3 part 8h + 2u + 1. Runs u and
// u + 2 read the same bytes, so they are unpacked together.

// Part j's row scales for row pair m in smmla's layout: [s(2m), s(2m + 1),
// s(2m), s(2m + 1)]. Either from the part's 8 scales, widened once (rows
// 0..3 in lo, 4..7 in hi), or from the row pair's two bytes, loaded
// repeated: more instructions, but nothing held from one row pair to the next.
int32x4_t rowPairScales(RowInts s, int m) {
  const int64x2_t half = vreinterpretq_s64_s32(m < 2 ? s.lo : s.hi);
  return vreinterpretq_s32_s64(m % 2 == 0 ? vzip1q_s64(half, half) : vzip2q_s64(half, half));
}
int32x4_t rowPairScales(const uint8_t* g, int j, int m) {
  const int8x8_t both = vreinterpret_s8_s16(vld1_dup_s16(reinterpret_cast<const int16_t*>(g + 16 + 8 * j + 2 * m)));
  return vmovl_s16(vget_low_s16(vmovl_s8(both)));
}

// Runs kRun and kRun + 2 of half h into each token pair's sums, by row
// pair, in smmla's layout (isum[p][m], as tokenRows reads them). Row pair by
// row pair, so that only one row pair's part sums are live beside the
// pairs' activation bytes: with every row pair's at once, 4 tokens spilled.
// Q6_K's offset of 32: with one pair of tokens, each part's sums start at
// -32 times each token's activation sum; with two, the quants are taken
// less 32 (one subtraction a vector, as llama.cpp's Q6_K tiles), where the
// pairs' starts would take four more registers and spill. The same
// integers either way (counted: count-neon-tiles.mjs).
template <int kRun, int T>
void q6_kRuns(const uint8_t* g, const blocks::Q8_K* const y[T], int h, int32x4_t (*isum)[4]) {
  using Pairs = TokenPairs<T>;
  constexpr bool kOffsetInQuants = Pairs::kPairs > 1;
  const int8x16_t offset = vdupq_n_s8(kOffsetInQuants ? 32 : 0);
  for (int half16 = 0; half16 < 2; ++half16) {
    const int jLow = 8 * h + 2 * kRun + half16, jHigh = jLow + 4;  // the parts of runs kRun and kRun + 2
    // Each pair's bytes of the two parts' chunks (c8 = 2 half16 + k), and
    // where the offset is not in the quants, its sums' start.
    PairChunks xLow[Pairs::kPairs], xHigh[Pairs::kPairs];
    int32x4_t startLow[Pairs::kPairs], startHigh[Pairs::kPairs];
    MD_UNROLL for (int p = 0; p < Pairs::kPairs; ++p) {
      const blocks::Q8_K *y0 = y[Pairs::first(p)], *y1 = y[Pairs::second(p)];
      xLow[p] = pairChunks(y0->qs, y1->qs, 128 * h + 32 * kRun + 16 * half16);
      xHigh[p] = pairChunks(y0->qs, y1->qs, 128 * h + 32 * (kRun + 2) + 16 * half16);
      startLow[p] = startHigh[p] = vdupq_n_s32(0);
      if constexpr (!kOffsetInQuants) {
        startLow[p] = pairStart(-32 * int32_t(y0->bsums[jLow]), -32 * int32_t(y1->bsums[jLow]));
        startHigh[p] = pairStart(-32 * int32_t(y0->bsums[jHigh]), -32 * int32_t(y1->bsums[jHigh]));
      }
    }
    [[maybe_unused]] RowInts scaleLow, scaleHigh;
    if constexpr (!kOffsetInQuants) {
      scaleLow = signedBytes(g + 16 + 8 * jLow);
      scaleHigh = signedBytes(g + 16 + 8 * jHigh);
    }
    MD_UNROLL for (int m = 0; m < 4; ++m) {  // rows 2m, 2m + 1
      int32x4_t low[Pairs::kPairs], high[Pairs::kPairs];
      MD_UNROLL for (int p = 0; p < Pairs::kPairs; ++p) {
        low[p] = startLow[p];
        high[p] = startHigh[p];
      }
      MD_UNROLL for (int k = 0; k < 2; ++k) {
        const int c8 = 2 * half16 + k;
        const uint8x16_t ql = vld1q_u8(g + kQ6_Kx8LowOffset + 64 * (8 * h + 4 * kRun + c8) + 16 * m);
        const uint8x16_t qh = vld1q_u8(g + kQ6_Kx8HighOffset + 64 * (4 * h + c8) + 16 * m);
        // Each nibble with its two high bits inserted above it (sli, sri).
        uint8x16_t bits = qh;
        if constexpr (kRun == 1) bits = vshrq_n_u8(qh, 2);
        int8x16_t qLow = vreinterpretq_s8_u8(vsliq_n_u8(ql, vandq_u8(bits, vdupq_n_u8(3)), 4));
        int8x16_t qHigh = vreinterpretq_s8_u8(vsriq_n_u8(vandq_u8(bits, vdupq_n_u8(0x30)), ql, 4));
        if constexpr (kOffsetInQuants) {
          qLow = vsubq_s8(qLow, offset);
          qHigh = vsubq_s8(qHigh, offset);
        }
        MD_UNROLL for (int p = 0; p < Pairs::kPairs; ++p) {
          low[p] = vmmlaq_s32(low[p], xLow[p][k], qLow);
          high[p] = vmmlaq_s32(high[p], xHigh[p][k], qHigh);
        }
      }
      int32x4_t sl, sh;
      if constexpr (kOffsetInQuants) {
        sl = rowPairScales(g, jLow, m);
        sh = rowPairScales(g, jHigh, m);
      } else {
        sl = rowPairScales(scaleLow, m);
        sh = rowPairScales(scaleHigh, m);
      }
      MD_UNROLL for (int p = 0; p < Pairs::kPairs; ++p) isum[p][m] =
          vmlaq_s32(vmlaq_s32(isum[p][m], low[p], sl), high[p], sh);
    }
  }
}

template <int T>
void q6_kTile(const uint8_t* w, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
  using Pairs = TokenPairs<T>;
  RowFloats sum[T];
  MD_UNROLL for (int t = 0; t < T; ++t) sum[t] = {vdupq_n_f32(0), vdupq_n_f32(0)};
  for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
    const uint8_t* g = w + size_t(i) * kQ6_Kx8BlockBytes;
    const blocks::Q8_K* y[T];
    MD_UNROLL for (int t = 0; t < T; ++t) y[t] = &tokenBlocks<blocks::Q8_K>(a, as, t)[i];
    int32x4_t isum[Pairs::kPairs][4];
    MD_UNROLL for (int p = 0; p < Pairs::kPairs; ++p) startPair(isum[p], 0, 0);
    // The halves unrolled, but for GCC with one pair of tokens: it then
    // unrolled the runs' halves too, and spilled.
    if constexpr (Pairs::kPairs > 1) {
      MD_UNROLL for (int h = 0; h < 2; ++h) {
        q6_kRuns<0, T>(g, y, h, isum);
        q6_kRuns<1, T>(g, y, h, isum);
      }
    } else {
      MD_UNROLL_FOR_CLANG for (int h = 0; h < 2; ++h) {
        q6_kRuns<0, T>(g, y, h, isum);
        q6_kRuns<1, T>(g, y, h, isum);
      }
    }
    const RowFloats d = halves(g);
    MD_UNROLL for (int t = 0; t < T; ++t) sum[t] = add(sum[t], mulLanes(mul(d, y[t]->d), toFloats(tokenRows(isum, t))));
  }
  MD_UNROLL for (int t = 0; t < T; ++t) storeToken(sum[t], out + t, os);
}

// A layout's tile as DotTable takes it: groups of 8 rows (rows 8 or 16,
// the groups gs bytes apart), each against 1 to kTileTokens tokens.
template <template <int> class Tile>
void groupsDispatch(const uint8_t* w, size_t gs, int rows, const uint8_t* a, size_t as, int tokens, int64_t n,
                    float* out, size_t os) {
  static_assert(kTileTokens == 4, "groupsDispatch covers 1 to 4 tokens");
  for (int r = 0; r < rows; r += kRepackRows) {
    const uint8_t* g = w + size_t(r / kRepackRows) * gs;
    float* o = out + size_t(r) * os;
    switch (tokens) {
      case 1: Tile<1>::run(g, a, as, n, o, os); break;
      case 2: Tile<2>::run(g, a, as, n, o, os); break;
      case 3: Tile<3>::run(g, a, as, n, o, os); break;
      default: Tile<4>::run(g, a, as, n, o, os); break;
    }
  }
}
#define MD_I8MM_TILE(NAME, ...)                                                                      \
  template <int T>                                                                                   \
  struct NAME {                                                                                      \
    static void run(const uint8_t* w, const uint8_t* a, size_t as, int64_t n, float* o, size_t os) { \
      __VA_ARGS__(w, a, as, n, o, os);                                                               \
    }                                                                                                \
  };
MD_I8MM_TILE(Q4_0Tile, block32Tile<false, T>)
MD_I8MM_TILE(Q8_0Tile, block32Tile<true, T>)
MD_I8MM_TILE(Q4_KTile, k45Tile<false, T>)
MD_I8MM_TILE(Q5_KTile, k45Tile<true, T>)
MD_I8MM_TILE(Q6_KTile, q6_kTile<T>)
#undef MD_I8MM_TILE

}  // namespace

const DotTable* neonI8mmDotTable() {
  static const DotTable* table = []() -> const DotTable* {
    const DotTable* base = neonDotTable();
    if (base == nullptr || !cpuHasNeonI8mm()) return nullptr;
    static DotTable t = *base;
    t.isa = "neon-i8mm";
    t.q4_0x8 = &groupsDispatch<Q4_0Tile>;
    t.q8_0x8 = &groupsDispatch<Q8_0Tile>;
    t.q4_kx8 = &groupsDispatch<Q4_KTile>;
    t.q5_kx8 = &groupsDispatch<Q5_KTile>;
    t.q6_kx8 = &groupsDispatch<Q6_KTile>;
    t.repackForm = RepackForm{8, true, true};
    return &t;
  }();
  return table;
}

}  // namespace md
#else
namespace md {
const DotTable* neonI8mmDotTable() { return nullptr; }
}  // namespace md
#endif
