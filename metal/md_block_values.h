// md_block_values.h: reading the values of a GGUF block in a kernel: one
// value (the embedding lookup) or the dot product of one 32-value part of
// a block with 32 floats (the matrix-vector kernels; the 0 types and float
// rows are one part per block, the K types eight). Float rows are taken
// as blocks of 32 values too, so every type has the same loops; but a
// float row may have any length (a quantized row is whole blocks, the
// file's own rule), so rows are found by md_row, never by block count,
// and the dot of a float part takes how many of its values are in the row.
// A value is computed as the CPU's dequantizeRow computes it
// (native/core/quant/convert_rows.cpp); a quantized dot folds scales and
// offsets as llama.cpp's Metal kernels do (see md_block_dot).
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

// Q5_1: Q5_0's bits, the value q * d + m.
inline float md_block_value(device const md_block_q5_1* b, uint j) {
  const uint qh = uint(b->qh[0]) | (uint(b->qh[1]) << 8) | (uint(b->qh[2]) << 16) | (uint(b->qh[3]) << 24);
  const uint low = j < MD_QK / 2 ? (b->qs[j] & 0x0fu) : (uint(b->qs[j - MD_QK / 2]) >> 4);
  return float(low | (((qh >> j) & 1u) << 4)) * float(as_type<half>(b->d)) + float(as_type<half>(b->m));
}

// What an IQ4 nibble stands for (md_blocks.h's list, as the CPU's table).
constant md_i8 md_iq4nl_values[16] = MD_IQ4NL_VALUES;

inline float md_block_value(device const md_block_iq4_nl* b, uint j) {
  const uint q = j < MD_QK / 2 ? (b->qs[j] & 0x0fu) : (uint(b->qs[j - MD_QK / 2]) >> 4);
  return float(as_type<half>(b->d)) * float(md_iq4nl_values[q]);
}

// The dot of one 32-value part of a block with the part's x, which the
// caller has loaded into registers once for all its rows. Each dot reads
// its block's bytes once (scales and offsets into registers first). A
// float part sums its products in order, as dequantizing value by value
// would, and reads its first n values (n < MD_QK only at the end of a
// row). A quantized part is always whole, and does what llama.cpp's Metal
// kernels do to spend fewer operations per weight: it sums q * x over the
// raw quants with explicit fma() (safe math forbids reordering, not an
// explicit fma), then applies the scale once, and folds the offset (Q4_0's
// -8, Q4_1's m, a K type's minimum) into x's sums over the part's halves
// (md_x_sums: taken once per window for all rows). That is another order
// of rounding than value by value, so the kernel tests bound the error
// against an exact dot rather than compare bits; every kernel that sums a
// row (one token, a batch, the fused head) shares this code, so their rows
// still have each other's bits.
//
// The quantized bytes are read as words, 16-bit where the block keeps them
// at an even offset (its size even: Q4_0, Q5_0, Q8_0, Q6_K) and 32-bit
// where at a multiple of 4 (its size too: Q4_1, Q4_K, Q5_K): a half or a
// quarter of the load instructions of byte reads. Byte k of a word is the
// little-endian one (Apple's GPUs, and the CPUs the emulator runs on).

// x's sums over the two halves of a part (values 0-15 and 16-31).
struct md_x_sums {
  float low, high;
};

// Byte k (0-3) of a word.
inline uint md_byte(uint word, uint k) { return (word >> (8u * k)) & 0xffu; }
// A signed byte's value from its bits.
inline int md_signed_byte(uint bits) { return int(bits ^ 0x80u) - 128; }

// The address spaces a block's dot reads it from: device memory (the
// file's bytes, where the CPU twin reads them too) or threadgroup memory
// (md_matvec_rows.h stages a row's lines there with coalesced loads). In
// Metal the space is part of a pointer's type, so each dot below is a
// template on it; the caller names it: md_block_dot<md_device_space>(...).
struct md_device_space {
  template <typename T>
  using ptr = device const T*;
};
struct md_threadgroup_space {
  template <typename T>
  using ptr = threadgroup const T*;
};
#define MD_PTR(S, T) typename S::template ptr<T>

template <typename S>
inline MD_PTR(S, md_u16) md_words16(MD_PTR(S, md_u8) bytes) { return (MD_PTR(S, md_u16))bytes; }
template <typename S>
inline MD_PTR(S, uint) md_words32(MD_PTR(S, md_u8) bytes) { return (MD_PTR(S, uint))bytes; }

template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_f32) b, uint, thread const float* x, uint n) {
  float sum = 0.0f;
  for (uint j = 0; j < n; ++j) sum += b->v[j] * x[j];
  return sum;
}

template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_f16) b, uint, thread const float* x, uint n) {
  float sum = 0.0f;
  for (uint j = 0; j < n; ++j) sum += float(b->v[j]) * x[j];
  return sum;
}

template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_bf16) b, uint, thread const float* x, uint n) {
  float sum = 0.0f;
  for (uint j = 0; j < n; ++j) sum += as_type<float>(uint(b->v[j]) << 16) * x[j];
  return sum;
}

template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_q8_0) b, uint, thread const float* x, md_x_sums) {
  MD_PTR(S, md_u16) qs = md_words16<S>((MD_PTR(S, md_u8))b->qs);  // 2 bytes into the block
  float sum = 0.0f;
  for (uint i = 0; i < MD_QK / 2; ++i) {
    const uint w = qs[i];
    sum = fma(float(md_signed_byte(w & 0xffu)), x[2 * i], sum);
    sum = fma(float(md_signed_byte(w >> 8)), x[2 * i + 1], sum);
  }
  return sum * float(as_type<half>(b->d));
}

// Q4_0: d * (q - 8) summed as d * (sum q x - 8 sum x).
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_q4_0) b, uint, thread const float* x, md_x_sums xs) {
  MD_PTR(S, md_u16) qs = md_words16<S>(b->qs);  // 2 bytes into the block
  float sum = 0.0f;
  for (uint i = 0; i < MD_QK / 4; ++i) {
    const uint w = qs[i];
    for (uint k = 0; k < 2; ++k) {
      const uint q = md_byte(w, k), j = 2 * i + k;
      sum = fma(float(q & 0x0fu), x[j], sum);
      sum = fma(float(q >> 4), x[j + MD_QK / 2], sum);
    }
  }
  return float(as_type<half>(b->d)) * (sum - 8.0f * (xs.low + xs.high));
}

// Q4_1: q * d + m summed as d * sum q x + m * sum x.
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_q4_1) b, uint, thread const float* x, md_x_sums xs) {
  const float d = float(as_type<half>(b->d)), m = float(as_type<half>(b->m));
  MD_PTR(S, uint) qs = md_words32<S>(b->qs);  // 4 bytes into the block
  float sum = 0.0f;
  for (uint i = 0; i < MD_QK / 8; ++i) {
    const uint w = qs[i];  // bytes 4i .. 4i + 3: values 4i + k (low nibbles) and 4i + k + 16 (high)
    for (uint k = 0; k < 4; ++k) {
      sum = fma(float(md_byte(w, k) & 0x0fu), x[4 * i + k], sum);
      sum = fma(float(md_byte(w, k) >> 4), x[4 * i + k + MD_QK / 2], sum);
    }
  }
  return fma(d, sum, m * (xs.low + xs.high));
}

// Q5_0: the fifth bit of value j is bit j of qh, read as a little-endian
// word; d * (q - 16) summed as d * (sum q x - 16 sum x).
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_q5_0) b, uint, thread const float* x, md_x_sums xs) {
  MD_PTR(S, md_u16) high = md_words16<S>(b->qh);  // 2 bytes into the block
  const uint qh = uint(high[0]) | (uint(high[1]) << 16);
  MD_PTR(S, md_u16) qs = md_words16<S>(b->qs);  // 6 bytes in
  float sum = 0.0f;
  for (uint i = 0; i < MD_QK / 4; ++i) {
    const uint w = qs[i];
    for (uint k = 0; k < 2; ++k) {
      const uint q = md_byte(w, k), j = 2 * i + k;
      sum = fma(float((q & 0x0fu) | (((qh >> j) & 1u) << 4)), x[j], sum);
      sum = fma(float((q >> 4) | (((qh >> (j + MD_QK / 2)) & 1u) << 4)), x[j + MD_QK / 2], sum);
    }
  }
  return float(as_type<half>(b->d)) * (sum - 16.0f * (xs.low + xs.high));
}

// Q5_1: Q5_0's bits; q * d + m summed as d * sum q x + m * sum x.
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_q5_1) b, uint, thread const float* x, md_x_sums xs) {
  const uint qh = md_words32<S>(b->qh)[0];    // 4 bytes into the block
  MD_PTR(S, uint) qs = md_words32<S>(b->qs);  // 8 bytes in
  float sum = 0.0f;
  for (uint i = 0; i < MD_QK / 8; ++i) {
    const uint w = qs[i];  // values 4i + k (low nibbles) and 4i + k + 16 (high)
    for (uint k = 0; k < 4; ++k) {
      const uint j = 4 * i + k, q = md_byte(w, k);
      sum = fma(float((q & 0x0fu) | (((qh >> j) & 1u) << 4)), x[j], sum);
      sum = fma(float((q >> 4) | (((qh >> (j + MD_QK / 2)) & 1u) << 4)), x[j + MD_QK / 2], sum);
    }
  }
  return fma(float(as_type<half>(b->d)), sum, float(as_type<half>(b->m)) * (xs.low + xs.high));
}

// IQ4_NL: d * sum(codebook[q] * x).
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_iq4_nl) b, uint, thread const float* x, md_x_sums) {
  MD_PTR(S, md_u16) qs = md_words16<S>(b->qs);  // 2 bytes into the block
  float sum = 0.0f;
  for (uint i = 0; i < MD_QK / 4; ++i) {
    const uint w = qs[i];
    for (uint k = 0; k < 2; ++k) {
      const uint q = md_byte(w, k), j = 2 * i + k;
      sum = fma(float(md_iq4nl_values[q & 0x0fu]), x[j], sum);
      sum = fma(float(md_iq4nl_values[q >> 4]), x[j + MD_QK / 2], sum);
    }
  }
  return float(as_type<half>(b->d)) * sum;
}

// Values per block, by type (the pointer only picks the overload).
template <typename Block>
inline uint md_block_values(device const Block*) { return MD_QK; }
inline uint md_block_values(device const md_block_q4_k*) { return MD_QK_K; }
inline uint md_block_values(device const md_block_q5_k*) { return MD_QK_K; }
inline uint md_block_values(device const md_block_q6_k*) { return MD_QK_K; }
inline uint md_block_values(device const md_block_q2_k*) { return MD_QK_K; }
inline uint md_block_values(device const md_block_q3_k*) { return MD_QK_K; }
inline uint md_block_values(device const md_block_iq4_xs*) { return MD_QK_K; }

// ---- the K types: super-blocks of 256 values in 8 parts of 32 ----------------

// A Q4_K or Q5_K block's 12 bytes of 6-bit scales and mins as three words
// (they sit 4 bytes into the block, so the words are aligned): every lane
// loads all three, the same addresses for the whole SIMD group, so each
// byte is fetched once however the block's parts are spread over lanes.
template <typename S, typename Block>
inline void md_k4_scale_words(MD_PTR(S, Block) b, thread uint* words) {
  MD_PTR(S, uint) w = md_words32<S>(b->scales);
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
  md_k4_scale_words<md_device_space, Block>(b, words);
  md_k4_scale_min(words, j, scale, min);
  const float d1 = float(as_type<half>(b->d)) * float(scale), m1 = float(as_type<half>(b->dmin)) * float(min);
  const uint q = b->qs[32 * (j / 2) + l];
  return d1 * float(((j & 1) != 0 ? q >> 4 : q & 0x0fu) + fifth) - m1;
}

// Q5_K's bytes of fifth bits for values 4i .. 4i + 3 of every part, as a
// word (qh is 16 bytes into the block). Q4_K has none: never called for it.
template <typename S>
inline uint md_q5_k_high_word(MD_PTR(S, md_block_q5_k) b, uint i) { return md_words32<S>(b->qh)[i]; }
template <typename S>
inline uint md_q5_k_high_word(MD_PTR(S, md_block_q4_k), uint) { return 0; }

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

// Q2_K part j: 2-bit field j % 4 of qs[32 (j / 4) + l]; scale byte 2j + l / 16
// holds the scale (low 4 bits) and the min (high 4).
inline float md_k_value(device const md_block_q2_k* b, uint j, uint l) {
  const uint q = (uint(b->qs[32 * (j / 4) + l]) >> (2 * (j % 4))) & 3u;
  const uint sc = b->scales[2 * j + l / 16];
  return float(as_type<half>(b->d)) * float(sc & 0x0fu) * float(q) - float(as_type<half>(b->dmin)) * float(sc >> 4);
}

// Q3_K's 6-bit scale i (0-15), minus 32 (md_blocks.h has the bits).
template <typename S>
inline int md_q3_k_scale(MD_PTR(S, md_block_q3_k) b, uint i) {
  const uint low = (uint(b->scales[i % 8]) >> (4 * (i / 8))) & 0x0fu;
  const uint high = (uint(b->scales[8 + i % 4]) >> (2 * (i / 4))) & 3u;
  return int(low | (high << 4)) - 32;
}

// Q3_K part j: Q2_K's field, minus 4 when bit j of hmask[l] is clear.
inline float md_k_value(device const md_block_q3_k* b, uint j, uint l) {
  const int q = int((uint(b->qs[32 * (j / 4) + l]) >> (2 * (j % 4))) & 3u) - (((b->hmask[l] >> j) & 1u) != 0 ? 0 : 4);
  return float(as_type<half>(b->d)) * float(md_q3_k_scale<md_device_space>(b, 2 * j + l / 16)) * float(q);
}

// IQ4_XS part j's 6-bit scale, minus 32.
template <typename S>
inline int md_iq4_xs_scale(MD_PTR(S, md_block_iq4_xs) b, uint j) {
  return int(((uint(b->scales_l[j / 2]) >> (4 * (j % 2))) & 0x0fu) | (((uint(b->scales_h) >> (2 * j)) & 3u) << 4)) - 32;
}

// IQ4_XS part j: the nibbles of qs[16 j ..], low for values 0-15, high for 16-31.
inline float md_k_value(device const md_block_iq4_xs* b, uint j, uint l) {
  const uint byte = b->qs[16 * j + l % 16];
  const uint q = l < 16 ? (byte & 0x0fu) : (byte >> 4);
  return float(as_type<half>(b->d)) * float(md_iq4_xs_scale<md_device_space>(b, j)) * float(md_iq4nl_values[q]);
}

inline float md_block_value(device const md_block_q2_k* b, uint j) { return md_k_value(b, j / 32, j % 32); }
inline float md_block_value(device const md_block_q3_k* b, uint j) { return md_k_value(b, j / 32, j % 32); }
inline float md_block_value(device const md_block_iq4_xs* b, uint j) { return md_k_value(b, j / 32, j % 32); }
inline float md_block_value(device const md_block_q4_k* b, uint j) { return md_k_value(b, j / 32, j % 32); }
inline float md_block_value(device const md_block_q5_k* b, uint j) { return md_k_value(b, j / 32, j % 32); }
inline float md_block_value(device const md_block_q6_k* b, uint j) { return md_k_value(b, j / 32, j % 32); }

// The dot of part j of a Q4_K or Q5_K super-block: its scale and min, d and
// dmin read once; value l is d1 * q - m1, summed as d1 * sum q x - m1 * sum x.
template <typename S, typename Block>
inline float md_k45_part_dot(MD_PTR(S, Block) b, uint j, thread const float* x, md_x_sums xs, bool fifth_bits) {
  uint words[3], scale, min;
  md_k4_scale_words<S, Block>(b, words);
  md_k4_scale_min(words, j, scale, min);
  const float d1 = float(as_type<half>(b->d)) * float(scale), m1 = float(as_type<half>(b->dmin)) * float(min);
  MD_PTR(S, uint) qs = md_words32<S>(b->qs + 32 * (j / 2));  // 16 (Q4_K) or 48 (Q5_K) bytes in, plus 32s
  // Shifts, not branches, on the lane's part: every lane of a SIMD group
  // then runs the same loads (a branch on the lane would split them).
  const uint shift = (j & 1u) * 4u;
  // One sum per byte of a word: byte k's value is taken in place, masked
  // but not shifted down (q times 256^k, exact in a float), and its sum is
  // scaled by 256^-k once at the end (exact too): an operation less per
  // value than shifting each byte down (llama.cpp scales x instead).
  float sums[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (uint i = 0; i < 8; ++i) {
    // Values 4i .. 4i + 3 a word at a time: their nibbles, and their fifth
    // bits (bit j of each byte of qh's word i) as 16s, one per byte.
    const uint high = fifth_bits ? md_q5_k_high_word<S>(b, i) : 0u;
    const uint q = ((qs[i] >> shift) & 0x0f0f0f0fu) | (((high >> j) & 0x01010101u) << 4);
    for (uint k = 0; k < 4; ++k) sums[k] = fma(float(q & (0xffu << (8u * k))), x[4 * i + k], sums[k]);
  }
  const float sum = fma(sums[3], 1.0f / 16777216.0f, fma(sums[2], 1.0f / 65536.0f, fma(sums[1], 1.0f / 256.0f, sums[0])));
  return fma(d1, sum, -m1 * (xs.low + xs.high));
}

// Q6_K part j: d and the part's two scales (one per 16 values) read once;
// d * scale * (q - 32) summed per half as d * scale * (sum q x - 32 sum x).
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_q6_k) b, uint j, thread const float* x, md_x_sums xs) {
  const uint half_index = j / 4, quarter = j % 4;
  const float d = float(as_type<half>(b->d));
  const float scales[2] = {float(b->scales[8 * half_index + 2 * quarter]), float(b->scales[8 * half_index + 1 + 2 * quarter])};
  MD_PTR(S, md_u16) ql = md_words16<S>(b->ql + 64 * half_index + (quarter & 1u) * 32u);  // even offsets
  MD_PTR(S, md_u16) qh = md_words16<S>(b->qh + 32 * half_index);
  const uint low_shift = (quarter >> 1) * 4u;  // shifts, not branches on the lane's part (see above)
  float sums[2] = {0.0f, 0.0f};
  for (uint i = 0; i < 16; ++i) {
    // Values 2i and 2i + 1 a 16-bit word at a time: 4 low bits from ql, 2
    // high bits from qh, one value per byte.
    const uint q = ((uint(ql[i]) >> low_shift) & 0x0f0fu) | (((uint(qh[i]) >> (2 * quarter)) & 0x0303u) << 4);
    sums[i / 8] = fma(float(q & 0xffu), x[2 * i], sums[i / 8]);
    sums[i / 8] = fma(float(q >> 8), x[2 * i + 1], sums[i / 8]);
  }
  return d * fma(scales[0], sums[0] - 32.0f * xs.low, scales[1] * (sums[1] - 32.0f * xs.high));
}
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_q4_k) b, uint part, thread const float* x, md_x_sums xs) {
  return md_k45_part_dot<S, md_block_q4_k>(b, part, x, xs, false);
}
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_q5_k) b, uint part, thread const float* x, md_x_sums xs) {
  return md_k45_part_dot<S, md_block_q5_k>(b, part, x, xs, true);
}

// Q2_K part j: each 16 values' scale and min (one byte) read once;
// d * sc * q - dmin * m summed per half as d * sc * sum q x - dmin * m * sum x.
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_q2_k) b, uint j, thread const float* x, md_x_sums xs) {
  const uint shift = 2 * (j % 4);
  MD_PTR(S, uint) qs = md_words32<S>(b->qs + 32 * (j / 4));  // 16 bytes into the block, plus 32s
  float sums[2] = {0.0f, 0.0f};
  for (uint i = 0; i < 8; ++i) {
    const uint w = qs[i] >> shift;  // values 4i .. 4i + 3, one per byte
    for (uint k = 0; k < 4; ++k) sums[i / 4] = fma(float(md_byte(w, k) & 3u), x[4 * i + k], sums[i / 4]);
  }
  const uint sc0 = b->scales[2 * j], sc1 = b->scales[2 * j + 1];
  const float d = float(as_type<half>(b->d)), dmin = float(as_type<half>(b->dmin));
  return d * fma(float(sc0 & 0x0fu), sums[0], float(sc1 & 0x0fu) * sums[1]) -
         dmin * fma(float(sc0 >> 4), xs.low, float(sc1 >> 4) * xs.high);
}

// Q3_K part j: the unsigned value u = q + 4 h (h: bit j of hmask[l]) is
// summed, and its offset of 4 taken out per half: d * s * (sum u x - 4 sum x).
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_q3_k) b, uint j, thread const float* x, md_x_sums xs) {
  const uint shift = 2 * (j % 4);
  MD_PTR(S, md_u16) qs = md_words16<S>(b->qs + 32 * (j / 4));  // 32 bytes into the block, plus 32s
  MD_PTR(S, md_u16) hm = md_words16<S>(b->hmask);
  float sums[2] = {0.0f, 0.0f};
  for (uint i = 0; i < 16; ++i) {
    const uint q = (uint(qs[i]) >> shift) & 0x0303u, h = ((uint(hm[i]) >> j) & 0x0101u) << 2;
    const uint u = q | h;  // values 2i and 2i + 1, one per byte
    sums[i / 8] = fma(float(u & 0xffu), x[2 * i], sums[i / 8]);
    sums[i / 8] = fma(float(u >> 8), x[2 * i + 1], sums[i / 8]);
  }
  const float s0 = float(md_q3_k_scale<S>(b, 2 * j)), s1 = float(md_q3_k_scale<S>(b, 2 * j + 1));
  return float(as_type<half>(b->d)) * fma(s0, sums[0] - 4.0f * xs.low, s1 * (sums[1] - 4.0f * xs.high));
}

// IQ4_XS part j: d * s * sum(codebook[q] * x).
template <typename S>
inline float md_block_dot(MD_PTR(S, md_block_iq4_xs) b, uint j, thread const float* x, md_x_sums) {
  MD_PTR(S, uint) qs = md_words32<S>(b->qs + 16 * j);  // 8 bytes into the block, plus 16s
  float sum = 0.0f;
  for (uint i = 0; i < 4; ++i) {
    const uint w = qs[i];  // values 4i + k (low nibbles) and 4i + k + 16 (high)
    for (uint k = 0; k < 4; ++k) {
      const uint q = md_byte(w, k);
      sum = fma(float(md_iq4nl_values[q & 0x0fu]), x[4 * i + k], sum);
      sum = fma(float(md_iq4nl_values[q >> 4]), x[4 * i + k + 16], sum);
    }
  }
  return float(as_type<half>(b->d)) * float(md_iq4_xs_scale<S>(b, j)) * sum;
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

// ---- sixteen values at a time: the prefill's tiles -----------------------------

// The matrix-matrix kernels dequantize a 32-value part into their tiles two
// threads to a part, 16 values each at once (llama.cpp's dequantize_* into a
// half4x4), scales and offsets read once. Thread h (0 or 1) takes values
// 8h .. 8h + 7 and 16 + 8h .. 16 + 8h + 7: in the 0 types value i and value
// i + 16 share a byte, so each thread reads its own 8 bytes. Its value i is
// value md_part_column(h, i) of the part.
inline uint md_part_column(uint h, uint i) { return 8u * h + i + (i & 8u); }

// Each value as the CPU's dequantizeRow computes it.
inline void md_block_values16(device const md_block_q4_0* b, uint, uint h, thread float* v) {
  const float d = float(as_type<half>(b->d));
  for (uint i = 0; i < 8; ++i) {
    const uint q = b->qs[8 * h + i];
    v[i] = float(int(q & 0x0fu) - 8) * d;
    v[8 + i] = float(int(q >> 4) - 8) * d;
  }
}
inline void md_block_values16(device const md_block_q4_1* b, uint, uint h, thread float* v) {
  const float d = float(as_type<half>(b->d)), m = float(as_type<half>(b->m));
  for (uint i = 0; i < 8; ++i) {
    const uint q = b->qs[8 * h + i];
    v[i] = float(q & 0x0fu) * d + m;
    v[8 + i] = float(q >> 4) * d + m;
  }
}
inline void md_block_values16(device const md_block_q5_0* b, uint, uint h, thread float* v) {
  const float d = float(as_type<half>(b->d));
  const uint qh = uint(b->qh[0]) | (uint(b->qh[1]) << 8) | (uint(b->qh[2]) << 16) | (uint(b->qh[3]) << 24);
  for (uint i = 0; i < 8; ++i) {
    const uint q = b->qs[8 * h + i], j = 8 * h + i;  // values j and j + 16
    v[i] = float(int((q & 0x0fu) | (((qh >> j) & 1u) << 4)) - 16) * d;
    v[8 + i] = float(int((q >> 4) | (((qh >> (j + 16)) & 1u) << 4)) - 16) * d;
  }
}
inline void md_block_values16(device const md_block_q5_1* b, uint, uint h, thread float* v) {
  const float d = float(as_type<half>(b->d)), m = float(as_type<half>(b->m));
  const uint qh = uint(b->qh[0]) | (uint(b->qh[1]) << 8) | (uint(b->qh[2]) << 16) | (uint(b->qh[3]) << 24);
  for (uint i = 0; i < 8; ++i) {
    const uint q = b->qs[8 * h + i], j = 8 * h + i;  // values j and j + 16
    v[i] = float((q & 0x0fu) | (((qh >> j) & 1u) << 4)) * d + m;
    v[8 + i] = float((q >> 4) | (((qh >> (j + 16)) & 1u) << 4)) * d + m;
  }
}
inline void md_block_values16(device const md_block_iq4_nl* b, uint, uint h, thread float* v) {
  const float d = float(as_type<half>(b->d));
  for (uint i = 0; i < 8; ++i) {
    const uint q = b->qs[8 * h + i];
    v[i] = d * float(md_iq4nl_values[q & 0x0fu]);
    v[8 + i] = d * float(md_iq4nl_values[q >> 4]);
  }
}
inline void md_block_values16(device const md_block_q8_0* b, uint, uint h, thread float* v) {
  const float d = float(as_type<half>(b->d));
  for (uint i = 0; i < 16; ++i) v[i] = float(b->qs[md_part_column(h, i)]) * d;
}
// Q4_K and Q5_K part j: d * scale * q - dmin * min, q's fifth bit (Q5_K) bit
// j of qh's byte l (Q4_K has none: zeros).
inline uint md_k_fifth_bits(device const md_block_q5_k* b, uint l) { return b->qh[l]; }
inline uint md_k_fifth_bits(device const md_block_q4_k*, uint) { return 0; }
template <typename Block>
inline void md_k45_values16(device const Block* b, uint j, uint h, thread float* v) {
  uint words[3], scale, min;
  md_k4_scale_words<md_device_space, Block>(b, words);
  md_k4_scale_min(words, j, scale, min);
  const float d1 = float(as_type<half>(b->d)) * float(scale), m1 = float(as_type<half>(b->dmin)) * float(min);
  for (uint i = 0; i < 16; ++i) {
    const uint l = md_part_column(h, i);
    const uint fifth = ((md_k_fifth_bits(b, l) >> j) & 1u) << 4;
    v[i] = d1 * float(((uint(b->qs[32 * (j / 2) + l]) >> (4u * (j & 1u))) & 0x0fu) + fifth) - m1;
  }
}
inline void md_block_values16(device const md_block_q4_k* b, uint j, uint h, thread float* v) { md_k45_values16(b, j, h, v); }
inline void md_block_values16(device const md_block_q5_k* b, uint j, uint h, thread float* v) { md_k45_values16(b, j, h, v); }
// Q6_K part j (quarter j % 4 of half j / 4): values 0-15 of a part take its
// first scale, 16-31 its second.
inline void md_block_values16(device const md_block_q6_k* b, uint j, uint h, thread float* v) {
  const uint half_index = j / 4, quarter = j % 4;
  device const md_u8* ql = b->ql + 64 * half_index + (quarter & 1u) * 32u;
  device const md_u8* qh = b->qh + 32 * half_index;
  const float d = float(as_type<half>(b->d));
  const float scales[2] = {float(b->scales[8 * half_index + 2 * quarter]), float(b->scales[8 * half_index + 1 + 2 * quarter])};
  for (uint i = 0; i < 16; ++i) {
    const uint l = md_part_column(h, i);
    const uint q = ((uint(ql[l]) >> ((quarter >> 1) * 4u)) & 0x0fu) | (((uint(qh[l]) >> (2 * quarter)) & 3u) << 4);
    v[i] = d * scales[i / 8] * float(int(q) - 32);
  }
}

// Q2_K, Q3_K and IQ4_XS part j, each value as md_k_value computes it, the
// scales read once: values 0-15 of a part take its first scale, 16-31 its
// second (IQ4_XS: one scale per part).
inline void md_block_values16(device const md_block_q2_k* b, uint j, uint h, thread float* v) {
  device const md_u8* qs = b->qs + 32 * (j / 4);
  const uint shift = 2 * (j % 4);
  const float d = float(as_type<half>(b->d)), dmin = float(as_type<half>(b->dmin));
  const uint sc[2] = {b->scales[2 * j], b->scales[2 * j + 1]};
  for (uint i = 0; i < 16; ++i) {
    const uint l = md_part_column(h, i), s = sc[i / 8];
    v[i] = d * float(s & 0x0fu) * float((uint(qs[l]) >> shift) & 3u) - dmin * float(s >> 4);
  }
}
inline void md_block_values16(device const md_block_q3_k* b, uint j, uint h, thread float* v) {
  device const md_u8* qs = b->qs + 32 * (j / 4);
  const uint shift = 2 * (j % 4);
  const float d = float(as_type<half>(b->d));
  const float scales[2] = {float(md_q3_k_scale<md_device_space>(b, 2 * j)), float(md_q3_k_scale<md_device_space>(b, 2 * j + 1))};
  for (uint i = 0; i < 16; ++i) {
    const uint l = md_part_column(h, i);
    const int q = int((uint(qs[l]) >> shift) & 3u) - (((b->hmask[l] >> j) & 1u) != 0 ? 0 : 4);
    v[i] = d * scales[i / 8] * float(q);
  }
}
inline void md_block_values16(device const md_block_iq4_xs* b, uint j, uint h, thread float* v) {
  const float dl = float(as_type<half>(b->d)) * float(md_iq4_xs_scale<md_device_space>(b, j));
  for (uint i = 0; i < 8; ++i) {
    const uint q = b->qs[16 * j + 8 * h + i];  // values 8h + i and 16 + 8h + i
    v[i] = dl * float(md_iq4nl_values[q & 0x0fu]);
    v[8 + i] = dl * float(md_iq4nl_values[q >> 4]);
  }
}

// Value j of a row md_row found.
template <typename Block>
inline float md_row_value(device const Block* row, uint j) {
  const uint values = md_block_values(row);
  return md_block_value(row + j / values, j % values);
}

// Thread h's 16 values of the 32-value part of a row md_row found that
// starts at column k (see md_part_column). A float row, of any length,
// reads value by value and gives zeros past its end; a quantized row (whole
// blocks) dequantizes them from their block at once.
template <typename Block>
inline void md_row_values16(device const Block* row, uint k, uint h, uint cols, thread float* v) {
  for (uint i = 0; i < 16; ++i) {
    const uint column = k + md_part_column(h, i);
    v[i] = column < cols ? md_row_value(row, column) : 0.0f;
  }
}
#define MD_ROW_VALUES16(Block)                                                         \
  inline void md_row_values16(device const Block* row, uint k, uint h, uint, thread float* v) { \
    const uint values = md_block_values(row);                                         \
    md_block_values16(row + k / values, (k % values) / MD_QK, h, v);                  \
  }
MD_ROW_VALUES16(md_block_q4_0)
MD_ROW_VALUES16(md_block_q4_1)
MD_ROW_VALUES16(md_block_q5_0)
MD_ROW_VALUES16(md_block_q8_0)
MD_ROW_VALUES16(md_block_q5_1)
MD_ROW_VALUES16(md_block_iq4_nl)
MD_ROW_VALUES16(md_block_q2_k)
MD_ROW_VALUES16(md_block_q3_k)
MD_ROW_VALUES16(md_block_iq4_xs)
MD_ROW_VALUES16(md_block_q4_k)
MD_ROW_VALUES16(md_block_q5_k)
MD_ROW_VALUES16(md_block_q6_k)
#undef MD_ROW_VALUES16

#endif  // MD_BLOCK_VALUES_H
