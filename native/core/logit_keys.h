// logit_keys.h: logits as ordered integer keys.
//
// The sampler compares, selects and histograms logits as integers: a key is
// the sign-magnitude bit pattern turned into two's complement, so integer
// order is float order, -0 and +0 share key 0, and sanitising (NaN -> -inf,
// +inf -> largest finite, SAMPLING-SPEC step 0) is a clamp on the key.
// Everything here is branch-free so loops over a row vectorise.
#pragma once
#include <cmath>
#include <cstdint>

#include "float16.h"

namespace md {

struct HalfLogits {
  using Bits = uint16_t;
  using Key = int16_t;
  static constexpr int32_t kNegInf = -0x7C00;     // key of -inf
  static constexpr int32_t kMaxFinite = 0x7BFF;   // key of 65504
  static constexpr int32_t kMagnitudeInf = 0x7C00;
  static constexpr int kCoarseShift = 0;          // one histogram bin per value

  // All in 16-bit arithmetic so that a vector register holds 8 (SSE) or 16
  // (AVX2, NEON pairs) keys: widening to 32 bits halved the throughput.
  static Key key(Bits b) {
    Key s = Key(b);
    Key m = Key(s >> 15);                      // 0, or -1 for negative
    Key k = Key((s ^ (m & 0x7FFF)) - m);       // two's complement; -0 -> 0
    k = (k > kMagnitudeInf || k < -kMagnitudeInf) ? Key(kNegInf) : k;  // NaN
    return k == kMagnitudeInf ? Key(kMaxFinite) : k;                   // +inf
  }
  static Bits bitsOfKey(int32_t k) { return Bits(k < 0 ? (0x8000 | -k) : k); }
  // The value of a sanitised key, with selects only so that loops vectorise:
  // the magnitude bits are rescaled as in halfToFloat.
  static float value(int32_t k) {
    int32_t magnitude = k < 0 ? -k : k;
    float v = floatFromBits(uint32_t(magnitude) << 13) * 0x1p112f;
    v = magnitude >= kMagnitudeInf ? INFINITY : v;
    return k < 0 ? -v : v;
  }
  static Bits fromFloat(float f) { return halfFromFloat(f); }
};

struct FloatLogits {
  using Bits = uint32_t;
  using Key = int32_t;
  static constexpr int32_t kNegInf = -0x7F800000;
  static constexpr int32_t kMaxFinite = 0x7F7FFFFF;
  static constexpr int32_t kMagnitudeInf = 0x7F800000;
  static constexpr int kCoarseShift = 16;         // bins of 2^16 adjacent values

  static Key key(Bits b) {
    int32_t mag = int32_t(b & 0x7FFFFFFFu);
    int32_t k = (b & 0x80000000u) ? -mag : mag;
    k = k > kMaxFinite ? kMaxFinite : k;
    return mag > kMagnitudeInf ? kNegInf : k;
  }
  static Bits bitsOfKey(int32_t k) { return k < 0 ? (0x80000000u | uint32_t(-k)) : uint32_t(k); }
  static float value(int32_t k) { return floatFromBits(bitsOfKey(k)); }
  static Bits fromFloat(float f) { return bitsFromFloat(f); }
};

// The sanitised value of raw bits, rounded into the row's type: used after a
// step modifies a logit (a bias can overflow to +inf, 0 * inf gives NaN).
template <class Logits>
float sanitisedValue(typename Logits::Bits b) { return Logits::value(Logits::key(b)); }

// Smallest key whose value is >= limit (kMaxFinite + 1 when none is).
template <class Logits>
int32_t keyAtLeast(float limit) {
  int32_t lo = Logits::kNegInf, hi = Logits::kMaxFinite + 1;
  while (lo < hi) {
    int32_t mid = int32_t(lo + (int64_t(hi) - lo) / 2);
    if (Logits::value(mid) >= limit) hi = mid; else lo = mid + 1;
  }
  return lo;
}

}  // namespace md
