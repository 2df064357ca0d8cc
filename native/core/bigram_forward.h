// bigram_forward.h: the built-in bigram model's forward pass on the CPU,
// the twin of metal/bigram.metal: logits = U . E[token], float16 weights.
#pragma once
#include <cstdint>

namespace md {

// The shape of a bigram model: `vocab` tokens, rows of `dim` halves.
struct BigramShape {
  uint32_t vocab;
  uint32_t dim;
};

// Writes the `vocab` float16 logits that follow `token` (a token outside
// the vocabulary gives a zero hidden vector, as the embedding kernel does).
// `embedding` and `head` are vocab x dim halves, row-major. The same
// float32 additions in the same order as md_lm_head_f16, so the same bits.
void bigramForward(BigramShape shape, const uint16_t* embedding, const uint16_t* head, uint32_t token,
                   uint16_t* logits);

}  // namespace md
