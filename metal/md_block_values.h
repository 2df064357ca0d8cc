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

// The dot of one 32-value part of a block with the part's x, which the
// caller has loaded into registers once for all its rows. Each dot reads
// its block's bytes once (scales and offsets into registers first), then
// sums the products in the order the type has always used, so the result
// is the same bits as dequantizing value by value. A float part reads its
// first n values (n < MD_QK only at the end of a row); a quantized part
// is always whole, and ignores n.
inline float md_block_dot(device const md_block_f32* b, uint, thread const float* x, uint n) {
  float sum = 0.0f;
  for (uint j = 0; j < n; ++j) sum += b->v[j] * x[j];
  return sum;
}

inline float md_block_dot(device const md_block_f16* b, uint, thread const float* x, uint n) {
  float sum = 0.0f;
  for (uint j = 0; j < n; ++j) sum += float(b->v[j]) * x[j];
  return sum;
}

inline float md_block_dot(device const md_block_bf16* b, uint, thread const float* x, uint n) {
  float sum = 0.0f;
  for (uint j = 0; j < n; ++j) sum += as_type<float>(uint(b->v[j]) << 16) * x[j];
  return sum;
}

inline float md_block_dot(device const md_block_q8_0* b, uint, thread const float* x, uint) {
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) sum += float(b->qs[j]) * x[j];
  return sum * float(as_type<half>(b->d));
}

inline float md_block_dot(device const md_block_q4_0* b, uint, thread const float* x, uint) {
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK / 2; ++j) {
    const uint q = b->qs[j];
    sum += float(int(q & 0x0fu) - 8) * x[j];
    sum += float(int(q >> 4) - 8) * x[j + MD_QK / 2];
  }
  return sum * float(as_type<half>(b->d));
}

// A 0-type block's 16 bytes of nibbles, each read once.
template <typename Block>
inline void md_load_nibbles(device const Block* b, thread uint* q) {
  for (uint j = 0; j < MD_QK / 2; ++j) q[j] = b->qs[j];
}

// Q4_1: value j is q * d + m (md_block_value's expression, from registers).
inline float md_block_dot(device const md_block_q4_1* b, uint, thread const float* x, uint) {
  const float d = float(as_type<half>(b->d)), m = float(as_type<half>(b->m));
  uint q[MD_QK / 2];
  md_load_nibbles(b, q);
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) {
    const uint v = j < MD_QK / 2 ? (q[j] & 0x0fu) : (q[j - MD_QK / 2] >> 4);
    sum += (float(v) * d + m) * x[j];
  }
  return sum;
}

// Q5_0: the fifth bit of value j is bit j of qh, read as a little-endian word.
inline float md_block_dot(device const md_block_q5_0* b, uint, thread const float* x, uint) {
  const float d = float(as_type<half>(b->d));
  const uint qh = uint(b->qh[0]) | (uint(b->qh[1]) << 8) | (uint(b->qh[2]) << 16) | (uint(b->qh[3]) << 24);
  uint q[MD_QK / 2];
  md_load_nibbles(b, q);
  float sum = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) {
    const uint low = j < MD_QK / 2 ? (q[j] & 0x0fu) : (q[j - MD_QK / 2] >> 4);
    sum += float(int(low | (((qh >> j) & 1u) << 4)) - 16) * d * x[j];
  }
  return sum;
}

// Values per block, by type (the pointer only picks the overload).
template <typename Block>
inline uint md_block_values(device const Block*) { return MD_QK; }
inline uint md_block_values(device const md_block_q4_k*) { return MD_QK_K; }
inline uint md_block_values(device const md_block_q5_k*) { return MD_QK_K; }
inline uint md_block_values(device const md_block_q6_k*) { return MD_QK_K; }

// ---- the K types: super-blocks of 256 values in 8 parts of 32 ----------------

// A Q4_K or Q5_K block's 12 bytes of 6-bit scales and mins as three words
// (they sit 4 bytes into the block, so the words are aligned): every lane
// loads all three, the same addresses for the whole SIMD group, so each
// byte is fetched once however the block's parts are spread over lanes.
template <typename Block>
inline void md_k4_scale_words(device const Block* b, thread uint* words) {
  device const uint* w = (device const uint*)b->scales;
  for (uint i = 0; i < 3; ++i) words[i] = w[i];
}

// Part j's scale and min (llama.cpp's get_scale_min_k4; the CPU unpacks the
// same bits four at a time), from the words: selects, not branches.
inline void md_k4_scale_min(thread const uint* words, uint j, thread uint& scale, thread uint& min) {
  const uint low = (words[(j & 3u) / 4u] >> (8u * (j & 3u))) & 0xffu;  // byte j % 4
  const uint high = (words[(j + 4u) / 4u] >> (8u * ((j + 4u) & 3u))) & 0xffu;  // byte j + 4
  const uint mid = (words[j / 4u] >> (8u * (j & 3u))) & 0xffu;  // byte j
  const bool upper = j >= 4;
  scale = upper ? ((high & 0x0fu) | ((low >> 6) << 4)) : (low & 63u);
  min = upper ? ((high >> 4) | ((mid >> 6) << 4)) : (high & 63u);
}

// Value l of part j: d * scale * q - dmin * min, with q's fifth bit from qh for Q5_K.
template <typename Block>
inline float md_k45_value(device const Block* b, uint j, uint l, uint fifth) {
  uint words[3], scale, min;
  md_k4_scale_words(b, words);
  md_k4_scale_min(words, j, scale, min);
  const float d1 = float(as_type<half>(b->d)) * float(scale), m1 = float(as_type<half>(b->dmin)) * float(min);
  const uint q = b->qs[32 * (j / 2) + l];
  return d1 * float(((j & 1) != 0 ? q >> 4 : q & 0x0fu) + fifth) - m1;
}

// Q5_K's byte of fifth bits for value l of every part (Q4_K has none: never called for it).
inline uint md_q5_k_high_bits(device const md_block_q5_k* b, uint l) { return b->qh[l]; }
inline uint md_q5_k_high_bits(device const md_block_q4_k*, uint) { return 0; }

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

// The dot of part j of a Q4_K or Q5_K super-block: its scale and min, d and
// dmin read once; then value l is d1 * q - m1 as md_k45_value computes it.
template <typename Block>
inline float md_k45_part_dot(device const Block* b, uint j, thread const float* x, bool fifth_bits) {
  uint words[3], scale, min;
  md_k4_scale_words(b, words);
  md_k4_scale_min(words, j, scale, min);
  const float d1 = float(as_type<half>(b->d)) * float(scale), m1 = float(as_type<half>(b->dmin)) * float(min);
  device const md_u8* qs = b->qs + 32 * (j / 2);
  // Shifts, not branches, on the lane's part: every lane of a SIMD group
  // then runs the same loads (a branch on the lane would split them).
  const uint shift = (j & 1u) * 4u;
  float sum = 0.0f;
  for (uint l = 0; l < 32; ++l) {
    const uint fifth = fifth_bits ? ((md_q5_k_high_bits(b, l) >> j) & 1u) << 4 : 0u;
    sum += (d1 * float(((uint(qs[l]) >> shift) & 0x0fu) + fifth) - m1) * x[l];
  }
  return sum;
}

// Q6_K part j: d and the part's two scales read once, then md_k_value's expression.
inline float md_block_dot(device const md_block_q6_k* b, uint j, thread const float* x, uint) {
  const uint half_index = j / 4, quarter = j % 4;
  const float d = float(as_type<half>(b->d));
  const float scales[2] = {float(b->scales[8 * half_index + 2 * quarter]), float(b->scales[8 * half_index + 1 + 2 * quarter])};
  device const md_u8* ql = b->ql + 64 * half_index + (quarter & 1u) * 32u;
  device const md_u8* qh = b->qh + 32 * half_index;
  const uint low_shift = (quarter >> 1) * 4u;  // shifts, not branches on the lane's part (see above)
  float sum = 0.0f;
  for (uint l = 0; l < 32; ++l) {
    const uint q = ((uint(ql[l]) >> low_shift) & 0x0fu) | (((uint(qh[l]) >> (2 * quarter)) & 3u) << 4);
    sum += d * scales[l / 16] * float(int(q) - 32) * x[l];
  }
  return sum;
}
inline float md_block_dot(device const md_block_q4_k* b, uint part, thread const float* x, uint) {
  return md_k45_part_dot(b, part, x, false);
}
inline float md_block_dot(device const md_block_q5_k* b, uint part, thread const float* x, uint) {
  return md_k45_part_dot(b, part, x, true);
}

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
