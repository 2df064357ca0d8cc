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
// SIMD group for its type (block_type, its values per block; a float row's
// "block" is 32 values).
#define MD_MATVEC_STAGE(block_type, block_values)                           \
  MD_THREADGROUP_ARRAY(uint, stage, (MD_MATVEC_MAX_THREADS / MD_SIMD_WIDTH) * \
                                        MD_MATVEC_STAGE_WORDS(sizeof(block_type), block_values))

// The batch form of a quantized type: a stage per SIMD group that holds
// all its rows' windows at once (md_window_sums).
#define MD_MATVEC_BATCH_STAGE(block_type, block_values)                     \
  MD_THREADGROUP_ARRAY(uint, stage, (MD_MATVEC_MAX_THREADS / MD_SIMD_WIDTH) * \
                                        MD_MATVEC_BATCH_STAGE_WORDS(sizeof(block_type), block_values))

// A full window of x (32 parts): load i reads part i, lane l its value l;
// the transpose hands each lane its own part.
inline void md_full_window_x(device const float* xt, uint base, uint lane, thread float* xr) {
  for (uint i = 0; i < MD_SIMD_WIDTH; ++i) xr[i] = xt[(base + i) * MD_QK + lane];
  md_simd_transpose32(xr, lane);  // MD_QK == MD_SIMD_WIDTH: a part's values are a lane's row of the transpose
}

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
    md_full_window_x(xt, base, lane, xr);
  } else if (base + lane < parts) {
    const uint u = base + lane, n = min(uint(MD_QK), cols - u * MD_QK);
    for (uint j = 0; j < n; ++j) xr[j] = xt[u * MD_QK + j];
  }
}

// ---- staging: a row's bytes into threadgroup memory, a line per load ----
//
// A lane's part of a quantized window is a block (or an eighth of a K
// super-block) at a block's stride: loaded by the lanes themselves, each
// load touched several lines for a few bytes of each; a float row's part
// loaded as x is straddles two lines wherever the matrix does not start
// on one (a GGUF aligns tensors to 32 bytes). So the SIMD group first
// copies the window's bytes into threadgroup memory a 128-byte line of
// memory per load (lane l word l), counting lines from `phase` bytes
// before w (where w starts in its line: md_matvec_params' line_phases),
// then reads its parts from there with the decoders it would use on
// device memory (md_block_values.h).
//  - Each load brings only the row's words (a row's first and last line
//    may be shared with its neighbours; their SIMD groups load the rest),
//    so every weight byte is loaded once (an odd row's two bytes of the
//    next row's first word aside: rows of an odd block count of a 2-byte
//    multiple).
//  - A window rarely ends on a line: its last line's remaining words are
//    the next window's first, kept in the row's carried line, so the
//    row's lines are loaded once each.
//  - A one-token kernel stages one row's window at a time and loads x's
//    window once for all its rows; the batch form of a quantized type
//    stages all its rows' windows, then loads each token's x window once
//    for all of them (a float type's batch form, whose windows are too
//    large for that, a row at a time, x once per row and token).

// This SIMD group's stage: a carried line per row, then the window's lines
// (`batch`: MD_MATVEC_BATCH_STAGE's, every row's window).
struct md_stage {
  threadgroup uint* carried;
  threadgroup uint* lines;
};
inline md_stage md_stage_of(threadgroup uint* stage, uint simd_index, uint block_bytes, uint block_values, bool batch) {
  md_stage s;
  s.carried = stage + simd_index * (batch ? MD_MATVEC_BATCH_STAGE_WORDS(block_bytes, block_values)
                                          : MD_MATVEC_STAGE_WORDS(block_bytes, block_values));
  s.lines = s.carried + MD_MATVEC_ROWS * MD_SIMD_WIDTH;
  return s;
}

// A line all of whose words are the row's: this lane's word, from the
// line's first word `first` (counted from w).
inline void md_stage_whole_line(device const uint* words, ulong first, uint lane, threadgroup uint* to) {
  *to = words[first + lane];
}

// A line at either end of a row: this lane's word of line `line` (counted
// from `phase` bytes before the matrix), or the row's nearest word, to `to`.
inline void md_stage_line(device const uint* words, device const md_u16* halves, ulong line, uint phase,
                          ulong first_word, ulong last_word, ulong matrix_end, uint lane, threadgroup uint* to) {
  const ulong at = min(max(line * MD_LINE_BYTES + 4 * lane, first_word + phase), last_word + phase) - phase;
  if (at + 4 <= matrix_end) *to = words[at / 4];
  else *(threadgroup md_u16*)to = halves[at / 2];  // the matrix ends 2 bytes into this word
}

// The row's bytes [begin, end) (offsets from w) into the stage's lines,
// after the row's carried line where the last window left it; returns
// where `begin` is in them.
inline uint md_stage_bytes(device const md_u8* w, uint phase, ulong row_begin, ulong row_end, ulong matrix_end,
                           ulong begin, ulong end, uint lane, threadgroup const uint* carry, threadgroup uint* lines) {
  const ulong first_line = (begin + phase) / MD_LINE_BYTES, last_line = (end - 1 + phase) / MD_LINE_BYTES;
  const bool carried = begin != row_begin && (begin + phase) % MD_LINE_BYTES != 0;  // the row's last window loaded this line
  if (carried) lines[lane] = carry[lane];
  device const uint* words = (device const uint*)w;
  device const md_u16* halves = (device const md_u16*)w;
  // A lane whose word of the line is not the row's loads the row's nearest
  // word instead (in the same line, which the others load): every lane runs
  // every load, so each stays one instruction of 32 lanes with the row's
  // bytes only. Its copy lands where nothing reads it.
  // Only a row's first and last lines need that (and the matrix's last):
  // the lines between, [inner_begin, inner_end), are the row's whole, a
  // load per lane.
  const ulong first_word = row_begin & ~ulong(3), last_word = (row_end - 1) & ~ulong(3);
  const ulong from = first_line + (carried ? 1 : 0);
  const ulong inner_begin = max(from, (first_word + phase + MD_LINE_BYTES - 1) / MD_LINE_BYTES);
  const ulong inner_end =
      max(inner_begin, min(last_line + 1, (min(last_word + 4, matrix_end) + phase) / MD_LINE_BYTES));
  threadgroup uint* to = lines + lane;
  for (ulong line = from; line < inner_begin; ++line)
    md_stage_line(words, halves, line, phase, first_word, last_word, matrix_end, lane, to + (line - first_line) * MD_SIMD_WIDTH);
  for (ulong line = inner_begin; line < inner_end; ++line)
    md_stage_whole_line(words, (line * MD_LINE_BYTES - phase) / 4, lane, to + (line - first_line) * MD_SIMD_WIDTH);
  for (ulong line = inner_end; line <= last_line; ++line)
    md_stage_line(words, halves, line, phase, first_word, last_word, matrix_end, lane, to + (line - first_line) * MD_SIMD_WIDTH);
  return uint(begin + phase - first_line * MD_LINE_BYTES);
}

// After every lane has read the window (whose `bytes` start at `at` in the
// lines): its last line's words past `end` are the row's next window's
// first, kept in the row's carried line.
inline void md_carry_line(uint phase, ulong end, ulong row_end, uint at, uint bytes, uint lane, threadgroup uint* carry,
                          threadgroup const uint* lines) {
  if (end != row_end && (end + phase) % MD_LINE_BYTES != 0)
    carry[lane] = lines[(at + bytes - 1) / MD_LINE_BYTES * MD_SIMD_WIDTH + lane];
}

// ---- float rows ---------------------------------------------------------------

// Value j of a staged float window.
inline float md_staged_value(device const md_block_f32*, threadgroup const md_u8* window, uint j) {
  return ((threadgroup const float*)window)[j];
}
inline float md_staged_value(device const md_block_f16*, threadgroup const md_u8* window, uint j) {
  return float(((threadgroup const half*)window)[j]);
}
inline float md_staged_value(device const md_block_bf16*, threadgroup const md_u8* window, uint j) {
  return as_type<float>(uint(((threadgroup const md_u16*)window)[j]) << 16);
}

// A full staged window's values for this lane: its part's 32 (read as x
// is, then transposed).
template <typename Block>
inline void md_staged_float_part(device const Block* w, threadgroup const md_u8* window, uint lane, thread float* wr) {
  for (uint i = 0; i < MD_SIMD_WIDTH; ++i) wr[i] = md_staged_value(w, window, i * MD_QK + lane);
  md_simd_transpose32(wr, lane);
}
// A part's dot, in md_block_dot's order.
inline float md_part_dot(thread const float* wr, thread const float* xr) {
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) sum += wr[j] * xr[j];
  return sum;
}

// One window of a float matrix's rows first .. first + MD_MATVEC_ROWS_FOR(TOKENS) - 1
// for each token, into sums[r * TOKENS + t]. A float row may have any
// length: its last part may be short. A full window is read from the stage
// as x is from memory, lane l value l of each part (conflict-free: lanes
// read consecutive words), and md_simd_transpose32 hands each lane its own
// part; its products are summed in md_block_dot's order: the same bits.
template <typename Block, uint TOKENS>
inline void md_float_window_sums(device const Block* w, uint phase, device const float* x, uint rows, uint cols,
                                 uint count, uint first, uint base, uint lane, uint simd_index, threadgroup uint* stage,
                                 thread float* sums) {
  const uint value_bytes = sizeof(Block) / MD_QK;
  const uint parts = (cols + MD_QK - 1) / MD_QK, u = base + lane;
  const bool full = parts - base >= MD_SIMD_WIDTH;  // the same for every lane
  const uint n = u < parts ? min(uint(MD_QK), cols - u * MD_QK) : 0u;
  const ulong row_bytes = ulong(cols) * value_bytes, matrix_end = ulong(rows) * row_bytes;
  const uint window_bytes = (min(cols, (base + MD_SIMD_WIDTH) * MD_QK) - base * MD_QK) * value_bytes;
  const md_stage st = md_stage_of(stage, simd_index, sizeof(Block), MD_QK, false);
  float xr[MD_QK], wr[MD_QK];
  for (uint r = 0; r < MD_MATVEC_ROWS_FOR(TOKENS); ++r) {
    if (first + r >= rows) break;  // the same for every lane
    const ulong row_begin = ulong(first + r) * row_bytes, row_end = row_begin + row_bytes;
    const ulong begin = row_begin + ulong(base) * MD_QK * value_bytes, end = begin + window_bytes;
    threadgroup uint* carry = st.carried + r * MD_SIMD_WIDTH;
    const uint at = md_stage_bytes((device const md_u8*)w, phase, row_begin, row_end, matrix_end, begin, end, lane,
                                   carry, st.lines);
    simdgroup_barrier(mem_flags::mem_threadgroup);  // every lane's words are in
    threadgroup const md_u8* window = (threadgroup const md_u8*)st.lines + at;
    if (full) md_staged_float_part(w, window, lane, wr);
    for (uint t = 0; t < TOKENS && t < count; ++t) {
      if (TOKENS > 1 || r == 0) md_window_x(x + ulong(t) * cols, base, parts, cols, lane, xr);
      if (full) {
        sums[r * TOKENS + t] += md_part_dot(wr, xr);
      } else if (u < parts) {
        threadgroup const Block* part = (threadgroup const Block*)(window + lane * MD_QK * value_bytes);
        sums[r * TOKENS + t] += md_block_dot<md_threadgroup_space>(part, 0, xr, n);
      }
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);  // every lane has read them
    md_carry_line(phase, end, row_end, at, window_bytes, lane, carry, st.lines);
  }
}

template <uint TOKENS>
inline void md_window_sums(device const md_block_f32* w, uint phase, device const float* x, uint rows, uint cols,
                           uint count, uint first, uint base, uint lane, uint simd_index, threadgroup uint* stage,
                           thread float* sums) {
  md_float_window_sums<md_block_f32, TOKENS>(w, phase, x, rows, cols, count, first, base, lane, simd_index, stage, sums);
}
template <uint TOKENS>
inline void md_window_sums(device const md_block_f16* w, uint phase, device const float* x, uint rows, uint cols,
                           uint count, uint first, uint base, uint lane, uint simd_index, threadgroup uint* stage,
                           thread float* sums) {
  md_float_window_sums<md_block_f16, TOKENS>(w, phase, x, rows, cols, count, first, base, lane, simd_index, stage, sums);
}
template <uint TOKENS>
inline void md_window_sums(device const md_block_bf16* w, uint phase, device const float* x, uint rows, uint cols,
                           uint count, uint first, uint base, uint lane, uint simd_index, threadgroup uint* stage,
                           thread float* sums) {
  md_float_window_sums<md_block_bf16, TOKENS>(w, phase, x, rows, cols, count, first, base, lane, simd_index, stage, sums);
}

// ---- quantized rows -------------------------------------------------------------

// x's sums over the two halves of a lane's part, in order: the quantized
// dots fold their offsets into them.
inline md_x_sums md_half_sums(thread const float* xr) {
  md_x_sums s;
  s.low = 0.0f;
  s.high = 0.0f;
  for (uint j = 0; j < MD_QK / 2; ++j) s.low += xr[j];
  for (uint j = MD_QK / 2; j < MD_QK; ++j) s.high += xr[j];
  return s;
}

// One window of a quantized matrix's rows: each lane's part read from the
// stage by md_block_dot, whole blocks (a quantized row is whole blocks).
// One token: a row's window staged at a time, x's window loaded once for
// all the rows. Several (the batch form): every row's window staged first
// (MD_MATVEC_BATCH_STAGE), then each token's x window loaded once and
// dotted with every row, so a token's x costs what it costs one token
// alone per MD_MATVEC_BATCH_ROWS rows. Each (row, token) sum still takes
// its windows in order with the one-token kernel's dot: the same bits.
template <uint TOKENS, typename Block>
inline void md_window_sums(device const Block* w, uint phase, device const float* x, uint rows, uint cols, uint count,
                           uint first, uint base, uint lane, uint simd_index, threadgroup uint* stage,
                           thread float* sums) {
  const uint values = md_block_values(w), parts_per_block = values / MD_QK;
  const uint parts = cols / MD_QK, u = base + lane;
  const ulong row_bytes = ulong(cols / values) * sizeof(Block), matrix_end = ulong(rows) * row_bytes;
  const uint end_part = min(base + MD_SIMD_WIDTH, parts);
  const uint window_bytes = (end_part / parts_per_block - base / parts_per_block) * sizeof(Block);
  const md_stage st = md_stage_of(stage, simd_index, sizeof(Block), values, TOKENS > 1);
  // Each staged row's lines: one row at a time for one token, every row of the batch form at once.
  const uint row_lines = TOKENS > 1 ? MD_MATVEC_STAGE_LINES(sizeof(Block), values) * MD_SIMD_WIDTH : 0u;
  const uint staged_rows = TOKENS > 1 ? MD_MATVEC_ROWS_FOR(TOKENS) : 1u;
  float xr[MD_QK];
  md_x_sums xs;
  for (uint r0 = 0; r0 < MD_MATVEC_ROWS_FOR(TOKENS); r0 += staged_rows) {
    uint at[TOKENS > 1 ? MD_MATVEC_ROWS_FOR(TOKENS) : 1u];
    uint n = 0;  // rows staged in this pass
    for (; n < staged_rows && first + r0 + n < rows; ++n) {  // the same for every lane
      const uint r = r0 + n;
      const ulong row_begin = ulong(first + r) * row_bytes, row_end = row_begin + row_bytes;
      const ulong begin = row_begin + ulong(base / parts_per_block) * sizeof(Block), end = begin + window_bytes;
      at[n] = md_stage_bytes((device const md_u8*)w, phase, row_begin, row_end, matrix_end, begin, end, lane,
                             st.carried + r * MD_SIMD_WIDTH, st.lines + n * row_lines);
    }
    if (n == 0) break;
    simdgroup_barrier(mem_flags::mem_threadgroup);  // every lane's words are in
    for (uint t = 0; t < TOKENS && t < count; ++t) {
      if (TOKENS > 1 || r0 == 0) {
        md_window_x(x + ulong(t) * cols, base, parts, cols, lane, xr);
        xs = md_half_sums(xr);
      }
      for (uint k = 0; k < n; ++k) {
        threadgroup const Block* block =
            (threadgroup const Block*)((threadgroup const md_u8*)(st.lines + k * row_lines) + at[k]) +
            (u / parts_per_block - base / parts_per_block);
        if (u < parts) sums[(r0 + k) * TOKENS + t] += md_block_dot<md_threadgroup_space>(block, u % parts_per_block, xr, xs);
      }
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);  // every lane has read them
    for (uint k = 0; k < n; ++k) {
      const uint r = r0 + k;
      const ulong row_begin = ulong(first + r) * row_bytes, row_end = row_begin + row_bytes;
      const ulong end = row_begin + ulong(base / parts_per_block) * sizeof(Block) + window_bytes;
      md_carry_line(phase, end, row_end, at[k], window_bytes, lane, st.carried + r * MD_SIMD_WIDTH, st.lines + k * row_lines);
    }
  }
}

// ---- the rows ---------------------------------------------------------------

// Rows first .. first + MD_MATVEC_ROWS_FOR(TOKENS) - 1 (those below `rows`) of W x
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
  float sums[MD_MATVEC_ROWS_FOR(TOKENS) * TOKENS];
  for (uint i = 0; i < MD_MATVEC_ROWS_FOR(TOKENS) * TOKENS; ++i) sums[i] = 0.0f;
  for (uint base = 0; base < parts; base += MD_SIMD_WIDTH)
    md_window_sums<TOKENS>(w, phase, x, rows, cols, count, first, base, lane, simd_index, stage, sums);
  for (uint i = 0; i < MD_MATVEC_ROWS_FOR(TOKENS) * TOKENS; ++i) totals[i] = simd_sum(sums[i]);
}

#endif  // MD_MATVEC_ROWS_H
