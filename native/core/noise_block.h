// noise_block.h: the noise of up to kBlock consecutive tokens at once.
#pragma once
#include <cstdint>

#include "../../metal/md_sampling.h"

namespace md {

// out[j] = md_token_noise(key, first + j) for j < count (count <= 64).
void tokenNoiseBlock(md_u32 key, uint32_t first, uint32_t count, float* out);

}  // namespace md

namespace md {

// cells[j] = md_hash(key + first + j) >> 9, the cell of (0, 1) that
// md_uniform maps the token to (count <= 64): enough to rule a token out
// before its logs are computed.
void tokenCellBlock(md_u32 key, uint32_t first, uint32_t count, uint32_t* cells);

}  // namespace md
