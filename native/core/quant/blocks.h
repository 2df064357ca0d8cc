// blocks.h: the byte layout of each quantized block, as GGUF stores it,
// for the CPU code: the structs of metal/md_blocks.h (shared with the
// Metal kernels) under C++ names. The sizes are checked against
// tensor_types.cpp's table, so the two cannot drift apart.
#pragma once
#include <cstdint>
#include <cstring>

#include "md_blocks.h"

namespace md::blocks {

constexpr int kBlock = MD_QK;         // values per block of the 0/1 types
constexpr int kSuperBlock = MD_QK_K;  // values per block of the K types

using Q4_0 = md_block_q4_0;
using Q4_1 = md_block_q4_1;
using Q5_0 = md_block_q5_0;
using Q5_1 = md_block_q5_1;
using IQ4_NL = md_block_iq4_nl;
using Q8_0 = md_block_q8_0;
using Q8_1 = md_block_q8_1;
using Q2_K = md_block_q2_k;
using Q3_K = md_block_q3_k;
using Q4_K = md_block_q4_k;
using Q5_K = md_block_q5_k;
using Q6_K = md_block_q6_k;
using Q8_K = md_block_q8_k;
using IQ4_XS = md_block_iq4_xs;

// What each IQ4 nibble stands for.
constexpr int8_t kIq4Values[16] = MD_IQ4NL_VALUES;

static_assert(sizeof(Q4_0) == 18 && sizeof(Q4_1) == 20 && sizeof(Q5_0) == 22 && sizeof(Q5_1) == 24 &&
                  sizeof(Q8_0) == 34 && sizeof(Q8_1) == 36 && sizeof(IQ4_NL) == 18,
              "0/1 block layouts");
static_assert(sizeof(Q2_K) == 84 && sizeof(Q3_K) == 110 && sizeof(Q4_K) == 144 && sizeof(Q5_K) == 176 &&
                  sizeof(Q6_K) == 210 && sizeof(Q8_K) == 292 && sizeof(IQ4_XS) == 136,
              "K block layouts");

// The 8 6-bit scales (out[0..7]) and mins (out[8..15]) of a Q4_K or Q5_K
// block, unpacked four at a time in 32-bit words. `static`: every file
// that uses it gets its own copy, so a file built for AVX-512 or AMX never
// shares its build of it with portable code (scripts/check-isa-symbols.mjs).
static inline void scalesAndMinsK4(const uint8_t* q, uint8_t out[16]) {
  constexpr uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
  uint32_t u[4];
  std::memcpy(u, q, 12);
  u[3] = ((u[2] >> 4) & low4) | (((u[1] >> 6) & low2) << 4);
  const uint32_t mins = u[1] & low6;
  u[1] = (u[2] & low4) | (((u[0] >> 6) & low2) << 4);
  u[2] = mins;
  u[0] &= low6;
  std::memcpy(out, u, 16);
}

// The 16 6-bit scales of a Q3_K block, minus 32 (llama.cpp's unpacking,
// four at a time in 32-bit words). `static` for the reason above.
static inline void scalesQ3K(const uint8_t* q, int8_t out[16]) {
  constexpr uint32_t low4 = 0x0f0f0f0f, low2 = 0x03030303;
  uint32_t u[4];
  std::memcpy(u, q, 12);
  const uint32_t high = u[2];
  u[2] = ((u[0] >> 4) & low4) | (((high >> 4) & low2) << 4);
  u[3] = ((u[1] >> 4) & low4) | (((high >> 6) & low2) << 4);
  u[0] = (u[0] & low4) | ((high & low2) << 4);
  u[1] = (u[1] & low4) | (((high >> 2) & low2) << 4);
  std::memcpy(out, u, 16);
  for (int i = 0; i < 16; ++i) out[i] = int8_t(out[i] - 32);
}

// Part j's 6-bit scale of an IQ4_XS block, minus 32.
static inline int iq4xsScale(const IQ4_XS& b, int j) {
  return int(((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xf) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

}  // namespace md::blocks
