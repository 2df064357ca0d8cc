// noise_block.cpp: tokenNoiseBlock, vectorised.
//
// The hash's variable shift has no SSE2 instruction, so on x86-64 Linux the
// function is also compiled for AVX2 and the loader picks the clone the CPU
// supports (an ifunc). Both clones do the same float32 operations in the same
// order without fused multiply-adds, so they return the same bits.
#include "noise_block.h"

namespace md {

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define MD_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MD_VECTOR_CLONES
#endif

MD_VECTOR_CLONES
void tokenNoiseBlock(md_u32 key, uint32_t first, uint32_t count, float* out) {
  md_u32 bits[64];
  for (uint32_t j = 0; j < count; ++j) bits[j] = md_hash(key + first + j);
  for (uint32_t j = 0; j < count; ++j) out[j] = md_gumbel(md_uniform(bits[j]));
}

}  // namespace md

namespace md {

MD_VECTOR_CLONES
void tokenCellBlock(md_u32 key, uint32_t first, uint32_t count, uint32_t* cells) {
  for (uint32_t j = 0; j < count; ++j) cells[j] = md_hash(key + first + j) >> 9;
}

}  // namespace md
