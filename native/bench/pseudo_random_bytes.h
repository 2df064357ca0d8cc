// pseudo_random_bytes.h: fixed pseudo-random bytes (a linear congruential
// generator) for the instruction-count programs, which need data whose
// values no kernel branches on, the same on every run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

inline std::vector<uint8_t> pseudoRandomBytes(size_t count, uint32_t seed) {
  std::vector<uint8_t> out(count);
  for (uint8_t& b : out) {
    seed = seed * 1664525u + 1013904223u;
    b = uint8_t(seed >> 24);
  }
  return out;
}
