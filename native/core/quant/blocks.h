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
using Q8_0 = md_block_q8_0;
using Q8_1 = md_block_q8_1;
using Q4_K = md_block_q4_k;
using Q5_K = md_block_q5_k;
using Q6_K = md_block_q6_k;
using Q8_K = md_block_q8_k;

static_assert(sizeof(Q4_0) == 18 && sizeof(Q4_1) == 20 && sizeof(Q5_0) == 22 && sizeof(Q8_0) == 34 &&
                  sizeof(Q8_1) == 36,
              "0/1 block layouts");
static_assert(sizeof(Q4_K) == 144 && sizeof(Q5_K) == 176 && sizeof(Q6_K) == 210 && sizeof(Q8_K) == 292,
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

}  // namespace md::blocks
