// md_matvec_rows.h: the one definition of how the matrix-vector kernels
// sum a row of W x: shared by matvec.metal (which stores the rows) and
// head_sampling.metal (which picks a token from them without storing
// them), so the two give every logit the same bits.
#ifndef MD_MATVEC_ROWS_H
#define MD_MATVEC_ROWS_H

#include "md_kernel.h"
#include "md_block_values.h"
#include "md_transformer.h"

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
        if (active && first + r < rows) sums[r * TOKENS + t] += md_block_dot(row_at[r] + b, part, xr, n);
      }
    }
  }
  for (uint i = 0; i < MD_MATVEC_ROWS * TOKENS; ++i) totals[i] = simd_sum(sums[i]);
}

#endif  // MD_MATVEC_ROWS_H
