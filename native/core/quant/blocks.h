// blocks.h: the byte layout of each quantized block, as GGUF stores it
// (little-endian; float16 scales as raw bits). The sizes are checked
// against tensor_types.cpp's table, so the two cannot drift apart.
#pragma once
#include <cstdint>
#include <cstring>

namespace md::blocks {

constexpr int kBlock = 32;      // values per block of the 0/1 types
constexpr int kSuperBlock = 256;  // values per block of the K types

struct Q4_0 {
  uint16_t d;               // scale
  uint8_t qs[kBlock / 2];   // value j in the low nibble of qs[j], j + 16 in the high one; x = (q - 8) * d
};
struct Q4_1 {
  uint16_t d, m;            // x = q * d + m
  uint8_t qs[kBlock / 2];
};
struct Q5_0 {
  uint16_t d;
  uint8_t qh[4];            // bit j: the fifth bit of value j; x = (q - 16) * d
  uint8_t qs[kBlock / 2];
};
struct Q8_0 {
  uint16_t d;
  int8_t qs[kBlock];
};
struct Q8_1 {
  uint16_t d, s;            // s = d * sum(qs)
  int8_t qs[kBlock];
};
struct Q4_K {
  uint16_t d, dmin;         // super-block scales of the 6-bit sub-block scales and mins
  uint8_t scales[12];       // 8 scales and 8 mins, 6 bits each (see scalesAndMinsK4)
  uint8_t qs[kSuperBlock / 2];
};
struct Q5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 2];
};
struct Q6_K {
  uint8_t ql[kSuperBlock / 2];  // low 4 bits
  uint8_t qh[kSuperBlock / 4];  // high 2 bits
  int8_t scales[kSuperBlock / 16];
  uint16_t d;
};
struct Q8_K {
  float d;
  int8_t qs[kSuperBlock];
  int16_t bsums[kSuperBlock / 16];  // sums of each 16 quants
};

static_assert(sizeof(Q4_0) == 18 && sizeof(Q4_1) == 20 && sizeof(Q5_0) == 22 && sizeof(Q8_0) == 34 &&
              sizeof(Q8_1) == 36, "0/1 block layouts");
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
