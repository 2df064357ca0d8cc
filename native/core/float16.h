// float16.h: IEEE binary16 <-> float32 conversion on raw bits.
// Header-only so the hot loops can inline and vectorise it.
#pragma once
#include <cstdint>
#include <cstring>

namespace md {

inline float floatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t bitsFromFloat(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Exact for every half, including subnormals, infinities and NaN. Branch-free
// for finite values: the 15 exponent+mantissa bits are moved into float
// position and rescaled by 2^112, which also normalises subnormals.
inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t em = h & 0x7FFFu;
  float magnitude = floatFromBits(em << 13) * 0x1p112f;
  uint32_t bits = bitsFromFloat(magnitude);
  bits = em >= 0x7C00u ? (0x7F800000u | ((em & 0x3FFu) << 13)) : bits;
  return floatFromBits(bits | sign);
}

// Round to nearest, ties to even (the rounding docs/sampling.md asks for).
inline uint16_t halfFromFloat(float f) {
  uint32_t x = bitsFromFloat(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) return uint16_t(sign | (ax > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (ax >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {
    // Below the smallest normal half: adding 0.5 makes the FPU round at the
    // half-subnormal step (2^-24), ties to even.
    float d = floatFromBits(ax) + 0.5f;
    return uint16_t(sign | (bitsFromFloat(d) - 0x3F000000u));
  }
  uint32_t odd = (ax >> 13) & 1u;
  ax += 0xC8000FFFu + odd;  // rebias exponent (-112 << 23) and round
  return uint16_t(sign | (ax >> 13));
}

}  // namespace md
