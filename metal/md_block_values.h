// md_block_values.h: reading the values of a GGUF block in a kernel: one
// value (the embedding lookup) or a block's dot product with 32 floats
// (the matrix-vector kernels). Float rows are taken as blocks of 32 values
// too, so every type has the same loops. Each value is d * (q - offset) as
// one float32 product, as the CPU's dequantizeRow computes it.
#ifndef MD_BLOCK_VALUES_H
#define MD_BLOCK_VALUES_H

#include "md_kernel.h"
#include "md_blocks.h"

typedef struct md_block_f32 {
  float v[MD_QK];
} md_block_f32;
typedef struct md_block_f16 {
  half v[MD_QK];
} md_block_f16;

inline float md_block_value(device const md_block_f32* b, uint j) { return b->v[j]; }
inline float md_block_value(device const md_block_f16* b, uint j) { return float(b->v[j]); }
inline float md_block_value(device const md_block_q8_0* b, uint j) { return float(b->qs[j]) * float(as_type<half>(b->d)); }
inline float md_block_value(device const md_block_q4_0* b, uint j) {
  const uint q = j < MD_QK / 2 ? (b->qs[j] & 0x0fu) : (uint(b->qs[j - MD_QK / 2]) >> 4);
  return float(int(q) - 8) * float(as_type<half>(b->d));
}

inline float md_block_dot(device const md_block_f32* b, device const float* x) {
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) sum += b->v[j] * x[j];
  return sum;
}

inline float md_block_dot(device const md_block_f16* b, device const float* x) {
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) sum += float(b->v[j]) * x[j];
  return sum;
}

inline float md_block_dot(device const md_block_q8_0* b, device const float* x) {
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) sum += float(b->qs[j]) * x[j];
  return sum * float(as_type<half>(b->d));
}

inline float md_block_dot(device const md_block_q4_0* b, device const float* x) {
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK / 2; ++j) {
    const uint q = b->qs[j];
    sum += float(int(q & 0x0fu) - 8) * x[j];
    sum += float(int(q >> 4) - 8) * x[j + MD_QK / 2];
  }
  return sum * float(as_type<half>(b->d));
}

#endif  // MD_BLOCK_VALUES_H
