// dot_neon_fhm.cpp: the NEON tables' F16 tile on fmlal (FEAT_FHM: every
// Apple silicon chip, M1 included, and Armv8.6 cores with float16), the
// one file built for that extension; dot_neon.cpp takes it in place of its
// converting tile where the OS reports the extension (dot_neon_f16.h).
//
// fmlal multiplies float16 lanes 0..3 (fmlal2: 4..7) into float32 sums,
// the product exact and the sum rounded once. That is what the converting
// tile does after turning both operands into float32 (exact) and fusing
// the multiply-add, so each pair keeps its two accumulators, its order and
// its bits: lanes 0..3 and 4..7 apart, added at the end, then the last
// n % 8 products one by one (dot_kernels.h's floatBlock). Without the
// conversions a step of 8 values is one load a row, one a token, and two
// fmlal a pair.
//
// This file shares no inline function with the others (the linker keeps
// one copy of each, maybe this one, for a CPU without the extension).
#include "dot_neon_f16.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_FP16_FML)
#include <arm_neon.h>

#include <cstring>

#include "cpu_features.h"
#include "unroll.h"

namespace md {
namespace {

// A pair's sums: values 0..3 of each step in lo, 4..7 in hi.
struct RowFloats {
  float32x4_t lo, hi;
};

float half(uint16_t bits) {
  __fp16 h;
  std::memcpy(&h, &bits, 2);
  return float(h);
}

// 8 values of every pair of a block at `at`.
template <int R, int T>
inline __attribute__((always_inline)) void halfStep(RowFloats (&acc)[R][T], const uint16_t* wh, size_t wStep,
                                                    const uint16_t* ah, size_t aStep, int64_t at) {
  float16x8_t wv[R];
  MD_UNROLL for (int r = 0; r < R; ++r) wv[r] = vreinterpretq_f16_u16(vld1q_u16(wh + size_t(r) * wStep + at));
  MD_UNROLL for (int t = 0; t < T; ++t) {
    const float16x8_t xv = vreinterpretq_f16_u16(vld1q_u16(ah + size_t(t) * aStep + at));
    MD_UNROLL for (int r = 0; r < R; ++r) {
      acc[r][t].lo = vfmlalq_low_f16(acc[r][t].lo, wv[r], xv);
      acc[r][t].hi = vfmlalq_high_f16(acc[r][t].hi, wv[r], xv);
    }
  }
}

template <int R, int T>
void halfBlock(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
  RowFloats acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = {vdupq_n_f32(0), vdupq_n_f32(0)};
  const auto* wh = reinterpret_cast<const uint16_t*>(w);
  const auto* ah = reinterpret_cast<const uint16_t*>(a);
  const size_t wStep = ws / 2, aStep = as / 2;
  int64_t i = 0;
  // 64 values a turn, unrolled; once a turn, the rows two tiles ahead
  // prefetched (as NeonRows' float tiles).
  for (; i + 64 <= n; i += 64) {
    for (int r = 0; r < R; ++r) __builtin_prefetch(wh + size_t(r) * wStep + i + 2 * kTileRows * wStep);
    MD_UNROLL for (int k = 0; k < 8; ++k) halfStep<R, T>(acc, wh, wStep, ah, aStep, i + 8 * k);
  }
  for (; i + 8 <= n; i += 8) halfStep<R, T>(acc, wh, wStep, ah, aStep, i);
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      float sum = vaddvq_f32(vaddq_f32(acc[r][t].lo, acc[r][t].hi));
      for (int64_t j = i; j < n; ++j) sum += half(wh[size_t(r) * wStep + j]) * half(ah[size_t(t) * aStep + j]);
      out[size_t(r) * os + size_t(t)] = sum;
    }
}

// The F16 tile: blocks of up to 4 rows x 2 tokens, each over the whole
// row (16 of the 32 registers hold the sums, 4 the rows, 1 a token).
void halfTile(const uint8_t* w, size_t ws, int rows, const uint8_t* a, size_t as, int tokens, int64_t n, float* out,
              size_t os) {
  for (int t0 = 0; t0 < tokens; t0 += 2)
    for (int r0 = 0; r0 < rows; r0 += 4) {
      const uint8_t* wb = w + size_t(r0) * ws;
      const uint8_t* ab = a + size_t(t0) * as;
      float* ob = out + size_t(r0) * os + size_t(t0);
      const bool pair = tokens - t0 >= 2;
      switch (rows - r0 >= 4 ? 4 : rows - r0) {
        case 1: pair ? halfBlock<1, 2>(wb, ws, ab, as, n, ob, os) : halfBlock<1, 1>(wb, ws, ab, as, n, ob, os); break;
        case 2: pair ? halfBlock<2, 2>(wb, ws, ab, as, n, ob, os) : halfBlock<2, 1>(wb, ws, ab, as, n, ob, os); break;
        case 3: pair ? halfBlock<3, 2>(wb, ws, ab, as, n, ob, os) : halfBlock<3, 1>(wb, ws, ab, as, n, ob, os); break;
        default: pair ? halfBlock<4, 2>(wb, ws, ab, as, n, ob, os) : halfBlock<4, 1>(wb, ws, ab, as, n, ob, os); break;
      }
    }
}

}  // namespace

TileDot neonFmlalF16Tile() { return cpuHasNeonFhm() ? &halfTile : nullptr; }

}  // namespace md
#else
namespace md {
TileDot neonFmlalF16Tile() { return nullptr; }
}  // namespace md
#endif
