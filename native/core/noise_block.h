// noise_block.h: the noise of up to kBlock consecutive tokens at once, and
// the tokens whose noise is at least a given cell.
#pragma once
#include <cstdint>

#include "../../metal/md_sampling.h"

namespace md {

// out[j] = md_token_noise(key, first + j) for j < count (count <= 64).
void tokenNoiseBlock(md_u32 key, uint32_t first, uint32_t count, float* out);

// cells[j] = md_hash(key + first + j) >> 9, the cell of (0, 1) that
// md_uniform maps the token to (count <= 64): enough to rule a token out
// before its logs are computed.
void tokenCellBlock(md_u32 key, uint32_t first, uint32_t count, uint32_t* cells);

// md_hash is a bijection of 32-bit words (PCG's output permutation: an odd
// multiply, xorshifts, an odd multiply, a xorshift), so the tokens whose
// hash is h are exactly one: hashInverse(h) - key. tokens[j] = the
// token (mod 2^32) whose md_hash(key + token) is firstHash + j (count <= 64):
// with it the few tokens of a long row that drew a noise cell near the top
// are found from those cells, without hashing the row.
void tokensOfHashes(md_u32 key, md_u32 firstHash, uint32_t count, uint32_t* tokens);

// The x with md_hash(x) == h.
md_u32 hashInverse(md_u32 h);

}  // namespace md
