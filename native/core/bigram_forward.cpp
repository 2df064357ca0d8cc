// bigram_forward.cpp: see bigram_forward.h.
#include "bigram_forward.h"

#include <vector>

#include "float16.h"

namespace md {

void bigramForward(BigramShape shape, const uint16_t* embedding, const uint16_t* head, uint32_t token,
                   uint16_t* logits) {
  std::vector<float> hidden(shape.dim, 0.0f);
  if (token < shape.vocab)
    for (uint32_t j = 0; j < shape.dim; ++j) hidden[j] = halfToFloat(embedding[uint64_t(token) * shape.dim + j]);
  for (uint32_t v = 0; v < shape.vocab; ++v) {
    const uint16_t* row = head + uint64_t(v) * shape.dim;
    float sum = 0.0f;
    // Each product of two halves is exact in float32; one rounding per add.
    for (uint32_t j = 0; j < shape.dim; ++j) sum += halfToFloat(row[j]) * hidden[j];
    logits[v] = halfFromFloat(sum);
  }
}

}  // namespace md
