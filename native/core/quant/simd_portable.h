// simd_portable.h: the byte-vector operations the dot kernels
// (dot_kernels.h) are written in, in plain C++: the reference the AVX2 and
// NEON versions are tested against, and the path on any other CPU.
#pragma once
#include <cstdint>
#include <cstring>

#include "../float16.h"

namespace md::simd {

struct Portable {
  static constexpr const char* kName = "portable";
  static constexpr bool kRowLanes = false;    // one lane: no repacked tiles (repack.h)
  static constexpr bool kFloatTiles = false;  // one row dot per pair (DotKernels::floatTile)
  struct V {
    uint8_t b[32];
  };  // 32 bytes, read as uint8 or int8 by each op
  using I = int32_t;
  using F = float;

  static float half(uint16_t bits) { return halfToFloat(bits); }
  static V load(const void* p) {
    V v;
    std::memcpy(v.b, p, 32);
    return v;
  }
  static V splat(uint8_t x) {
    V v;
    std::memset(v.b, x, 32);
    return v;
  }
  // 16 bytes -> their low nibbles, then their high nibbles.
  static V nibbles16(const uint8_t* p) {
    V v;
    for (int i = 0; i < 16; ++i) {
      v.b[i] = p[i] & 0xF;
      v.b[i + 16] = p[i] >> 4;
    }
    return v;
  }
  static V lowNibbles(V x) {
    for (auto& b : x.b) b &= 0xF;
    return x;
  }
  static V highNibbles(V x) {
    for (auto& b : x.b) b >>= 4;
    return x;
  }
  // Byte i = 0xFF when bit i of `bits` is set.
  static V bitsToMask(uint32_t bits) {
    V v;
    for (int i = 0; i < 32; ++i) v.b[i] = ((bits >> i) & 1u) ? 0xFF : 0;
    return v;
  }
  // Byte i = 0xFF when x[i] & m.
  static V testMask(V x, uint8_t m) {
    for (auto& b : x.b) b = (b & m) ? 0xFF : 0;
    return x;
  }
  static V andV(V a, V c) {
    for (int i = 0; i < 32; ++i) a.b[i] &= c.b[i];
    return a;
  }
  static V orV(V a, V c) {
    for (int i = 0; i < 32; ++i) a.b[i] |= c.b[i];
    return a;
  }
  static V andNot(V a, V c) {
    for (int i = 0; i < 32; ++i) a.b[i] = uint8_t(~a.b[i] & c.b[i]);
    return a;
  }
  static V subBytes(V a, V c) {
    for (int i = 0; i < 32; ++i) a.b[i] = uint8_t(a.b[i] - c.b[i]);
    return a;
  }
  template <int N>
  static V shiftRight(V x) {
    for (auto& b : x.b) b = uint8_t(b >> N);
    return x;
  }
  // Byte i = table[indices[i]] (indices below 16): the IQ4 codebook.
  static V codebook16(const int8_t* table, V indices) {
    for (auto& b : indices.b) b = uint8_t(table[b]);
    return indices;
  }
  template <int N>
  static V shiftLeft(V x) {
    for (auto& b : x.b) b = uint8_t(b << N);
    return x;
  }

  static I izero() { return 0; }
  static F fzero() { return 0; }
  // acc + sum(u[i] * s[i]) with u unsigned and s signed bytes, bytes 0-15
  // weighted by scaleLow and 16-31 by scaleHigh.
  static I dotU8S8(I acc, V u, V s, int16_t scaleLow, int16_t scaleHigh) {
    int32_t lo = 0, hi = 0;
    for (int i = 0; i < 16; ++i) lo += int32_t(u.b[i]) * int8_t(s.b[i]);
    for (int i = 16; i < 32; ++i) hi += int32_t(u.b[i]) * int8_t(s.b[i]);
    return acc + lo * scaleLow + hi * scaleHigh;
  }
  // acc + sum(u[i] * s[i]), u unsigned bytes below 128, s signed.
  static I dotU8S8Add(I acc, V u, V s) {
    for (int i = 0; i < 32; ++i) acc += int32_t(u.b[i]) * int8_t(s.b[i]);
    return acc;
  }
  // acc + x * scale, lane by lane.
  static I addScaled(I acc, I x, int32_t scale) { return acc + x * scale; }
  // -k * sum(s[i]), in the lanes dotU8S8Add adds to.
  static I negatedOffset(V s, uint8_t k) {
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) sum += int8_t(s.b[i]);
    return -int32_t(k) * sum;
  }
  // sum(a[i] * c[i]), both signed bytes in -127..127.
  static I dotS8S8(V a, V c) {
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) sum += int32_t(int8_t(a.b[i])) * int8_t(c.b[i]);
    return sum;
  }
  // The float16 scales (field d) of R blocks as R floats.
  template <int R>
  struct Scales {
    float v[R];
  };
  template <int R, class Block>
  static Scales<R> scales(const Block* const* blocks) {
    Scales<R> s;
    for (int r = 0; r < R; ++r) s.v[r] = halfToFloat(blocks[r]->d);
    return s;
  }
  template <int R>
  static Scales<R> times(Scales<R> s, float m) {
    for (int r = 0; r < R; ++r) s.v[r] *= m;
    return s;
  }
  template <int R>
  static F fmaddScale(F acc, I i, const Scales<R>& s, int r) {
    return fmaddI(acc, i, s.v[r]);
  }
  static F fmaddI(F acc, I i, float d) { return acc + float(i) * d; }
  static int32_t hsumI(I i) { return i; }
  static float hsumF(F f) { return f; }

  // Float rows (n a multiple of 32).
  static float dotF32(const float* a, const float* b, int64_t n);
  static float dotF16(const uint16_t* a, const uint16_t* b, int64_t n);
  static float dotBF16(const uint16_t* a, const uint16_t* b, int64_t n);
};

}  // namespace md::simd
