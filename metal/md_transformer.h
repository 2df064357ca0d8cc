// md_transformer.h: the params blocks of the transformer kernels
// (metal/transformer_*.metal), one definition for the shaders and the host
// (native/core/kernel_contracts.cpp, the dispatch tables that bind them).
#ifndef MD_TRANSFORMER_H
#define MD_TRANSFORMER_H

#include "md_sampling.h"

// `rows` rows of `n` float32 values, one after another. eps: RMSNorm's.
// broadcast (md_add_f32): y is one row of n values added to every row (a
// bias over a batch of tokens); 0: y has rows x n values too.
typedef struct md_rows_params {
  md_u32 n;
  md_u32 rows;
  float eps;
  md_u32 broadcast;
} md_rows_params;

// y = W x for up to three matrices that read the same x (Q, K and V; gate
// and up) in one dispatch: W_m is rows[m] rows of `cols` values in a GGUF
// type (cols a whole number of its blocks; rows[m] 0 when there is no
// matrix m), bound at [[buffer(0)]], [[buffer(4)]], [[buffer(6)]], its
// float32 output y_m at [[buffer(3)]], [[buffer(5)]], [[buffer(7)]]; x is
// float32. The SIMD groups take W_0's rows, then W_1's, then W_2's. mode:
//   MD_MATVEC_STORE       y_m = W_m x
//   MD_MATVEC_ACCUMULATE  y_m += W_m x (a residual add fused into the
//                         projection before it: y + (W x), the CPU's one
//                         float addition)
//   MD_MATVEC_SWIGLU      y_0 = silu(W_0 x) * (W_1 x), rows[0] == rows[1]:
//                         gate, up and SwiGLU in one dispatch
// count: the tokens, x being count rows of cols floats and y_m count rows
// of rows[m]: 1 for md_matvec_*, 1 to MD_MATVEC_BATCH for
// md_matvec_batch_*, which reads W once for all of them and gives each
// token the bits md_matvec_* gives it alone (speculative verification
// needs them: the matrix-matrix kernels sum in another order).
// line_phases: byte m is where W_m starts in its 128-byte memory line (its
// binding's offset mod 128: Metal's buffers are page-aligned), a multiple
// of 4; the kernels load a quantized row a whole line at a time, counting
// lines from there (MD_LINE_PHASES packs three).
typedef struct md_matvec_params {
  md_u32 cols;
  md_u32 mode;
  md_u32 rows[3];
  md_u32 count;
  md_u32 line_phases;
  md_u32 reserved;
} md_matvec_params;
#define MD_LINE_PHASES(p0, p1, p2) ((p0) | ((p1) << 8) | ((p2) << 16))

#define MD_MATVEC_BATCH 8u

#define MD_MATVEC_STORE 0u
#define MD_MATVEC_ACCUMULATE 1u
#define MD_MATVEC_SWIGLU 2u

// Y = X W^T for a batch of `count` tokens (prefill): one W, in a GGUF
// type as in matvec, X count x cols and Y count x rows float32,
// row-major; accumulate: Y += X W^T (as MD_MATVEC_ACCUMULATE).
typedef struct md_matmul_params {
  md_u32 rows;
  md_u32 cols;
  md_u32 count;
  md_u32 accumulate;
} md_matmul_params;

// A mixture-of-experts FFN (qwen3moe) on the GPU, as llama.cpp's
// build_moe_ffn: the router's logits (a matrix-vector or matrix-matrix
// dispatch), then
//   md_moe_route_f32   per token (a SIMD group each): softmax over
//                      `experts` logits, the `used` most probable (ties to
//                      the lower index) into ids[t * used + j], their
//                      probabilities normalised to sum 1 into weights
//   md_moe_group_u32   prefill: per expert, how many (token, slot) pairs
//                      chose it (counts[e]) and which (pairs[e * count ..],
//                      in order): the matrix-matrix kernels' tokens
//   md_matvec_id_* / md_matmul_id_*  each pair's expert FFN rows
//   md_moe_sum_f32     per token: hidden += sum over j of weights[j] *
//                      outputs[t * used + j] (dim floats), in slot order
// A pair is t * used + j: slot j of token t.
typedef struct md_moe_params {
  md_u32 experts;
  md_u32 used;
  md_u32 count;  // tokens
  md_u32 dim;    // md_moe_sum_f32: the values of an output row
} md_moe_params;

// The most experts md_moe_route_f32 takes (a SIMD group holds 8 logits a
// lane) and the most it chooses per token.
#define MD_MOE_MAX_EXPERTS 256u
#define MD_MOE_MAX_USED 16u

// The indexed matrix-vector kernels (llama.cpp's mul_mv_id): one output
// row per (token, slot) pair, W being the expert ids[pair] of `experts`
// matrices stacked in one tensor (expert_bytes each, rows x cols values:
// one expert's matrix at w + ids[pair] * expert_bytes), so only the chosen
// experts' rows are read. x holds one row per token (x_per_pair 0: pair /
// used) or one per pair (1: the down projection's input). mode:
//   MD_MATVEC_STORE   y[pair] = W x
//   MD_MATVEC_SWIGLU  y[pair] = silu(W0 x) * (W1 x): the gate at
//                     [[buffer(0)]], the up at [[buffer(4)]], one expert each
// Each pair's row has the bits of md_matvec_* on that expert's matrix.
// line_phases: bytes 0 and 1, where W0's and W1's first expert start in
// their 128-byte line (each expert's own phase follows from expert_bytes).
typedef struct md_matvec_id_params {
  md_u32 cols;
  md_u32 mode;
  md_u32 rows;
  md_u32 pairs;
  md_u32 used;
  md_u32 x_per_pair;
  md_u32 experts;
  md_u32 expert_bytes;
  md_u32 line_phases;
  md_u32 reserved;
} md_matvec_id_params;

// The threadgroups of one pair in md_matvec_id_*: its SIMD groups of
// MD_MATVEC_ROWS rows (SwiGLU's two matrices share theirs), `simdgroups`
// to a threadgroup.
#define MD_MATVEC_ID_GROUPS(rows, simdgroups) \
  ((((rows) + MD_MATVEC_ROWS - 1u) / MD_MATVEC_ROWS + (simdgroups) - 1u) / (simdgroups))

// The grouped matrix-matrix kernels (llama.cpp's mul_mm_id): expert e's
// matrix (as in md_matvec_id_params) times the rows of its counts[e]
// pairs (pairs[e * count ..]), each output to y[pair]; x as above.
// Threadgroups: experts x the tiles of rows x count tokens, the tiles past
// an expert's count leaving at once.
typedef struct md_matmul_id_params {
  md_u32 rows;
  md_u32 cols;
  md_u32 count;  // tokens: the most pairs one expert can have
  md_u32 used;
  md_u32 x_per_pair;
  md_u32 experts;
  md_u32 expert_bytes;
  md_u32 reserved;
} md_matmul_id_params;

// The embedding lookup: rows token[0 .. count) of a vocab_size x dim table
// (a chain binds `token` with the token-offset patch, so step p reads
// tokens p .. p + count - 1), each value times `scale` (1 but for gemma's
// sqrt(dim)), into count x dim floats.
typedef struct md_embed_params {
  md_u32 vocab_size;
  md_u32 dim;
  md_u32 count;
  float scale;
} md_embed_params;

// Rotary embedding of `count` tokens, token i at position + i (the
// Position patch, field at byte 16): each token's `heads` heads of
// head_dim floats in x, and its `k_heads` heads in k (Q and K in one
// dispatch; k_heads 0 for x alone). mode: 0 rotates adjacent pairs, 2 the
// two halves of each head. theta_scale = base^(-2 / rope_dims), computed
// once on the host as the CPU computes it; has_factors: divide each pair's
// angle by factors[i] (llama3's rope_freqs).
typedef struct md_rope_params {
  md_u32 heads;
  md_u32 head_dim;
  md_u32 rope_dims;
  md_u32 mode;
  md_u32 position;
  float theta_scale;
  float freq_scale;
  md_u32 has_factors;
  md_u32 count;
  md_u32 k_heads;
  float attn_factor;  // multiplies cos and sin (phi3's LongRoPE); 1 otherwise
  md_u32 reserved;
} md_rope_params;

// `count` K and V rows of kv_dim floats into the F16 cache at rows
// position .. position + count - 1 (the Position patch, field at byte 4).
typedef struct md_kv_store_params {
  md_u32 kv_dim;
  md_u32 position;
  md_u32 count;
  md_u32 reserved;
} md_kv_store_params;

// Causal attention of `count` queries: query i attends over the first
// kv_length + i cached positions (the KvLength patch, field at byte 12,
// sets kv_length = p + 1 for a batch whose first token is at p). heads
// query heads share kv_heads K/V heads: a threadgroup serves one KV head's
// query heads. The positions are split over `splits` threadgroups per
// (query, KV head) (flash decoding, for long
// contexts): each leaves its maximum score, its sum of exponentials and
// its unnormalised output in `partials`, and md_attention_merge_f32 adds
// them. context is the cache's length in positions. A window (a sliding-
// window layer's) limits query i to its last `window` positions; 0: all.
typedef struct md_attention_params {
  md_u32 heads;
  md_u32 kv_heads;
  md_u32 head_dim;
  md_u32 kv_length;
  md_u32 context;
  float scale;
  md_u32 count;
  md_u32 splits;
  md_u32 window;
  md_u32 reserved;
} md_attention_params;

// The attention kernels' limits: a head of at most 256 values (8 per lane
// of a SIMD group) and at most 256 threads (8 SIMD groups) per threadgroup,
// what their registers and threadgroup memory hold.
#define MD_ATTENTION_MAX_HEAD_DIM 256u
#define MD_ATTENTION_MAX_THREADS 256u

// Query heads one attention threadgroup serves in one pass over its KV
// head's positions (a larger group takes more passes): each K and V value
// is loaded once per pass and used by all of them.
#define MD_ATTENTION_GROUP 8u
// Positions a SIMD group of the attention takes in one step of its online
// softmax: one per lane.
#define MD_ATTENTION_BLOCK 32u

// The floats of one split's partial result: its max, its sum, head_dim outputs.
#define MD_ATTENTION_PARTIAL_FLOATS(head_dim) (2u + (head_dim))

// Rows of W one SIMD group computes in the matrix-vector kernels. x's
// window, loaded and transposed once per token, is shared by them: more
// rows spend fewer operations per weight byte (at 8 every type is
// memory-bound on an M4 Pro or Max in bench predict's model; at 4 Q4_K was
// not). The batch kernel keeps 4: its registers hold rows x tokens sums.
#define MD_MATVEC_ROWS 8u
#define MD_MATVEC_BATCH_ROWS 4u
#define MD_MATVEC_ROWS_FOR(tokens) ((tokens) > 1u ? MD_MATVEC_BATCH_ROWS : MD_MATVEC_ROWS)

// The memory line an Apple GPU moves, bytes: the unit the matrix-vector
// kernels' loads are laid out in (line_phases below).
#define MD_LINE_BYTES 128u

// The matrix-vector kernels (and the fused head's tiles) run whole SIMD
// groups, at most this many threads: what their threadgroup memory holds.
#define MD_MATVEC_MAX_THREADS 128u
// A row's window (32 parts: 1024 values) is staged in threadgroup memory a
// 128-byte line per load (md_matvec_rows.h): its lines from any even
// offset in the first (at most 126 + window bytes), after one carried line
// per row of the SIMD group. Words per SIMD group, by block bytes and
// values (a float row's "block" is 32 values; F32's window, the largest,
// is 4096 bytes: 4 + 33 lines, 4.6 KB).
#define MD_MATVEC_STAGE_LINES(block_bytes, block_values) \
  ((126u + (32u * 32u / (block_values)) * (block_bytes) + 127u) / 128u)
#define MD_MATVEC_STAGE_WORDS(block_bytes, block_values) \
  ((MD_MATVEC_ROWS + MD_MATVEC_STAGE_LINES(block_bytes, block_values)) * 32u)
// The batch form of a quantized type stages the windows of all its
// MD_MATVEC_BATCH_ROWS rows at once (each token's x window then serves
// every row): Q8_0's, the largest, 4 x 10 lines, 24 KB per threadgroup.
#define MD_MATVEC_BATCH_STAGE_WORDS(block_bytes, block_values) \
  ((MD_MATVEC_ROWS + MD_MATVEC_BATCH_ROWS * MD_MATVEC_STAGE_LINES(block_bytes, block_values)) * 32u)

// FlashSampling (head_sampling.metal): the LM head W x (W rows x cols, a
// GGUF type, as md_matvec_*) and the pick of the next token from it, the
// logits never stored. Each row's logit has md_matvec_*'s bits; then
//   flags 0                       the argmax over the float32 logits
//                                 (md_argmax_f32's token)
//   MD_HEAD_HALF                  the logits rounded to float16 as
//                                 md_half_from_f32 rounds them, then with
//     MD_HEAD_BIAS                bias[token] added (a dense float per row:
//                                 0 adds nothing a key can see), and
//     temperature 0               the argmax of the keys, or
//     temperature > 0             the best z + T * g at `position` under
//                                 `seed`: md_sample_f16's token when no
//                                 filter or penalty is on
#define MD_HEAD_HALF 1u
#define MD_HEAD_BIAS 2u
typedef struct md_head_sampling_params {
  md_u32 rows;
  md_u32 cols;
  md_u32 flags;
  float temperature;
  md_u32 seed;
  md_u32 position;  // the noise position: the sampled token's
  md_u32 line_phase;  // where W starts in its 128-byte line, as md_matvec_params' line_phases
  md_u32 reserved;
} md_head_sampling_params;

// The most threadgroups (tiles) md_head_sample_* takes: each one leaves a
// partial for the pick to reduce; past this, SIMD groups loop over rows.
#define MD_HEAD_MAX_TILES 2048u

// The matrix-matrix kernels' tile (llama.cpp's mul_mm shape): MD_MATMUL_ROWS
// rows of W by MD_MATMUL_TOKENS tokens per threadgroup of MD_MATMUL_THREADS
// threads (four SIMD groups of 32 rows x 16 tokens), in steps of MD_QK
// columns (one block of the 0 types, one part of a K type).
#define MD_MATMUL_ROWS 64u
#define MD_MATMUL_TOKENS 32u
#define MD_MATMUL_THREADS 128u

#ifndef __METAL_VERSION__
// The SIMD groups an md_matvec_* dispatch of `p` needs: one per
// MD_MATVEC_ROWS_FOR(tokens) rows of each matrix (SwiGLU's two share
// theirs), `tokens` being the kernel's (1, or MD_MATVEC_BATCH for the batch
// form). The tables size their grids by it; the contract checks it.
inline uint64_t md_matvec_simd_groups(const md_matvec_params& p, md_u32 tokens) {
  const uint64_t simd_rows = MD_MATVEC_ROWS_FOR(tokens);
  uint64_t groups = 0;
  for (int m = 0; m < (p.mode == MD_MATVEC_SWIGLU ? 1 : 3); ++m) groups += (p.rows[m] + simd_rows - 1) / simd_rows;
  return groups;
}

static_assert(sizeof(md_rows_params) == 16, "md_rows_params size");
static_assert(sizeof(md_moe_params) == 16 && sizeof(md_matvec_id_params) == 40 && sizeof(md_matmul_id_params) == 32,
              "mixture-of-experts params sizes");
static_assert(sizeof(md_head_sampling_params) == 32, "md_head_sampling_params size");
static_assert(sizeof(md_matvec_params) == 32 && sizeof(md_matmul_params) == 16, "matrix params sizes");
static_assert(sizeof(md_embed_params) == 16 && sizeof(md_rope_params) == 48 && sizeof(md_kv_store_params) == 16 &&
              sizeof(md_attention_params) == 40, "transformer params sizes");
#endif

#endif  // MD_TRANSFORMER_H
