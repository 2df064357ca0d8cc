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

// Rows of W one SIMD group computes in the matrix-vector kernels.
#define MD_MATVEC_ROWS 4u

#ifndef __METAL_VERSION__
static_assert(sizeof(md_rows_params) == 16, "md_rows_params size");
static_assert(sizeof(md_matvec_params) == 8, "md_matvec_params size");
#endif

#endif  // MD_TRANSFORMER_H
