// md_matvec_rows.h: the one definition of how the matrix-vector kernels
// sum a row of W x: shared by matvec.metal (which stores the rows) and
// head_sampling.metal (which picks a token from them without storing
// them), so the two give every logit the same bits.
#ifndef MD_MATVEC_ROWS_H
#define MD_MATVEC_ROWS_H

#include "md_kernel.h"
#include "md_block_values.h"
#include "md_transformer.h"

// The dot of part base + lane of a row with the lane's x, in a full window
// (every lane has a part). A quantized part reads its block itself.
template <typename Block>
inline float md_window_part_dot(device const Block* row, uint base, uint lane, thread const float* x) {
  const uint u = base + lane, parts_per_block = md_block_values(row) / MD_QK;
  return md_block_dot(row + u / parts_per_block, u % parts_per_block, x, MD_QK);
}
// A float row's window is loaded as x's is, coalesced: load i reads part
// base + i, lane l its value l (one line, or half a line of float16), and
// md_simd_transpose32 hands each lane its own part. Each lane loading its
// own part touched a line per lane per load. The products are summed in
// md_block_dot's order: the same bits.
template <typename Block>
inline float md_float_window_dot(device const Block* row, uint base, uint lane, thread const float* x) {
  float w[MD_QK];
  for (uint i = 0; i < MD_SIMD_WIDTH; ++i) w[i] = md_block_value(row + base + i, lane);
  md_simd_transpose32(w, lane);
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) sum += w[j] * x[j];
  return sum;
}
inline float md_window_part_dot(device const md_block_f32* row, uint base, uint lane, thread const float* x) {
  return md_float_window_dot(row, base, lane, x);
}
inline float md_window_part_dot(device const md_block_f16* row, uint base, uint lane, thread const float* x) {
  return md_float_window_dot(row, base, lane, x);
}
inline float md_window_part_dot(device const md_block_bf16* row, uint base, uint lane, thread const float* x) {
  return md_float_window_dot(row, base, lane, x);
}

// Rows first .. first + MD_MATVEC_ROWS - 1 (those below `rows`) of W x
// for each of the `count` (at most TOKENS) rows of x, summed over the SIMD
// group: every lane gets the totals, totals[r * TOKENS + t]. Each token's
// sums take the same steps whatever the count, so a batch gives each
// token the bits it gets alone.
template <typename Block, uint TOKENS>
inline void md_matvec_rows(device const Block* w, device const float* x, uint rows, uint cols, uint count, uint first,
                           uint lane, thread float* totals) {
  const uint parts_per_block = md_block_values(w) / MD_QK;
  const uint parts = (cols + MD_QK - 1) / MD_QK;  // a float row's last part may be short
  float sums[MD_MATVEC_ROWS * TOKENS];
  for (uint i = 0; i < MD_MATVEC_ROWS * TOKENS; ++i) sums[i] = 0.0f;
  device const Block* row_at[MD_MATVEC_ROWS];
  for (uint r = 0; r < MD_MATVEC_ROWS; ++r) row_at[r] = md_row(w, first + r < rows ? first + r : first, cols);
  // Lane l takes 32-value parts l, l + 32, ...: whole blocks of the 0
  // types, and for the K types the eight parts of a super-block go to
  // eight neighbouring lanes. A token's x is loaded once per window of 32
  // parts into registers, where it serves every row:
  //  - a full window (32 parts, 1024 values) is loaded coalesced: load i
  //    reads part i's 32 values, lane l its value l (one 128-byte line),
  //    and md_simd_transpose32 hands each lane its own part's values;
  //  - the last window of a row whose parts are not a multiple of 32 (the
  //    only one of a short row) has each lane load its own part (one line
  //    per lane and load: such rows are small).
  // The values, and so every product and sum, are the same either way.
  for (uint base = 0; base < parts; base += MD_SIMD_WIDTH) {
    const uint u = base + lane;
    const bool active = u < parts;
    const bool full = parts - base >= MD_SIMD_WIDTH;  // the same for every lane
    const uint b = u / parts_per_block, part = u % parts_per_block;
    const uint n = active ? min(uint(MD_QK), cols - u * MD_QK) : 0u;
    for (uint t = 0; t < TOKENS && t < count; ++t) {
      device const float* xt = x + ulong(t) * cols;
      float xr[MD_QK];  // MD_QK == MD_SIMD_WIDTH: a part's values are a lane's row of the transpose
      if (full) {
        for (uint i = 0; i < MD_SIMD_WIDTH; ++i) xr[i] = xt[(base + i) * MD_QK + lane];
        md_simd_transpose32(xr, lane);
      } else {
        for (uint j = 0; j < n; ++j) xr[j] = xt[u * MD_QK + j];
      }
      for (uint r = 0; r < MD_MATVEC_ROWS; ++r) {
        if (first + r >= rows) continue;  // the same for every lane
        if (full) sums[r * TOKENS + t] += md_window_part_dot(row_at[r], base, lane, xr);
        else if (active) sums[r * TOKENS + t] += md_block_dot(row_at[r] + b, part, xr, n);
      }
    }
  }
  for (uint i = 0; i < MD_MATVEC_ROWS * TOKENS; ++i) totals[i] = simd_sum(sums[i]);
}

#endif  // MD_MATVEC_ROWS_H
