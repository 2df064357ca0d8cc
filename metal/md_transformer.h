// md_transformer.h: the params blocks of the transformer kernels
// (metal/transformer_*.metal), one definition for the shaders and the host
// (native/core/kernel_contracts.cpp, the dispatch tables that bind them).
#ifndef MD_TRANSFORMER_H
#define MD_TRANSFORMER_H

#include "md_sampling.h"

// `rows` rows of `n` float32 values, one after another. eps: RMSNorm's.
typedef struct md_rows_params {
  md_u32 n;
  md_u32 rows;
  float eps;
  md_u32 reserved;
} md_rows_params;

// y = W x: W is `rows` rows of `cols` values in a GGUF type (cols a whole
// number of its blocks), x and y float32.
typedef struct md_matvec_params {
  md_u32 rows;
  md_u32 cols;
} md_matvec_params;

// The embedding lookup: row token[0] of a vocab_size x dim table (a chain
// binds `token` with the token-offset patch, so step p reads token p).
typedef struct md_embed_params {
  md_u32 vocab_size;
  md_u32 dim;
} md_embed_params;

// Rotary embedding of `heads` heads of head_dim floats at `position` (the
// Position patch, field at byte 16). mode: 0 rotates adjacent pairs, 2 the
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
} md_rope_params;

// K and V rows of kv_dim floats into the F16 cache at `position` (the
// Position patch, field at byte 4).
typedef struct md_kv_store_params {
  md_u32 kv_dim;
  md_u32 position;
} md_kv_store_params;

// Attention of one query over kv_length cached positions (the KvLength
// patch, field at byte 12): heads query heads share kv_heads K/V heads;
// scores is a scratch of heads x context floats.
typedef struct md_attention_params {
  md_u32 heads;
  md_u32 kv_heads;
  md_u32 head_dim;
  md_u32 kv_length;
  md_u32 context;
  float scale;
} md_attention_params;

// Rows of W one SIMD group computes in the matrix-vector kernels.
#define MD_MATVEC_ROWS 4u

#ifndef __METAL_VERSION__
static_assert(sizeof(md_rows_params) == 16, "md_rows_params size");
static_assert(sizeof(md_matvec_params) == 8, "md_matvec_params size");
static_assert(sizeof(md_embed_params) == 8 && sizeof(md_rope_params) == 32 && sizeof(md_kv_store_params) == 8 &&
              sizeof(md_attention_params) == 24, "transformer params sizes");
#endif

#endif  // MD_TRANSFORMER_H
