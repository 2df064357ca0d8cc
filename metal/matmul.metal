// matmul.metal: Y = X W^T for a batch of tokens, the prefill's
// projections, with W in a GGUF type read in place (every type the matvec
// kernels read). The CPU twin is the dequantized rows' dot products (the
// tests compare them).
//
// Layout: a threadgroup of MD_MATMUL_THREADS threads (four SIMD groups)
// computes a tile of MD_MATMUL_TILE rows of W by MD_MATMUL_TILE tokens, in
// steps of MD_QK columns. Per step each thread dequantizes 8 consecutive
// values of one W row and loads 8 consecutive floats of one token's row of
// X into threadgroup memory (four threads cover a row's 32 values, so a
// SIMD group reads eight rows' parts: whole blocks); W goes in transposed
// (k-major), so that both operands load as they are. Then each SIMD group
// multiplies its 16 tokens x 16 rows of the tile as 2 x 2 8x8 simdgroup
// matrices (Apple's matrix units, M1 and later), four 8-column slices per
// step. Each value of W is read and dequantized once per MD_MATMUL_TILE
// tokens instead of once per token, which is what makes a batch cheaper
// than its tokens one by one. The results go through threadgroup memory
// so that the writes to Y are coalesced, and bounds-checked for the edge
// tiles. A float row need not be a whole number of steps: its last step
// loads zeros past the row's end.
#include "md_kernel.h"
#include "md_block_values.h"
#include "md_transformer.h"

#define MD_MATMUL_STRIDE (MD_MATMUL_TILE + 8u)  // a tile row: rows start 32-byte aligned for simdgroup_load

template <typename Block>
inline void md_matmul(device const Block* w, device const float* x, device float* y, constant md_matmul_params& params,
                      uint group, uint tid, uint simd_index, threadgroup float* w_tile, threadgroup float* x_tile) {
  const uint row_tiles = (params.rows + MD_MATMUL_TILE - 1) / MD_MATMUL_TILE;
  const uint row0 = (group % row_tiles) * MD_MATMUL_TILE, token0 = (group / row_tiles) * MD_MATMUL_TILE;
  // Loading: thread tid fills row tid / 4 of both tiles, columns (tid % 4) * 8 ...
  const uint load_row = tid / 4, load_col = (tid % 4) * 8;
  const uint w_row = row0 + load_row, x_row = token0 + load_row;
  device const Block* w_at = md_row(w, w_row < params.rows ? w_row : 0u, params.cols);
  // ... computing: SIMD group s, tokens (s / 2) * 16 .. + 16 and rows (s % 2) * 16 .. + 16 of the tile.
  const uint tokens_at = (simd_index / 2) * 16, rows_at = (simd_index % 2) * 16;
  simdgroup_float8x8 acc[2][2];
  for (uint i = 0; i < 2; ++i)
    for (uint j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

  for (uint k0 = 0; k0 < params.cols; k0 += MD_QK) {
    for (uint c = 0; c < 8; ++c) {
      const uint k = k0 + load_col + c;  // past the end of a float row (its last step): zeros, which add nothing
      const bool inside = k < params.cols;
      w_tile[(load_col + c) * MD_MATMUL_STRIDE + load_row] = inside && w_row < params.rows ? md_row_value(w_at, k) : 0.0f;
      x_tile[load_row * MD_MATMUL_STRIDE + load_col + c] = inside && x_row < params.count ? x[ulong(x_row) * params.cols + k] : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < MD_QK; k += 8) {
      simdgroup_float8x8 a[2], b[2];
      for (uint i = 0; i < 2; ++i) simdgroup_load(a[i], x_tile + (tokens_at + 8 * i) * MD_MATMUL_STRIDE + k, MD_MATMUL_STRIDE);
      for (uint j = 0; j < 2; ++j) simdgroup_load(b[j], w_tile + k * MD_MATMUL_STRIDE + rows_at + 8 * j, MD_MATMUL_STRIDE);
      for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are read before the next step overwrites them
  }
  // The tile's outputs, tokens x rows, into x_tile (free after the last barrier), then out to Y.
  for (uint i = 0; i < 2; ++i)
    for (uint j = 0; j < 2; ++j)
      simdgroup_store(acc[i][j], x_tile + (tokens_at + 8 * i) * MD_MATMUL_STRIDE + rows_at + 8 * j, MD_MATMUL_STRIDE);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint at = tid; at < MD_MATMUL_TILE * MD_MATMUL_TILE; at += MD_MATMUL_THREADS) {
    const uint token = token0 + at / MD_MATMUL_TILE, row = row0 + at % MD_MATMUL_TILE;
    if (token >= params.count || row >= params.rows) continue;
    const float value = x_tile[(at / MD_MATMUL_TILE) * MD_MATMUL_STRIDE + at % MD_MATMUL_TILE];
    device float* out = y + ulong(token) * params.rows + row;
    *out = params.accumulate != 0 ? *out + value : value;
  }
}

kernel void md_matmul_f32(device const md_block_f32* w [[buffer(0)]], device const float* x [[buffer(1)]],
                          constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, simd_index, w_tile, x_tile);
}

kernel void md_matmul_f16(device const md_block_f16* w [[buffer(0)]], device const float* x [[buffer(1)]],
                          constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, simd_index, w_tile, x_tile);
}

kernel void md_matmul_bf16(device const md_block_bf16* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, simd_index, w_tile, x_tile);
}

kernel void md_matmul_q8_0(device const md_block_q8_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, simd_index, w_tile, x_tile);
}

kernel void md_matmul_q4_0(device const md_block_q4_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, simd_index, w_tile, x_tile);
}

kernel void md_matmul_q4_1(device const md_block_q4_1* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, simd_index, w_tile, x_tile);
}

kernel void md_matmul_q5_0(device const md_block_q5_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, simd_index, w_tile, x_tile);
}

kernel void md_matmul_q4_k(device const md_block_q4_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, simd_index, w_tile, x_tile);
}

kernel void md_matmul_q5_k(device const md_block_q5_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, simd_index, w_tile, x_tile);
}

kernel void md_matmul_q6_k(device const md_block_q6_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, simd_index, w_tile, x_tile);
}
