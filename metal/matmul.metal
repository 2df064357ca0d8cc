// matmul.metal: Y = X W^T for a batch of tokens, the prefill's
// projections, with W in a GGUF type read in place (every type the matvec
// kernels read). The CPU twin is the dot products of the dequantized rows,
// each value rounded to W's tile type first (the tests compare them).
//
// md_matmul_id_* (mixture-of-experts prefill, llama.cpp's mul_mm_id) runs
// the same tiles per expert over the rows of the (token, slot) pairs that
// chose it, as md_moe_group_u32 listed them: each expert's matrix is read
// once per MD_MATMUL_TOKENS of its pairs, and no other expert's.
//
// Layout, after llama.cpp's mul_mm: a threadgroup of MD_MATMUL_THREADS
// threads (four SIMD groups) computes a tile of MD_MATMUL_ROWS rows of W by
// MD_MATMUL_TOKENS tokens, in steps of MD_QK columns. Per step:
// - W: thread t dequantizes 16 values of row t % 64 of the tile, half
//   t / 64 of the step (md_part_column: each half its own bytes), at once
//   from their block (md_row_values16: scales and offsets read once), into
//   W's tile as half (float for f32 and bf16 rows: no rounding of float
//   weights, and bf16's range is not half's).
//   The tile is k-major, so a SIMD group's store of value i is 32 rows side
//   by side: one pass of the banks.
// - X: thread t loads 8 floats of token t / 4, columns (t % 4) * 8, four
//   threads a 128-byte line of a token's row; X's tile is token-major with
//   rows 16 bytes longer than 32 floats, and each thread starts its 8 at
//   column token % 8 of them, so that the SIMD group's stores of a column
//   fall into 32 different banks.
// Then each SIMD group multiplies its 16 tokens x 32 rows of the tile as
// 2 x 4 8x8 simdgroup matrices (Apple's matrix units, M1 and later), four
// 8-column slices per step, the products summed in float. Each value of W
// is read and dequantized once per MD_MATMUL_TOKENS tokens instead of once
// per token, which is what makes a batch cheaper than its tokens one by
// one. The results go through threadgroup memory so that the writes to Y
// are coalesced (a SIMD group writes 32 rows of one token: 128 bytes), and
// are bounds-checked for the edge tiles. A float row need not be a whole
// number of steps: its last step loads zeros past the row's end.
#include "md_kernel.h"
#include "md_block_values.h"
#include "md_transformer.h"

// W's tile type: half, as llama.cpp's mul_mm; float for float32 and bf16 rows.
template <typename Block>
struct md_matmul_tile {
  typedef half type;
};
template <>
struct md_matmul_tile<md_block_f32> {
  typedef float type;
};
template <>
struct md_matmul_tile<md_block_bf16> {
  typedef float type;
};

// Row strides, in elements: 16 bytes past the row's values (MLX's padding),
// which spreads a simdgroup_load's 8 rows over the banks.
#define MD_MATMUL_W_STRIDE(T) (MD_MATMUL_ROWS + 16u / uint(sizeof(T)))
#define MD_MATMUL_X_STRIDE (MD_QK + 4u)
#define MD_MATMUL_Y_STRIDE (MD_MATMUL_ROWS + 4u)
// Threadgroup memory, in floats: W's tile and X's, which the outputs reuse after the last step.
#define MD_MATMUL_W_FLOATS(T) (MD_QK * MD_MATMUL_W_STRIDE(T) * uint(sizeof(T)) / 4u)
#define MD_MATMUL_INPUT_FLOATS(T) (MD_MATMUL_W_FLOATS(T) + MD_MATMUL_TOKENS * MD_MATMUL_X_STRIDE)
#define MD_MATMUL_Y_FLOATS (MD_MATMUL_TOKENS * MD_MATMUL_Y_STRIDE)
#define MD_MATMUL_FLOATS(T) \
  (MD_MATMUL_INPUT_FLOATS(T) > MD_MATMUL_Y_FLOATS ? MD_MATMUL_INPUT_FLOATS(T) : MD_MATMUL_Y_FLOATS)

// Which rows of X and Y the tile's tokens are: token i itself, or (the
// grouped kernels) pair pairs[i], reading X's row pairs[i] / x_divisor.
struct md_matmul_rows {
  device const uint* pairs;
  uint x_divisor;
  bool mapped;
};

// The params in thread memory, field by field (as md_matvec_params_of).
inline md_matmul_params md_matmul_params_of(constant md_matmul_params& c) {
  md_matmul_params p;
  p.rows = c.rows;
  p.cols = c.cols;
  p.count = c.count;
  p.accumulate = c.accumulate;
  return p;
}

inline md_matmul_rows md_matmul_own_rows() {
  md_matmul_rows rows;
  rows.pairs = nullptr;
  rows.x_divisor = 1u;
  rows.mapped = false;
  return rows;
}

template <typename Block>
inline void md_matmul(device const Block* w, device const float* x, device float* y, md_matmul_params params,
                      md_matmul_rows map, uint group, uint tid, uint simd_index, threadgroup float* memory) {
  typedef typename md_matmul_tile<Block>::type W;
  const uint w_stride = MD_MATMUL_W_STRIDE(W);
  threadgroup W* w_tile = (threadgroup W*)memory;
  threadgroup float* x_tile = memory + MD_MATMUL_W_FLOATS(W);
  const uint row_tiles = (params.rows + MD_MATMUL_ROWS - 1) / MD_MATMUL_ROWS;
  const uint row0 = (group % row_tiles) * MD_MATMUL_ROWS, token0 = (group / row_tiles) * MD_MATMUL_TOKENS;
  // This thread's share of W: half h of each step of row `w_column` of the tile (md_part_column).
  const uint w_column = tid % MD_MATMUL_ROWS, h = tid / MD_MATMUL_ROWS;
  const bool w_inside = row0 + w_column < params.rows;
  device const Block* w_at = md_row(w, w_inside ? row0 + w_column : 0u, params.cols);
  // Its share of X: columns x_first .. + 8 of each step of token `x_row` of the tile, from column x_turn of them.
  const uint x_row = tid / 4, x_first = (tid % 4) * 8, x_turn = x_row % 8;
  const bool x_inside = token0 + x_row < params.count;
  const uint x_token = x_inside ? token0 + x_row : 0u;
  device const float* x_at = x + ulong(map.mapped ? map.pairs[x_token] / map.x_divisor : x_token) * params.cols;
  // SIMD group s: tokens (s / 2) * 16 .. + 16 and rows (s % 2) * 32 .. + 32 of the tile.
  const uint tokens_at = (simd_index / 2) * 16, rows_at = (simd_index % 2) * 32;
  simdgroup_float8x8 acc[2][4];
  for (uint i = 0; i < 2; ++i)
    for (uint j = 0; j < 4; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

  for (uint k0 = 0; k0 < params.cols; k0 += MD_QK) {
    float values[16];
    md_row_values16(w_at, k0, h, params.cols, values);
    for (uint i = 0; i < 16; ++i) w_tile[md_part_column(h, i) * w_stride + w_column] = W(w_inside ? values[i] : 0.0f);
    for (uint i = 0; i < 8; ++i) {
      const uint column = x_first + (i + x_turn) % 8, k = k0 + column;  // past the end of a float row: zeros, which add nothing
      x_tile[x_row * MD_MATMUL_X_STRIDE + column] = x_inside && k < params.cols ? x_at[k] : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < MD_QK; k += 8) {
      simdgroup_float8x8 a[2];
      simdgroup_matrix<W, 8, 8> b[4];
      for (uint i = 0; i < 2; ++i) simdgroup_load(a[i], x_tile + (tokens_at + 8 * i) * MD_MATMUL_X_STRIDE + k, MD_MATMUL_X_STRIDE);
      for (uint j = 0; j < 4; ++j) simdgroup_load(b[j], w_tile + k * w_stride + rows_at + 8 * j, w_stride);
      for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are read before the next step overwrites them
  }
  // The tile's outputs, tokens x rows, into the memory the tiles used, then out to Y.
  threadgroup float* y_tile = memory;
  for (uint i = 0; i < 2; ++i)
    for (uint j = 0; j < 4; ++j)
      simdgroup_store(acc[i][j], y_tile + (tokens_at + 8 * i) * MD_MATMUL_Y_STRIDE + rows_at + 8 * j, MD_MATMUL_Y_STRIDE);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint at = tid; at < MD_MATMUL_ROWS * MD_MATMUL_TOKENS; at += MD_MATMUL_THREADS) {
    const uint token = token0 + at / MD_MATMUL_ROWS, row = row0 + at % MD_MATMUL_ROWS;
    if (token >= params.count || row >= params.rows) continue;
    const float value = y_tile[(at / MD_MATMUL_ROWS) * MD_MATMUL_Y_STRIDE + at % MD_MATMUL_ROWS];
    device float* out = y + ulong(map.mapped ? map.pairs[token] : token) * params.rows + row;
    *out = params.accumulate != 0 ? *out + value : value;
  }
}

// Expert e's pairs (md_matmul_id_params): the tiles of its matrix by the
// rows of its counts[e] pairs; threadgroup g is expert g / tiles.
template <typename Block>
inline void md_matmul_id(device const Block* w, device const float* x, device float* y, device const uint* counts,
                         device const uint* pairs, constant md_matmul_id_params& params, uint group, uint tid,
                         uint simd_index, threadgroup float* memory) {
  const uint row_tiles = (params.rows + MD_MATMUL_ROWS - 1u) / MD_MATMUL_ROWS;
  const uint tiles = row_tiles * ((params.count + MD_MATMUL_TOKENS - 1u) / MD_MATMUL_TOKENS);
  const uint expert = group / tiles;
  if (expert >= params.experts) return;
  const uint n = min(counts[expert], params.count);
  const uint tile = group % tiles;
  if ((tile / row_tiles) * MD_MATMUL_TOKENS >= n) return;  // past the expert's pairs: the whole threadgroup leaves
  md_matmul_params p;
  p.rows = params.rows;
  p.cols = params.cols;
  p.count = n;
  p.accumulate = 0u;
  md_matmul_rows map;
  map.pairs = pairs + ulong(expert) * params.count;
  map.x_divisor = params.x_per_pair != 0u ? 1u : params.used;
  map.mapped = true;
  md_matmul((device const Block*)((device const uchar*)w + ulong(expert) * params.expert_bytes), x, y, p, map, tile,
            tid, simd_index, memory);
}

kernel void md_matmul_f32(device const md_block_f32* w [[buffer(0)]], device const float* x [[buffer(1)]],
                          constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_f32>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_f16(device const md_block_f16* w [[buffer(0)]], device const float* x [[buffer(1)]],
                          constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_f16>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_bf16(device const md_block_bf16* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_bf16>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_q8_0(device const md_block_q8_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q8_0>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_q4_0(device const md_block_q4_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q4_0>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_q4_1(device const md_block_q4_1* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q4_1>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_q5_0(device const md_block_q5_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q5_0>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_q4_k(device const md_block_q4_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q4_k>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_q5_k(device const md_block_q5_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q5_k>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_q6_k(device const md_block_q6_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q6_k>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_q5_1(device const md_block_q5_1* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q5_1>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_iq4_nl(device const md_block_iq4_nl* w [[buffer(0)]], device const float* x [[buffer(1)]],
                             constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_iq4_nl>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_q2_k(device const md_block_q2_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q2_k>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_q3_k(device const md_block_q3_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                           constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q3_k>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

kernel void md_matmul_iq4_xs(device const md_block_iq4_xs* w [[buffer(0)]], device const float* x [[buffer(1)]],
                             constant md_matmul_params& params [[buffer(2)]], device float* y [[buffer(3)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_iq4_xs>::type));
  md_matmul(w, x, y, md_matmul_params_of(params), md_matmul_own_rows(), group, tid, simd_index, memory);
}

// Grouped by expert (md_matmul_id_params): each expert's matrix over the pairs that chose it.
kernel void md_matmul_id_f32(device const md_block_f32* w [[buffer(0)]], device const float* x [[buffer(1)]],
                             constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                             device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_f32>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_f16(device const md_block_f16* w [[buffer(0)]], device const float* x [[buffer(1)]],
                             constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                             device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_f16>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_bf16(device const md_block_bf16* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_bf16>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_q8_0(device const md_block_q8_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q8_0>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_q4_0(device const md_block_q4_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q4_0>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_q4_1(device const md_block_q4_1* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q4_1>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_q5_0(device const md_block_q5_0* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q5_0>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_q4_k(device const md_block_q4_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q4_k>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_q5_k(device const md_block_q5_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q5_k>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_q6_k(device const md_block_q6_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q6_k>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_q5_1(device const md_block_q5_1* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q5_1>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_iq4_nl(device const md_block_iq4_nl* w [[buffer(0)]], device const float* x [[buffer(1)]],
                                constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                                device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_iq4_nl>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_q2_k(device const md_block_q2_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q2_k>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_q3_k(device const md_block_q3_k* w [[buffer(0)]], device const float* x [[buffer(1)]],
                              constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                              device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_q3_k>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}

kernel void md_matmul_id_iq4_xs(device const md_block_iq4_xs* w [[buffer(0)]], device const float* x [[buffer(1)]],
                                constant md_matmul_id_params& params [[buffer(2)]], device float* y [[buffer(3)]],
                                device const uint* counts [[buffer(4)]], device const uint* pairs [[buffer(5)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, memory, MD_MATMUL_FLOATS(md_matmul_tile<md_block_iq4_xs>::type));
  md_matmul_id(w, x, y, counts, pairs, params, group, tid, simd_index, memory);
}
