// md_blocks.h: the byte layout of each quantized GGUF block (little-endian,
// float16 scales as raw bits), the one definition the CPU code
// (native/core/quant/blocks.h) and the Metal kernels both read.
#ifndef MD_BLOCKS_H
#define MD_BLOCKS_H

#ifdef __METAL_VERSION__
typedef ushort md_u16;
typedef short md_i16;
typedef uchar md_u8;
typedef char md_i8;
#else
#include <stdint.h>
typedef uint16_t md_u16;
typedef int16_t md_i16;
typedef uint8_t md_u8;
typedef int8_t md_i8;
#endif

#define MD_QK 32     // values per block of the 0/1 types
#define MD_QK_K 256  // values per block of the K types

typedef struct md_block_q4_0 {
  md_u16 d;              // scale
  md_u8 qs[MD_QK / 2];   // value j in the low nibble of qs[j], j + 16 in the high one; x = (q - 8) * d
} md_block_q4_0;
typedef struct md_block_q4_1 {
  md_u16 d, m;           // x = q * d + m
  md_u8 qs[MD_QK / 2];
} md_block_q4_1;
typedef struct md_block_q5_0 {
  md_u16 d;
  md_u8 qh[4];           // bit j: the fifth bit of value j; x = (q - 16) * d
  md_u8 qs[MD_QK / 2];
} md_block_q5_0;
typedef struct md_block_q5_1 {
  md_u16 d, m;           // x = q * d + m, q's fifth bit as Q5_0's
  md_u8 qh[4];
  md_u8 qs[MD_QK / 2];
} md_block_q5_1;
// IQ4_NL: value j is md_iq4nl_values[nibble] * d, nibbles as Q4_0's.
typedef struct md_block_iq4_nl {
  md_u16 d;
  md_u8 qs[MD_QK / 2];
} md_block_iq4_nl;
typedef struct md_block_q8_0 {
  md_u16 d;
  md_i8 qs[MD_QK];
} md_block_q8_0;
typedef struct md_block_q8_1 {
  md_u16 d, s;           // s = d * sum(qs)
  md_i8 qs[MD_QK];
} md_block_q8_1;
// Q2_K: part j (32 values) is 2-bit field j % 4 of qs[32 (j / 4) + l];
// value l of part j is d * (sc & 15) * q - dmin * (sc >> 4), sc =
// scales[2j + l / 16].
typedef struct md_block_q2_k {
  md_u8 scales[MD_QK_K / 16];
  md_u8 qs[MD_QK_K / 4];
  md_u16 d, dmin;
} md_block_q2_k;
// Q3_K: value l of part j is d * (s - 32) * q, q = Q2_K's 2-bit field
// minus 4 when bit j of hmask[l] is clear, s the 6-bit scale i = 2j + l / 16
// of `scales`: its low 4 bits the nibble i % 8 of bytes 0-7 (low nibbles
// first), its high 2 bits field i / 4 of byte 8 + i % 4.
typedef struct md_block_q3_k {
  md_u8 hmask[MD_QK_K / 8];
  md_u8 qs[MD_QK_K / 4];
  md_u8 scales[12];
  md_u16 d;
} md_block_q3_k;
typedef struct md_block_q4_k {
  md_u16 d, dmin;        // super-block scales of the 6-bit sub-block scales and mins
  md_u8 scales[12];      // 8 scales and 8 mins, 6 bits each
  md_u8 qs[MD_QK_K / 2];
} md_block_q4_k;
typedef struct md_block_q5_k {
  md_u16 d, dmin;
  md_u8 scales[12];
  md_u8 qh[MD_QK_K / 8];
  md_u8 qs[MD_QK_K / 2];
} md_block_q5_k;
typedef struct md_block_q6_k {
  md_u8 ql[MD_QK_K / 2];   // low 4 bits
  md_u8 qh[MD_QK_K / 4];   // high 2 bits
  md_i8 scales[MD_QK_K / 16];
  md_u16 d;
} md_block_q6_k;
// IQ4_XS: IQ4_NL's codebook in super-blocks: part j's scale is d * (s - 32),
// s = 4 bits of scales_l[j / 2] (low nibble for even j) and 2 bits (2j) of scales_h.
typedef struct md_block_iq4_xs {
  md_u16 d;
  md_u16 scales_h;
  md_u8 scales_l[MD_QK_K / 64];
  md_u8 qs[MD_QK_K / 2];  // part j's 32 values: the nibbles of qs[16 j .. 16 j + 15], low then high
} md_block_iq4_xs;
typedef struct md_block_q8_k {
  float d;
  md_i8 qs[MD_QK_K];
  md_i16 bsums[MD_QK_K / 16];  // sums of each 16 quants
} md_block_q8_k;

// The 16 values an IQ4_NL or IQ4_XS nibble stands for (llama.cpp's
// kvalues_iq4nl): one list, for the CPU's table and the kernels'.
#define MD_IQ4NL_VALUES {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// Every tensor type this package reads, the one list: its GGUF name and
// type id, its kernels' suffix, and its block (values, bytes; a float row
// is blocks of one value). Expanded into the CPU's type table
// (native/core/quant/tensor_types.cpp, which the TypeScript side reads
// through the addon), the emulator's kernel table (native/emu/kernels.cpp)
// and the kernel contracts (native/core/kernel_contracts.cpp).
// X(NAME, suffix, id, blockValues, blockBytes)
//
// Adding a weight type: its line here and its block struct above; its
// md_block_value (md_block_values.h); its kernels in matvec.metal,
// matmul.metal, embedding.metal and head_sampling.metal (the emulator
// table then needs them, and test/kernel-sources.test.ts checks the
// sets are equal); its dequantization and dot product on the CPU
// (native/core/quant/convert_rows.cpp, dot_kernels.h).
#define MD_WEIGHT_TYPES(X)                          \
  X(F32, f32, 0, 1, 4)                              \
  X(F16, f16, 1, 1, 2)                              \
  X(Q4_0, q4_0, 2, MD_QK, sizeof(md_block_q4_0))    \
  X(Q4_1, q4_1, 3, MD_QK, sizeof(md_block_q4_1))    \
  X(Q5_0, q5_0, 6, MD_QK, sizeof(md_block_q5_0))    \
  X(Q5_1, q5_1, 7, MD_QK, sizeof(md_block_q5_1))    \
  X(Q8_0, q8_0, 8, MD_QK, sizeof(md_block_q8_0))    \
  X(Q2_K, q2_k, 10, MD_QK_K, sizeof(md_block_q2_k)) \
  X(Q3_K, q3_k, 11, MD_QK_K, sizeof(md_block_q3_k)) \
  X(Q4_K, q4_k, 12, MD_QK_K, sizeof(md_block_q4_k)) \
  X(Q5_K, q5_k, 13, MD_QK_K, sizeof(md_block_q5_k)) \
  X(Q6_K, q6_k, 14, MD_QK_K, sizeof(md_block_q6_k)) \
  X(IQ4_NL, iq4_nl, 20, MD_QK, sizeof(md_block_iq4_nl)) \
  X(IQ4_XS, iq4_xs, 23, MD_QK_K, sizeof(md_block_iq4_xs)) \
  X(BF16, bf16, 30, 1, 2)

// The types only activations take: the partners the CPU's dot products
// convert activations to (Q8_1 for Q4_1 and Q5_1, Q8_K for the K types and IQ4_XS).
#define MD_ACTIVATION_TYPES(X)                      \
  X(Q8_1, q8_1, 9, MD_QK, sizeof(md_block_q8_1))    \
  X(Q8_K, q8_k, 15, MD_QK_K, sizeof(md_block_q8_k))

#endif  // MD_BLOCKS_H
