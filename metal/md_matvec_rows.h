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
  // eight neighbouring lanes. A token's 32 values of x are loaded once per
  // part into registers and serve every row of the SIMD group.
  for (uint u = lane; u < parts; u += MD_SIMD_WIDTH) {
    const uint b = u / parts_per_block, part = u % parts_per_block, n = min(uint(MD_QK), cols - u * MD_QK);
    for (uint t = 0; t < TOKENS && t < count; ++t) {
      device const float* xb = x + ulong(t) * cols + ulong(u) * MD_QK;
      float xr[MD_QK];
      for (uint j = 0; j < n; ++j) xr[j] = xb[j];
      for (uint r = 0; r < MD_MATVEC_ROWS; ++r) {
        if (first + r < rows) sums[r * TOKENS + t] += md_block_dot(row_at[r] + b, part, xr, n);
      }
    }
  }
  for (uint i = 0; i < MD_MATVEC_ROWS * TOKENS; ++i) totals[i] = simd_sum(sums[i]);
}

#endif  // MD_MATVEC_ROWS_H
