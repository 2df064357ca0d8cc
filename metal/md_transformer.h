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

#ifndef __METAL_VERSION__
static_assert(sizeof(md_rows_params) == 16, "md_rows_params size");
#endif

#endif  // MD_TRANSFORMER_H
