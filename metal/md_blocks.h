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
typedef struct md_block_q8_0 {
  md_u16 d;
  md_i8 qs[MD_QK];
} md_block_q8_0;
typedef struct md_block_q8_1 {
  md_u16 d, s;           // s = d * sum(qs)
  md_i8 qs[MD_QK];
} md_block_q8_1;
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
typedef struct md_block_q8_k {
  float d;
  md_i8 qs[MD_QK_K];
  md_i16 bsums[MD_QK_K / 16];  // sums of each 16 quants
} md_block_q8_k;

#endif  // MD_BLOCKS_H
