// matvec.metal: y = W x for one activation vector, the one-token forward
// pass's projections and LM head, with W in a GGUF type read in place
// (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q4_K, Q5_K, Q6_K: every type
// the CPU reads; the block layouts are metal/md_blocks.h's). The
// CPU twin is the dequantized row's dot product (the tests compare them).
//
// Layout: each SIMD group computes MD_MATVEC_ROWS rows. Lane l takes blocks
// l, l + 32, ... of those rows, so the 32 lanes read 32 consecutive blocks
// of a row at a time (whole cache lines) and each block of x is read once
// for all MD_MATVEC_ROWS rows; each row's 32 partial sums are added by
// simd_sum and lane 0 writes the row. Per thread and step: MD_MATVEC_ROWS
// blocks of W (4 x 18 bytes for Q4_0) and one block of x (128 bytes).
// Decode is bound by reading W once; x stays in cache.
#include "md_kernel.h"
#include "md_block_values.h"
#include "md_transformer.h"

template <typename Block>
inline void md_matvec(device const Block* w, device const float* x, device float* y, constant md_matvec_params& params,
                      uint group, uint simd_index, uint lane, uint simdgroups) {
  const uint values = md_block_values(w), parts_per_block = values / MD_QK;
  const uint blocks = params.cols / values, parts = blocks * parts_per_block;
  const uint first = (group * simdgroups + simd_index) * MD_MATVEC_ROWS;
  if (first >= params.rows) return;  // the whole SIMD group: simd_sum below needs every lane or none
  float sums[MD_MATVEC_ROWS];
  for (uint r = 0; r < MD_MATVEC_ROWS; ++r) sums[r] = 0.0f;
  // Lane l takes 32-value parts l, l + 32, ...: whole blocks of the 0
  // types, and for the K types the eight parts of a super-block go to
  // eight neighbouring lanes.
  for (uint u = lane; u < parts; u += MD_SIMD_WIDTH) {
    const uint b = u / parts_per_block, part = u % parts_per_block;
    device const float* xb = x + ulong(u) * MD_QK;
    for (uint r = 0; r < MD_MATVEC_ROWS; ++r) {
      if (first + r < params.rows) sums[r] += md_block_dot(w + ulong(first + r) * blocks + b, part, xb);
    }
  }
  for (uint r = 0; r < MD_MATVEC_ROWS; ++r) {
    const float total = simd_sum(sums[r]);
    if (lane == 0 && first + r < params.rows) y[first + r] = params.accumulate != 0 ? y[first + r] + total : total;
  }
}

kernel void md_matvec_f32(device const md_block_f32* w [[buffer(0)]],
                          device const float* x [[buffer(1)]],
                          constant md_matvec_params& params [[buffer(2)]],
                          device float* y [[buffer(3)]],
                          MD_THREAD_IDS) {
  md_matvec(w, x, y, params, group, simd_index, lane, threads / MD_SIMD_WIDTH);
}

kernel void md_matvec_f16(device const md_block_f16* w [[buffer(0)]],
                          device const float* x [[buffer(1)]],
                          constant md_matvec_params& params [[buffer(2)]],
                          device float* y [[buffer(3)]],
                          MD_THREAD_IDS) {
  md_matvec(w, x, y, params, group, simd_index, lane, threads / MD_SIMD_WIDTH);
}

kernel void md_matvec_q8_0(device const md_block_q8_0* w [[buffer(0)]],
                           device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]],
                           device float* y [[buffer(3)]],
                           MD_THREAD_IDS) {
  md_matvec(w, x, y, params, group, simd_index, lane, threads / MD_SIMD_WIDTH);
}

kernel void md_matvec_q4_0(device const md_block_q4_0* w [[buffer(0)]],
                           device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]],
                           device float* y [[buffer(3)]],
                           MD_THREAD_IDS) {
  md_matvec(w, x, y, params, group, simd_index, lane, threads / MD_SIMD_WIDTH);
}

kernel void md_matvec_q4_k(device const md_block_q4_k* w [[buffer(0)]],
                           device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]],
                           device float* y [[buffer(3)]],
                           MD_THREAD_IDS) {
  md_matvec(w, x, y, params, group, simd_index, lane, threads / MD_SIMD_WIDTH);
}

kernel void md_matvec_q5_k(device const md_block_q5_k* w [[buffer(0)]],
                           device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]],
                           device float* y [[buffer(3)]],
                           MD_THREAD_IDS) {
  md_matvec(w, x, y, params, group, simd_index, lane, threads / MD_SIMD_WIDTH);
}

kernel void md_matvec_q6_k(device const md_block_q6_k* w [[buffer(0)]],
                           device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]],
                           device float* y [[buffer(3)]],
                           MD_THREAD_IDS) {
  md_matvec(w, x, y, params, group, simd_index, lane, threads / MD_SIMD_WIDTH);
}

kernel void md_matvec_bf16(device const md_block_bf16* w [[buffer(0)]],
                           device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]],
                           device float* y [[buffer(3)]],
                           MD_THREAD_IDS) {
  md_matvec(w, x, y, params, group, simd_index, lane, threads / MD_SIMD_WIDTH);
}

kernel void md_matvec_q4_1(device const md_block_q4_1* w [[buffer(0)]],
                           device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]],
                           device float* y [[buffer(3)]],
                           MD_THREAD_IDS) {
  md_matvec(w, x, y, params, group, simd_index, lane, threads / MD_SIMD_WIDTH);
}

kernel void md_matvec_q5_0(device const md_block_q5_0* w [[buffer(0)]],
                           device const float* x [[buffer(1)]],
                           constant md_matvec_params& params [[buffer(2)]],
                           device float* y [[buffer(3)]],
                           MD_THREAD_IDS) {
  md_matvec(w, x, y, params, group, simd_index, lane, threads / MD_SIMD_WIDTH);
}
