// noise_block.cpp: tokenNoiseBlock and its kin, vectorised (MD_VECTOR_CLONES).
#include "noise_block.h"

#include "vector_clones.h"

namespace md {

MD_VECTOR_CLONES
void tokenNoiseBlock(md_u32 key, uint32_t first, uint32_t count, float* out) {
  md_u32 bits[64];
  for (uint32_t j = 0; j < count; ++j) bits[j] = md_hash(key + first + j);
  for (uint32_t j = 0; j < count; ++j) out[j] = md_gumbel(md_uniform(bits[j]));
}

MD_VECTOR_CLONES
void tokenCellBlock(md_u32 key, uint32_t first, uint32_t count, uint32_t* cells) {
  for (uint32_t j = 0; j < count; ++j) cells[j] = md_hash(key + first + j) >> 9;
}

namespace {

// The inverses (mod 2^32) of md_hash's two multipliers.
constexpr md_u32 kStateMultiplierInverse = 3425435293u;   // of 747796405
constexpr md_u32 kOutputMultiplierInverse = 2897767785u;  // of 277803737
static_assert(kStateMultiplierInverse * 747796405u == 1u, "inverse of the state multiplier");
static_assert(kOutputMultiplierInverse * 277803737u == 1u, "inverse of the output multiplier");

// md_hash's steps undone in reverse order. Branch-free, fixed trip counts,
// so the loop over a block vectorises.
inline md_u32 invert(md_u32 h) {
  // h = w ^ (w >> 22): h's top 22 bits are w's, which give w >> 22.
  const md_u32 w = h ^ (h >> 22u);
  // w = v * 277803737, v = s ^ (s >> shift) with shift = (s >> 28) + 4 >= 4:
  // v's top 4 bits are s's, so the shift is known, and each round below
  // recovers `shift` more of s's bits from the top (8 rounds cover 32 at 4).
  const md_u32 v = w * kOutputMultiplierInverse;
  const md_u32 shift = (v >> 28u) + 4u;
  md_u32 s = v;
  for (int round = 0; round < 8; ++round) s = v ^ (s >> shift);
  // s = x * 747796405 + 2891336453.
  return (s - 2891336453u) * kStateMultiplierInverse;
}

}  // namespace

md_u32 hashInverse(md_u32 h) { return invert(h); }

MD_VECTOR_CLONES
void tokensOfHashes(md_u32 key, md_u32 firstHash, uint32_t count, uint32_t* tokens) {
  for (uint32_t j = 0; j < count; ++j) tokens[j] = invert(firstHash + j) - key;
}

}  // namespace md
