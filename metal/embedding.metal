// embedding.metal: the first op of a forward pass, each token's row of the
// embedding table dequantized to float32, for every weight type the matrix
// kernels read (every type the CPU reads), for one token (decode) or a
// batch (prefill). One thread per value: consecutive threads read
// consecutive values of a row (each row is read once). A token outside
// the vocabulary (MD_NO_TOKEN after an all -inf row) gives zeros, so a
// chain stays in bounds; the host stops at that token anyway.
#include "md_kernel.h"
#include "md_block_values.h"
#include "md_transformer.h"

template <typename Block>
inline void md_embed(device const uint* token, device const Block* table, constant md_embed_params& params,
                     device float* out, uint i) {
  if (i >= params.dim * params.count) return;
  const uint t = token[i / params.dim];
  out[i] = t < params.vocab_size ? md_row_value(md_row(table, t, params.dim), i % params.dim) * params.scale : 0.0f;
}

kernel void md_embed_rows_f32(device const uint* token [[buffer(0)]], device const md_block_f32* table [[buffer(1)]],
                              constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_f16(device const uint* token [[buffer(0)]], device const md_block_f16* table [[buffer(1)]],
                              constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_q8_0(device const uint* token [[buffer(0)]], device const md_block_q8_0* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_q4_0(device const uint* token [[buffer(0)]], device const md_block_q4_0* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_q4_k(device const uint* token [[buffer(0)]], device const md_block_q4_k* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_q5_k(device const uint* token [[buffer(0)]], device const md_block_q5_k* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_q6_k(device const uint* token [[buffer(0)]], device const md_block_q6_k* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_bf16(device const uint* token [[buffer(0)]], device const md_block_bf16* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_q4_1(device const uint* token [[buffer(0)]], device const md_block_q4_1* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_q5_0(device const uint* token [[buffer(0)]], device const md_block_q5_0* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_q5_1(device const uint* token [[buffer(0)]], device const md_block_q5_1* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_iq4_nl(device const uint* token [[buffer(0)]], device const md_block_iq4_nl* table [[buffer(1)]],
                                 constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_q2_k(device const uint* token [[buffer(0)]], device const md_block_q2_k* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_q3_k(device const uint* token [[buffer(0)]], device const md_block_q3_k* table [[buffer(1)]],
                               constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}

kernel void md_embed_rows_iq4_xs(device const uint* token [[buffer(0)]], device const md_block_iq4_xs* table [[buffer(1)]],
                                 constant md_embed_params& params [[buffer(2)]], device float* out [[buffer(3)]], MD_THREAD_IDS) {
  md_embed(token, table, params, out, group * threads + tid);
}
