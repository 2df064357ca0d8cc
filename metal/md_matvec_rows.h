// md_matvec_rows.h: the one definition of how the matrix-vector kernels
// sum a row of W x: shared by matvec.metal (which stores the rows) and
// head_sampling.metal (which picks a token from them without storing
// them), so the two give every logit the same bits.
#ifndef MD_MATVEC_ROWS_H
#define MD_MATVEC_ROWS_H

#include "md_kernel.h"
#include "md_block_values.h"
#include "md_transformer.h"

// The threadgroup memory a kernel declares for md_matvec_rows: a stage per
// SIMD group for a quantized type (block_type, its values per block); float
// rows are not staged, and their kernels declare one unused word.
#define MD_MATVEC_STAGE(block_type, block_values)                           \
  MD_THREADGROUP_ARRAY(uint, stage, (MD_MATVEC_MAX_THREADS / MD_SIMD_WIDTH) * \
                                        MD_MATVEC_STAGE_WORDS(sizeof(block_type), block_values))
#define MD_MATVEC_NO_STAGE MD_THREADGROUP_ARRAY(uint, stage, 1)

// Token t's x for this lane's part of the window at `base` (parts of 32
// values), into xr:
//  - a full window (32 parts, 1024 values) is loaded coalesced: load i
//    reads part i's 32 values, lane l its value l (one 128-byte line), and
//    md_simd_transpose32 hands each lane its own part's values;
//  - the last window of a row whose parts are not a multiple of 32 (the
//    only one of a short row) has each lane load its own part (one line
//    per lane and load: such rows are small).
// The values are the same either way. Every lane must call it (it shuffles).
inline void md_window_x(device const float* xt, uint base, uint parts, uint cols, uint lane, thread float* xr) {
  if (parts - base >= MD_SIMD_WIDTH) {  // the same for every lane
    for (uint i = 0; i < MD_SIMD_WIDTH; ++i) xr[i] = xt[(base + i) * MD_QK + lane];
    md_simd_transpose32(xr, lane);  // MD_QK == MD_SIMD_WIDTH: a part's values are a lane's row of the transpose
  } else if (base + lane < parts) {
    const uint u = base + lane, n = min(uint(MD_QK), cols - u * MD_QK);
    for (uint j = 0; j < n; ++j) xr[j] = xt[u * MD_QK + j];
  }
}

// ---- float rows: loaded as x is ---------------------------------------------

// A float row's full window is loaded as x's is, coalesced: load i reads
// part base + i, lane l its value l (one line, or half a line of float16),
// and md_simd_transpose32 hands each lane its own part. Each lane loading
// its own part touched a line per lane per load. The products are summed
// in md_block_dot's order: the same bits.
template <typename Block>
inline float md_float_window_dot(device const Block* row, uint base, uint lane, thread const float* x) {
  float w[MD_QK];
  for (uint i = 0; i < MD_SIMD_WIDTH; ++i) w[i] = md_block_value(row + base + i, lane);
  md_simd_transpose32(w, lane);
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) sum += w[j] * x[j];
  return sum;
}

// One window of a float matrix's rows first .. first + MD_MATVEC_ROWS - 1
// for each token, into sums[r * TOKENS + t]. A float row may have any
// length: its last part may be short.
template <typename Block, uint TOKENS>
inline void md_float_window_sums(device const Block* w, device const float* x, uint rows, uint cols, uint count,
                                 uint first, uint base, uint lane, thread float* sums) {
  const uint parts = (cols + MD_QK - 1) / MD_QK, u = base + lane;
  const bool full = parts - base >= MD_SIMD_WIDTH;  // the same for every lane
  const uint n = u < parts ? min(uint(MD_QK), cols - u * MD_QK) : 0u;
  for (uint t = 0; t < TOKENS && t < count; ++t) {
    float xr[MD_QK];
    md_window_x(x + ulong(t) * cols, base, parts, cols, lane, xr);
    for (uint r = 0; r < MD_MATVEC_ROWS; ++r) {
      if (first + r >= rows) break;  // the same for every lane
      device const Block* row = md_row(w, first + r, cols);
      if (full) sums[r * TOKENS + t] += md_float_window_dot(row, base, lane, xr);
      else if (u < parts) sums[r * TOKENS + t] += md_block_dot<md_device_space>(row + u, 0, xr, n);
    }
  }
}

template <uint TOKENS>
inline void md_window_sums(device const md_block_f32* w, uint, device const float* x, uint rows, uint cols, uint count,
                           uint first, uint base, uint lane, uint, threadgroup uint*, thread float* sums) {
  md_float_window_sums<md_block_f32, TOKENS>(w, x, rows, cols, count, first, base, lane, sums);
}
template <uint TOKENS>
inline void md_window_sums(device const md_block_f16* w, uint, device const float* x, uint rows, uint cols, uint count,
                           uint first, uint base, uint lane, uint, threadgroup uint*, thread float* sums) {
  md_float_window_sums<md_block_f16, TOKENS>(w, x, rows, cols, count, first, base, lane, sums);
}
template <uint TOKENS>
inline void md_window_sums(device const md_block_bf16* w, uint, device const float* x, uint rows, uint cols, uint count,
                           uint first, uint base, uint lane, uint, threadgroup uint*, thread float* sums) {
  md_float_window_sums<md_block_bf16, TOKENS>(w, x, rows, cols, count, first, base, lane, sums);
}

// ---- quantized rows: staged a line per load ---------------------------------
//
// A lane's part of a quantized window is a block (or an eighth of a K
// super-block) at a block's stride: loaded by the lanes themselves, each
// load touched several lines for a few bytes of each. So the SIMD group
// first copies the window's bytes into threadgroup memory a 128-byte line
// per load (lane l word l), counting lines from the matrix's first byte,
// then each lane reads its part from there with the same md_block_dot: the
// same values, products and sums, so the same bits.
//  - Each load brings only the row's words (a row's first and last line
//    may be shared with its neighbours; their SIMD groups load the rest),
//    so every weight byte is loaded once (an odd row's two bytes of the
//    next row's first word aside: rows of an odd block count of a 2-byte
//    multiple).
//  - A window rarely ends on a line: its last line's remaining words are
//    the next window's first, kept in the row's carried line, so the
//    row's lines are loaded once each.
//  - One row's window at a time: x's window is loaded once for all rows of
//    a one-token kernel, once per row for a batch (from cache).

// Row r's window at `base` into the stage's lines; returns the byte offset
// of the window's first block in them. Lines are counted from `phase`
// bytes before w (w's offset in its line), so each is a line of memory.
template <typename Block>
inline uint md_stage_window(device const Block* w, uint phase, ulong row_begin, ulong row_end, ulong matrix_end,
                            uint base, uint end_part, uint lane, threadgroup uint* carry, threadgroup uint* lines) {
  const uint parts_per_block = md_block_values(w) / MD_QK;
  const ulong begin = row_begin + ulong(base / parts_per_block) * sizeof(Block);
  const ulong end = row_begin + ulong(end_part / parts_per_block) * sizeof(Block);
  const ulong first_line = (begin + phase) / MD_LINE_BYTES, last_line = (end - 1 + phase) / MD_LINE_BYTES;
  const bool carried = begin != row_begin && (begin + phase) % MD_LINE_BYTES != 0;  // the row's last window loaded this line
  if (carried) lines[lane] = carry[lane];
  device const uint* words = (device const uint*)w;
  device const md_u16* halves = (device const md_u16*)w;
  // A lane whose word of the line is not the row's loads the row's nearest
  // word instead (in the same line, which the others load): every lane runs
  // every load, so each stays one instruction of 32 lanes with the row's
  // bytes only. Its copy lands where nothing reads it.
  const ulong first_word = row_begin & ~ulong(3), last_word = (row_end - 1) & ~ulong(3);
  for (ulong line = first_line + (carried ? 1 : 0); line <= last_line; ++line) {
    const ulong at = min(max(line * MD_LINE_BYTES + 4 * lane, first_word + phase), last_word + phase) - phase;
    threadgroup uint* to = lines + uint(line - first_line) * MD_SIMD_WIDTH + lane;
    if (at + 4 <= matrix_end) *to = words[at / 4];
    else *(threadgroup md_u16*)to = halves[at / 2];  // the matrix ends 2 bytes into this word
  }
  return uint(begin + phase - first_line * MD_LINE_BYTES);
}

template <uint TOKENS, typename Block>
inline void md_window_sums(device const Block* w, uint phase, device const float* x, uint rows, uint cols, uint count,
                           uint first, uint base, uint lane, uint simd_index, threadgroup uint* stage,
                           thread float* sums) {
  const uint values = md_block_values(w), parts_per_block = values / MD_QK;
  const uint parts = cols / MD_QK, u = base + lane, end_part = min(base + MD_SIMD_WIDTH, parts);
  const ulong row_bytes = ulong(cols / values) * sizeof(Block), matrix_end = ulong(rows) * row_bytes;
  threadgroup uint* carried = stage + simd_index * MD_MATVEC_STAGE_WORDS(sizeof(Block), values);
  threadgroup uint* lines = carried + MD_MATVEC_ROWS * MD_SIMD_WIDTH;
  float xr[MD_QK];
  for (uint r = 0; r < MD_MATVEC_ROWS; ++r) {
    if (first + r >= rows) break;  // the same for every lane
    const ulong row_begin = ulong(first + r) * row_bytes, row_end = row_begin + row_bytes;
    threadgroup uint* carry = carried + r * MD_SIMD_WIDTH;
    const uint at = md_stage_window(w, phase, row_begin, row_end, matrix_end, base, end_part, lane, carry, lines);
    simdgroup_barrier(mem_flags::mem_threadgroup);  // every lane's words are in
    threadgroup const Block* block =
        (threadgroup const Block*)((threadgroup const md_u8*)lines + at) + (u / parts_per_block - base / parts_per_block);
    for (uint t = 0; t < TOKENS && t < count; ++t) {
      if (TOKENS > 1 || r == 0) md_window_x(x + ulong(t) * cols, base, parts, cols, lane, xr);
      if (u < parts) sums[r * TOKENS + t] += md_block_dot<md_threadgroup_space>(block, u % parts_per_block, xr, MD_QK);
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);  // every lane has read them
    // The last line's words past the window are the next window's first.
    const ulong end = row_begin + ulong(end_part / parts_per_block) * sizeof(Block);
    const uint window_bytes = (end_part / parts_per_block - base / parts_per_block) * sizeof(Block);
    if (end != row_end && (end + phase) % MD_LINE_BYTES != 0) carry[lane] = lines[(at + window_bytes - 1) / MD_LINE_BYTES * MD_SIMD_WIDTH + lane];
  }
}

// ---- the rows ---------------------------------------------------------------

// Rows first .. first + MD_MATVEC_ROWS - 1 (those below `rows`) of W x
// for each of the `count` (at most TOKENS) rows of x, summed over the SIMD
// group: every lane gets the totals, totals[r * TOKENS + t]. Lane l takes
// 32-value parts l, l + 32, ... (whole blocks of the 0 types; for the K
// types the eight parts of a super-block go to eight neighbouring lanes),
// a window of 32 parts at a time. Each token's sums take the same steps
// whatever the count, so a batch gives each token the bits it gets alone.
// `stage` is the kernel's MD_MATVEC_STAGE array; `phase` where w starts in
// its 128-byte line.
template <typename Block, uint TOKENS>
inline void md_matvec_rows(device const Block* w, uint phase, device const float* x, uint rows, uint cols, uint count,
                           uint first, uint lane, uint simd_index, threadgroup uint* stage, thread float* totals) {
  const uint parts = (cols + MD_QK - 1) / MD_QK;  // a float row's last part may be short
  float sums[MD_MATVEC_ROWS * TOKENS];
  for (uint i = 0; i < MD_MATVEC_ROWS * TOKENS; ++i) sums[i] = 0.0f;
  for (uint base = 0; base < parts; base += MD_SIMD_WIDTH)
    md_window_sums<TOKENS>(w, phase, x, rows, cols, count, first, base, lane, simd_index, stage, sums);
  for (uint i = 0; i < MD_MATVEC_ROWS * TOKENS; ++i) totals[i] = simd_sum(sums[i]);
}

#endif  // MD_MATVEC_ROWS_H
