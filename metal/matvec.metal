// matvec.metal: y = W x for one activation vector, the one-token forward
// pass's projections and LM head, with W in a GGUF type read in place
// (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_XS: every type
// the CPU reads; the block layouts are metal/md_blocks.h's), for up to
// three matrices that read the same x in one dispatch (md_matvec_params).
// The CPU twin is the dequantized row's dot product (the tests compare
// them).
//
// Layout: each SIMD group computes MD_MATVEC_ROWS rows (the batch form
// MD_MATVEC_BATCH_ROWS), a window of 32
// parts (1024 values) at a time: lane l takes part l of the window. A
// row's window is staged in threadgroup memory a 128-byte line of memory
// per load, then each lane reads its part from there; x's window is loaded
// once for all the SIMD group's rows (md_matvec_rows.h has the details).
// Each row's 32 partial sums are added by simd_sum and lane 0 writes the
// row. Decode is bound by reading W once; x stays in cache. With SwiGLU a
// SIMD group computes its rows of both matrices, so the gate and up sums
// meet in registers.
//
// md_matvec_id_* (mixture-of-experts layers, md_matvec_id_params) runs
// the same rows for one (token, slot) pair per group of threadgroups, on
// the matrix of the expert the router chose for it: only the chosen
// experts' rows are read, each pair's row with md_matvec_*'s bits.
//
// md_matvec_batch_* does the same for up to MD_MATVEC_BATCH tokens: each
// block of W is read once for all of them, and each token's sums take the
// steps they take alone (speculative verification evaluates a draft so,
// and must give the tokens that one-token steps give).
#include "md_kernel.h"
#include "md_block_values.h"
#include "md_transformer.h"
#include "md_matvec_rows.h"

// Where W_m starts in its 128-byte line.
inline uint md_line_phase(md_matvec_params params, uint m) { return (params.line_phases >> (8u * m)) & 0xffu; }

// The params in thread memory, field by field (a struct is not copied
// from the constant address space as a whole), so that the indexed form
// can pass its own.
inline md_matvec_params md_matvec_params_of(constant md_matvec_params& c) {
  md_matvec_params p;
  p.cols = c.cols;
  p.mode = c.mode;
  for (uint m = 0; m < 3; ++m) p.rows[m] = c.rows[m];
  p.count = c.count;
  p.line_phases = c.line_phases;
  p.reserved = c.reserved;
  return p;
}

template <typename Block, uint TOKENS>
inline void md_matvec(device const Block* w0, device const Block* w1, device const Block* w2, device const float* x,
                      device float* y0, device float* y1, device float* y2, md_matvec_params params,
                      uint group, uint simd_index, uint lane, uint simdgroups, threadgroup uint* stage) {
  uint s = group * simdgroups + simd_index;  // this SIMD group among all of the grid
  const uint simd_rows = MD_MATVEC_ROWS_FOR(TOKENS);
  const uint count = min(params.count, TOKENS), cols = params.cols;
  float totals[MD_MATVEC_ROWS_FOR(TOKENS) * TOKENS];
  if (params.mode == MD_MATVEC_SWIGLU) {
    const uint rows = params.rows[0], first = s * simd_rows;
    if (first >= rows) return;  // the whole SIMD group: simd_sum needs every lane or none
    float up[MD_MATVEC_ROWS_FOR(TOKENS) * TOKENS];
    md_matvec_rows<Block, TOKENS>(w0, md_line_phase(params, 0), x, rows, cols, count, first, lane, simd_index, stage, totals);
    md_matvec_rows<Block, TOKENS>(w1, md_line_phase(params, 1), x, rows, cols, count, first, lane, simd_index, stage, up);
    for (uint t = 0; t < count; ++t) {
      for (uint r = 0; r < simd_rows; ++r) {
        const float g = totals[r * TOKENS + t];
        if (lane == 0 && first + r < rows) y0[ulong(t) * rows + first + r] = g / (1.0f + exp(-g)) * up[r * TOKENS + t];
      }
    }
    return;
  }
  // Which matrix: W_0's SIMD groups first, then W_1's, then W_2's.
  device const Block* w = w0;
  device float* y = y0;
  uint rows = params.rows[0], matrix = 0;
  const uint groups0 = (params.rows[0] + simd_rows - 1) / simd_rows;
  const uint groups1 = (params.rows[1] + simd_rows - 1) / simd_rows;
  if (s >= groups0) {
    s -= groups0;
    w = w1;
    y = y1;
    rows = params.rows[1];
    matrix = 1;
    if (s >= groups1) {
      s -= groups1;
      w = w2;
      y = y2;
      rows = params.rows[2];
      matrix = 2;
    }
  }
  const uint first = s * simd_rows;
  if (first >= rows) return;  // the whole SIMD group, as above
  md_matvec_rows<Block, TOKENS>(w, md_line_phase(params, matrix), x, rows, cols, count, first, lane, simd_index, stage, totals);
  for (uint t = 0; t < count; ++t) {
    for (uint r = 0; r < simd_rows; ++r) {
      device float* out = y + ulong(t) * rows + first + r;
      if (lane == 0 && first + r < rows) *out = params.mode == MD_MATVEC_ACCUMULATE ? *out + totals[r * TOKENS + t] : totals[r * TOKENS + t];
    }
  }
}

// One (token, slot) pair's rows on its expert's matrices: the threadgroups
// of a pair are MD_MATVEC_ID_GROUPS(rows, SIMD groups) in a row.
template <typename Block>
inline void md_matvec_id(device const Block* w0, device const Block* w1, device const float* x, device float* y,
                         device const uint* ids, constant md_matvec_id_params& params, uint group, uint simd_index,
                         uint lane, uint simdgroups, threadgroup uint* stage) {
  const uint per_pair = MD_MATVEC_ID_GROUPS(params.rows, simdgroups);
  const uint pair = group / per_pair;
  if (pair >= params.pairs) return;
  const uint expert = ids[pair];
  if (expert >= params.experts) return;  // not a router's choice: nothing to read
  const ulong offset = ulong(expert) * params.expert_bytes;
  const uint shift = uint(offset % MD_LINE_BYTES);
  md_matvec_params p;
  p.cols = params.cols;
  p.mode = params.mode;
  p.rows[0] = params.rows;
  p.rows[1] = params.mode == MD_MATVEC_SWIGLU ? params.rows : 0u;
  p.rows[2] = 0u;
  p.count = 1u;
  p.line_phases = MD_LINE_PHASES(((params.line_phases & 0xffu) + shift) % MD_LINE_BYTES,
                                 (((params.line_phases >> 8u) & 0xffu) + shift) % MD_LINE_BYTES, 0u);
  p.reserved = 0u;
  device const Block* e0 = (device const Block*)((device const uchar*)w0 + offset);
  device const Block* e1 = (device const Block*)((device const uchar*)w1 + offset);
  device float* out = y + ulong(pair) * params.rows;
  md_matvec<Block, 1>(e0, e1, e0, x + ulong(params.x_per_pair != 0u ? pair : pair / params.used) * params.cols, out,
                      out, out, p, group % per_pair, simd_index, lane, simdgroups, stage);
}

kernel void md_matvec_f32(device const md_block_f32* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                          constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                          device const md_block_f32* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                          device const md_block_f32* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_f32, MD_QK);
  md_matvec<md_block_f32, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_f16(device const md_block_f16* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                          constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                          device const md_block_f16* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                          device const md_block_f16* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_f16, MD_QK);
  md_matvec<md_block_f16, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_bf16(device const md_block_bf16* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_bf16* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_bf16* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_bf16, MD_QK);
  md_matvec<md_block_bf16, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_q8_0(device const md_block_q8_0* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_q8_0* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_q8_0* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q8_0, MD_QK);
  md_matvec<md_block_q8_0, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_q4_0(device const md_block_q4_0* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_q4_0* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_q4_0* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q4_0, MD_QK);
  md_matvec<md_block_q4_0, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_q4_1(device const md_block_q4_1* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_q4_1* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_q4_1* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q4_1, MD_QK);
  md_matvec<md_block_q4_1, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_q5_0(device const md_block_q5_0* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_q5_0* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_q5_0* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q5_0, MD_QK);
  md_matvec<md_block_q5_0, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_q4_k(device const md_block_q4_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_q4_k* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_q4_k* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q4_k, MD_QK_K);
  md_matvec<md_block_q4_k, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_q5_k(device const md_block_q5_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_q5_k* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_q5_k* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q5_k, MD_QK_K);
  md_matvec<md_block_q5_k, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_q6_k(device const md_block_q6_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_q6_k* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_q6_k* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q6_k, MD_QK_K);
  md_matvec<md_block_q6_k, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_q5_1(device const md_block_q5_1* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_q5_1* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_q5_1* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q5_1, MD_QK);
  md_matvec<md_block_q5_1, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_iq4_nl(device const md_block_iq4_nl* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                             constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                             device const md_block_iq4_nl* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                             device const md_block_iq4_nl* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_iq4_nl, MD_QK);
  md_matvec<md_block_iq4_nl, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_q2_k(device const md_block_q2_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_q2_k* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_q2_k* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q2_k, MD_QK_K);
  md_matvec<md_block_q2_k, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_q3_k(device const md_block_q3_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const md_block_q3_k* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                           device const md_block_q3_k* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q3_k, MD_QK_K);
  md_matvec<md_block_q3_k, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_iq4_xs(device const md_block_iq4_xs* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                             constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                             device const md_block_iq4_xs* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                             device const md_block_iq4_xs* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_iq4_xs, MD_QK_K);
  md_matvec<md_block_iq4_xs, 1>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

// The same for up to MD_MATVEC_BATCH tokens (params.count).
kernel void md_matvec_batch_f32(device const md_block_f32* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                device const md_block_f32* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                device const md_block_f32* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_f32, MD_QK);
  md_matvec<md_block_f32, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_f16(device const md_block_f16* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                device const md_block_f16* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                device const md_block_f16* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_f16, MD_QK);
  md_matvec<md_block_f16, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_bf16(device const md_block_bf16* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_bf16* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_bf16* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_bf16, MD_QK);
  md_matvec<md_block_bf16, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_q8_0(device const md_block_q8_0* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_q8_0* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_q8_0* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_q8_0, MD_QK);
  md_matvec<md_block_q8_0, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_q4_0(device const md_block_q4_0* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_q4_0* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_q4_0* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_q4_0, MD_QK);
  md_matvec<md_block_q4_0, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_q4_1(device const md_block_q4_1* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_q4_1* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_q4_1* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_q4_1, MD_QK);
  md_matvec<md_block_q4_1, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_q5_0(device const md_block_q5_0* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_q5_0* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_q5_0* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_q5_0, MD_QK);
  md_matvec<md_block_q5_0, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_q4_k(device const md_block_q4_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_q4_k* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_q4_k* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_q4_k, MD_QK_K);
  md_matvec<md_block_q4_k, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_q5_k(device const md_block_q5_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_q5_k* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_q5_k* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_q5_k, MD_QK_K);
  md_matvec<md_block_q5_k, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_q6_k(device const md_block_q6_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_q6_k* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_q6_k* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_q6_k, MD_QK_K);
  md_matvec<md_block_q6_k, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_q5_1(device const md_block_q5_1* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_q5_1* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_q5_1* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_q5_1, MD_QK);
  md_matvec<md_block_q5_1, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_iq4_nl(device const md_block_iq4_nl* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                   constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                   device const md_block_iq4_nl* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                   device const md_block_iq4_nl* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_iq4_nl, MD_QK);
  md_matvec<md_block_iq4_nl, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_q2_k(device const md_block_q2_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_q2_k* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_q2_k* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_q2_k, MD_QK_K);
  md_matvec<md_block_q2_k, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_q3_k(device const md_block_q3_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                 constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                 device const md_block_q3_k* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                 device const md_block_q3_k* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_q3_k, MD_QK_K);
  md_matvec<md_block_q3_k, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_batch_iq4_xs(device const md_block_iq4_xs* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                   constant md_matvec_params& params [[buffer(2)]], device float* y0 [[buffer(3)]],
                                   device const md_block_iq4_xs* w1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                   device const md_block_iq4_xs* w2 [[buffer(6)]], device float* y2 [[buffer(7)]], MD_THREAD_IDS) {
  MD_MATVEC_BATCH_STAGE(md_block_iq4_xs, MD_QK_K);
  md_matvec<md_block_iq4_xs, MD_MATVEC_BATCH>(w0, w1, w2, x, y0, y1, y2, md_matvec_params_of(params), group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

// One (token, slot) pair per MD_MATVEC_ID_GROUPS threadgroups, on the expert ids[pair] (md_matvec_id_params).
kernel void md_matvec_id_f32(device const md_block_f32* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                             constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                             device const md_block_f32* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_f32, MD_QK);
  md_matvec_id<md_block_f32>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_f16(device const md_block_f16* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                             constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                             device const md_block_f16* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_f16, MD_QK);
  md_matvec_id<md_block_f16>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_bf16(device const md_block_bf16* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_bf16* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_bf16, MD_QK);
  md_matvec_id<md_block_bf16>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_q8_0(device const md_block_q8_0* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_q8_0* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q8_0, MD_QK);
  md_matvec_id<md_block_q8_0>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_q4_0(device const md_block_q4_0* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_q4_0* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q4_0, MD_QK);
  md_matvec_id<md_block_q4_0>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_q4_1(device const md_block_q4_1* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_q4_1* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q4_1, MD_QK);
  md_matvec_id<md_block_q4_1>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_q5_0(device const md_block_q5_0* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_q5_0* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q5_0, MD_QK);
  md_matvec_id<md_block_q5_0>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_q4_k(device const md_block_q4_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_q4_k* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q4_k, MD_QK_K);
  md_matvec_id<md_block_q4_k>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_q5_k(device const md_block_q5_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_q5_k* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q5_k, MD_QK_K);
  md_matvec_id<md_block_q5_k>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_q6_k(device const md_block_q6_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_q6_k* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q6_k, MD_QK_K);
  md_matvec_id<md_block_q6_k>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_q5_1(device const md_block_q5_1* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_q5_1* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q5_1, MD_QK);
  md_matvec_id<md_block_q5_1>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_iq4_nl(device const md_block_iq4_nl* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                                device const md_block_iq4_nl* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_iq4_nl, MD_QK);
  md_matvec_id<md_block_iq4_nl>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_q2_k(device const md_block_q2_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_q2_k* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q2_k, MD_QK_K);
  md_matvec_id<md_block_q2_k>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_q3_k(device const md_block_q3_k* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const md_block_q3_k* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_q3_k, MD_QK_K);
  md_matvec_id<md_block_q3_k>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}

kernel void md_matvec_id_iq4_xs(device const md_block_iq4_xs* w0 [[buffer(0)]], device const float* x [[buffer(1)]],
                                constant md_matvec_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                                device const md_block_iq4_xs* w1 [[buffer(4)]], device const uint* ids [[buffer(5)]], MD_THREAD_IDS) {
  MD_MATVEC_STAGE(md_block_iq4_xs, MD_QK_K);
  md_matvec_id<md_block_iq4_xs>(w0, w1, x, y, ids, params, group, simd_index, lane, threads / MD_SIMD_WIDTH, stage);
}
