// md_block_values.h: reading the values of a GGUF block in a kernel: one
// value (the embedding lookup) or the dot product of one 32-value part of
// a block with 32 floats (the matrix-vector kernels; the 0 types and float
// rows are one part per block, the K types eight). Float rows are taken
// as blocks of 32 values too, so every type has the same loops; but a
// float row may have any length (a quantized row is whole blocks, the
// file's own rule), so rows are found by md_row, never by block count,
// and the dot of a float part takes how many of its values are in the row.
// Each value is computed as the CPU's dequantizeRow computes it
// (native/core/quant/convert_rows.cpp), product by product.
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
typedef struct md_block_bf16 {
  md_u16 v[MD_QK];  // the high 16 bits of a float32
} md_block_bf16;

inline float md_block_value(device const md_block_f32* b, uint j) { return b->v[j]; }
inline float md_block_value(device const md_block_f16* b, uint j) { return float(b->v[j]); }
inline float md_block_value(device const md_block_q8_0* b, uint j) { return float(b->qs[j]) * float(as_type<half>(b->d)); }
inline float md_block_value(device const md_block_bf16* b, uint j) { return as_type<float>(uint(b->v[j]) << 16); }
inline float md_block_value(device const md_block_q4_1* b, uint j) {
  const uint q = j < MD_QK / 2 ? (b->qs[j] & 0x0fu) : (uint(b->qs[j - MD_QK / 2]) >> 4);
  return float(q) * float(as_type<half>(b->d)) + float(as_type<half>(b->m));
}
// Q5_0: the fifth bit of value j is bit j of qh, read as a little-endian word.
inline float md_block_value(device const md_block_q5_0* b, uint j) {
  const uint qh = uint(b->qh[0]) | (uint(b->qh[1]) << 8) | (uint(b->qh[2]) << 16) | (uint(b->qh[3]) << 24);
  const uint low = j < MD_QK / 2 ? (b->qs[j] & 0x0fu) : (uint(b->qs[j - MD_QK / 2]) >> 4);
  return float(int(low | (((qh >> j) & 1u) << 4)) - 16) * float(as_type<half>(b->d));
}
inline float md_block_value(device const md_block_q4_0* b, uint j) {
  const uint q = j < MD_QK / 2 ? (b->qs[j] & 0x0fu) : (uint(b->qs[j - MD_QK / 2]) >> 4);
  return float(int(q) - 8) * float(as_type<half>(b->d));
}

// The dots of a float part read its first n values (n < MD_QK only at the
// end of a row); a quantized part is always whole, and ignores n.
inline float md_block_dot(device const md_block_f32* b, uint, device const float* x, uint n) {
  float sum = 0.0f;
  for (uint j = 0; j < n; ++j) sum += b->v[j] * x[j];
  return sum;
}

inline float md_block_dot(device const md_block_f16* b, uint, device const float* x, uint n) {
  float sum = 0.0f;
  for (uint j = 0; j < n; ++j) sum += float(b->v[j]) * x[j];
  return sum;
}

inline float md_block_dot(device const md_block_q8_0* b, uint, device const float* x, uint) {
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) sum += float(b->qs[j]) * x[j];
  return sum * float(as_type<half>(b->d));
}

inline float md_block_dot(device const md_block_q4_0* b, uint, device const float* x, uint) {
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK / 2; ++j) {
    const uint q = b->qs[j];
    sum += float(int(q & 0x0fu) - 8) * x[j];
    sum += float(int(q >> 4) - 8) * x[j + MD_QK / 2];
  }
  return sum * float(as_type<half>(b->d));
}

// BF16, Q4_1 and Q5_0: each value as the CPU dequantizes it, then the dot.
template <typename Block>
inline float md_value_dot(device const Block* b, device const float* x, uint n) {
  float sum = 0.0f;
  for (uint j = 0; j < n; ++j) sum += md_block_value(b, j) * x[j];
  return sum;
}
inline float md_block_dot(device const md_block_bf16* b, uint, device const float* x, uint n) { return md_value_dot(b, x, n); }
inline float md_block_dot(device const md_block_q4_1* b, uint, device const float* x, uint) { return md_value_dot(b, x, MD_QK); }
inline float md_block_dot(device const md_block_q5_0* b, uint, device const float* x, uint) { return md_value_dot(b, x, MD_QK); }

// Values per block, by type (the pointer only picks the overload).
template <typename Block>
inline uint md_block_values(device const Block*) { return MD_QK; }
inline uint md_block_values(device const md_block_q4_k*) { return MD_QK_K; }
inline uint md_block_values(device const md_block_q5_k*) { return MD_QK_K; }
inline uint md_block_values(device const md_block_q6_k*) { return MD_QK_K; }

// ---- the K types: super-blocks of 256 values in 8 parts of 32 ----------------

// Part j's 6-bit scale and min of a Q4_K or Q5_K block (llama.cpp's
// get_scale_min_k4; the CPU unpacks the same bits four at a time).
inline void md_k4_scale_min(device const md_u8* q, uint j, thread uint& scale, thread uint& min) {
  if (j < 4) {
    scale = q[j] & 63u;
    min = q[j + 4] & 63u;
  } else {
    scale = (q[j + 4] & 0x0fu) | ((uint(q[j - 4]) >> 6) << 4);
    min = (uint(q[j + 4]) >> 4) | ((uint(q[j]) >> 6) << 4);
  }
}

// Value l of part j: d * scale * q - dmin * min, with q's fifth bit from qh for Q5_K.
template <typename Block>
inline float md_k45_value(device const Block* b, uint j, uint l, uint fifth) {
  uint scale, min;
  md_k4_scale_min(b->scales, j, scale, min);
  const float d1 = float(as_type<half>(b->d)) * float(scale), m1 = float(as_type<half>(b->dmin)) * float(min);
  const uint q = b->qs[32 * (j / 2) + l];
  return d1 * float(((j & 1) != 0 ? q >> 4 : q & 0x0fu) + fifth) - m1;
}

inline float md_k_value(device const md_block_q4_k* b, uint j, uint l) { return md_k45_value(b, j, l, 0); }
inline float md_k_value(device const md_block_q5_k* b, uint j, uint l) { return md_k45_value(b, j, l, ((b->qh[l] >> j) & 1u) != 0 ? 16u : 0u); }

// Q6_K: part j is quarter j % 4 of half j / 4; 4 low bits from ql, 2 high from qh.
inline float md_k_value(device const md_block_q6_k* b, uint j, uint l) {
  const uint half_index = j / 4, quarter = j % 4;
  const uint low = b->ql[64 * half_index + l + ((quarter & 1u) != 0 ? 32u : 0u)];
  const uint q = ((quarter >= 2 ? low >> 4 : low & 0x0fu) | (((uint(b->qh[32 * half_index + l]) >> (2 * quarter)) & 3u) << 4));
  const float scale = float(b->scales[8 * half_index + l / 16 + 2 * quarter]);
  return float(as_type<half>(b->d)) * scale * float(int(q) - 32);
}

inline float md_block_value(device const md_block_q4_k* b, uint j) { return md_k_value(b, j / 32, j % 32); }
inline float md_block_value(device const md_block_q5_k* b, uint j) { return md_k_value(b, j / 32, j % 32); }
inline float md_block_value(device const md_block_q6_k* b, uint j) { return md_k_value(b, j / 32, j % 32); }

template <typename Block>
inline float md_k_part_dot(device const Block* b, uint part, device const float* x) {
  float sum = 0.0f;
  for (uint l = 0; l < 32; ++l) sum += md_k_value(b, part, l) * x[l];
  return sum;
}
inline float md_block_dot(device const md_block_q4_k* b, uint part, device const float* x, uint) { return md_k_part_dot(b, part, x); }
inline float md_block_dot(device const md_block_q5_k* b, uint part, device const float* x, uint) { return md_k_part_dot(b, part, x); }
inline float md_block_dot(device const md_block_q6_k* b, uint part, device const float* x, uint) { return md_k_part_dot(b, part, x); }

// ---- rows -------------------------------------------------------------------

// Where row `row` of a matrix of `cols` values per row starts. A row's
// bytes are cols / values blocks: for the block types a whole number (the
// file's rule), for float rows (a "block" of 32 values) cols values' bytes,
// so a float row may start inside a block: those blocks have the alignment
// of one value, so the pointer is a valid one.
template <typename Block>
inline device const Block* md_row(device const Block* w, uint row, uint cols) {
  const ulong row_bytes = ulong(cols) * sizeof(Block) / md_block_values(w);
  return (device const Block*)((device const md_u8*)w + ulong(row) * row_bytes);
}

// Value j of a row md_row found.
template <typename Block>
inline float md_row_value(device const Block* row, uint j) {
  const uint values = md_block_values(row);
  return md_block_value(row + j / values, j % values);
}

#endif  // MD_BLOCK_VALUES_H
