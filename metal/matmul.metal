// matmul.metal: Y = X W^T for a batch of tokens, the prefill's
// projections, with W in a GGUF type read in place (every type the matvec
// kernels read). The CPU twin is the dequantized rows' dot products (the
// tests compare them).
//
// Layout: a threadgroup of MD_MATMUL_THREADS threads computes a tile of
// MD_MATMUL_TILE rows of W by MD_MATMUL_TILE tokens, in steps of MD_QK
// columns. Per step each thread dequantizes 8 consecutive values of one W
// row and loads 8 consecutive floats of one token's row of X into
// threadgroup memory (four threads cover one row's 32 values, so a
// SIMD group reads eight rows' parts: whole blocks), then computes 8
// outputs (one W row, 8 tokens) from threadgroup memory. Each value of W
// is read and dequantized once per MD_MATMUL_TILE tokens instead of once
// per token, which is what makes a batch cheaper than its tokens one by
// one; the rows are padded by one float so that the 32 lanes reading a
// column of the W tile hit 32 different banks.
//
// Not used: Apple's simdgroup_matrix multiply (8x8 tiles on the matrix
// units of M1 and later). The emulator has no twin of it yet, and nothing
// the emulator cannot run is shipped (README, "What is not proven").
#include "md_kernel.h"
#include "md_block_values.h"
#include "md_transformer.h"

#define MD_MATMUL_STRIDE (MD_MATMUL_TILE + 1u)  // a tile row, padded against bank conflicts
#define MD_MATMUL_OUTPUTS 8u                    // tokens per thread

template <typename Block>
inline void md_matmul(device const Block* w, device const float* x, device float* y, constant md_matmul_params& params,
                      uint group, uint tid, threadgroup float* w_tile, threadgroup float* x_tile) {
  const uint row_tiles = (params.rows + MD_MATMUL_TILE - 1) / MD_MATMUL_TILE;
  const uint row0 = (group % row_tiles) * MD_MATMUL_TILE, token0 = (group / row_tiles) * MD_MATMUL_TILE;
  const uint values = md_block_values(w), blocks = params.cols / values;
  // Loading: thread tid fills row tid / 4 of both tiles, columns (tid % 4) * 8 ...
  const uint load_row = tid / 4, load_col = (tid % 4) * 8;
  const uint w_row = row0 + load_row, x_row = token0 + load_row;
  // ... computing: W row tid % 32 of the tile, tokens (tid / 32) * 8 ...
  const uint out_row = tid % MD_MATMUL_TILE, out_token = (tid / MD_MATMUL_TILE) * MD_MATMUL_OUTPUTS;
  float acc[MD_MATMUL_OUTPUTS];
  for (uint j = 0; j < MD_MATMUL_OUTPUTS; ++j) acc[j] = 0.0f;

  for (uint k0 = 0; k0 < params.cols; k0 += MD_QK) {
    device const Block* block = w + ulong(w_row) * blocks + k0 / values;
    const uint within = k0 % values + load_col;
    for (uint c = 0; c < 8; ++c) {
      w_tile[load_row * MD_MATMUL_STRIDE + load_col + c] = w_row < params.rows ? md_block_value(block, within + c) : 0.0f;
      x_tile[load_row * MD_MATMUL_STRIDE + load_col + c] = x_row < params.count ? x[ulong(x_row) * params.cols + k0 + load_col + c] : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < MD_QK; ++k) {
      const float wv = w_tile[out_row * MD_MATMUL_STRIDE + k];
      for (uint j = 0; j < MD_MATMUL_OUTPUTS; ++j) acc[j] += wv * x_tile[(out_token + j) * MD_MATMUL_STRIDE + k];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are read before the next step overwrites them
  }
  if (row0 + out_row >= params.rows) return;
  for (uint j = 0; j < MD_MATMUL_OUTPUTS; ++j) {
    const uint token = token0 + out_token + j;
    if (token >= params.count) continue;
    device float* out = y + ulong(token) * params.rows + row0 + out_row;
    *out = params.accumulate != 0 ? *out + acc[j] : acc[j];
  }
}

kernel void md_matmul_f32(device const md_block_f32* w [[buffer(0)]], device const float* x [[buffer(1)]],
                          constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, w_tile, x_tile);
}

kernel void md_matmul_f16(device const md_block_f16* w [[buffer(0)]], device const float* x [[buffer(1)]],
                          constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, w_tile, x_tile);
}

kernel void md_matmul_bf16(device const md_block_bf16* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, w_tile, x_tile);
}

kernel void md_matmul_q8_0(device const md_block_q8_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, w_tile, x_tile);
}

kernel void md_matmul_q4_0(device const md_block_q4_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, w_tile, x_tile);
}

kernel void md_matmul_q4_1(device const md_block_q4_1* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, w_tile, x_tile);
}

kernel void md_matmul_q5_0(device const md_block_q5_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, w_tile, x_tile);
}

kernel void md_matmul_q4_k(device const md_block_q4_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, w_tile, x_tile);
}

kernel void md_matmul_q5_k(device const md_block_q5_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, w_tile, x_tile);
}

kernel void md_matmul_q6_k(device const md_block_q6_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, w_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  MD_THREADGROUP_ARRAY(float, x_tile, MD_MATMUL_TILE * MD_MATMUL_STRIDE);
  md_matmul(w, x, y, params, group, tid, w_tile, x_tile);
}
