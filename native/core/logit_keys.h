// logit_keys.h: logits as ordered integer keys.
//
// The sampler compares, selects and histograms logits as integers: a key is
// the sign-magnitude bit pattern turned into two's complement, so integer
// order is float order, -0 and +0 share key 0, and sanitising (NaN -> -inf,
// +inf -> largest finite, docs/sampling.md step 0) is a clamp on the key.
// Everything here is branch-free so loops over a row vectorise.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "float16.h"

namespace md {

// Keys side by side, for loops the compiler must not leave scalar: GCC's
// and Clang's vector extension. The scan's vectors are 128-bit (8 half keys,
// 4 float keys: one SSE2 or NEON register each); the 8-lane int32 and float
// types serve the weight bounds, built for AVX2 too.
typedef int16_t HalfKeyLanes __attribute__((vector_size(16)));
typedef int32_t FloatKeyQuad __attribute__((vector_size(16)));
typedef int32_t FloatKeyLanes __attribute__((vector_size(32)));
typedef float FloatValueLanes __attribute__((vector_size(32)));

// Lane by lane, mask ? a : b (mask lanes all ones or all zeros). A macro:
// a function returning a 32-byte vector has an ABI that depends on the
// target's vector width, which GCC warns of.
#define MD_SELECT_LANES(mask, a, b) (((a) & (mask)) | ((b) & ~(mask)))

// A vector's lanes rearranged (lane i of the result is lane index_i of v),
// for integer lane vectors: Clang's builtin, or GCC's older one (GCC has
// Clang's only from version 12).
#if defined(__clang__)
#define MD_SHUFFLE_LANES(v, ...) __builtin_shufflevector(v, v, __VA_ARGS__)
#else
#define MD_SHUFFLE_LANES(v, ...) __builtin_shuffle(v, decltype(v){__VA_ARGS__})
#endif

// The largest and smallest lane of 8 or 4, by halving shuffles.
template <class V>
inline auto largestLane(const V& v) {
  V h = v, s;
  if constexpr (sizeof(V) / sizeof(v[0]) == 8) {
    s = MD_SHUFFLE_LANES(h, 4, 5, 6, 7, 0, 1, 2, 3);
    h = MD_SELECT_LANES(h > s, h, s);
    s = MD_SHUFFLE_LANES(h, 2, 3, 0, 1, 6, 7, 4, 5);
    h = MD_SELECT_LANES(h > s, h, s);
    s = MD_SHUFFLE_LANES(h, 1, 0, 3, 2, 5, 4, 7, 6);
  } else {
    static_assert(sizeof(V) / sizeof(v[0]) == 4, "8 or 4 lanes");
    s = MD_SHUFFLE_LANES(h, 2, 3, 0, 1);
    h = MD_SELECT_LANES(h > s, h, s);
    s = MD_SHUFFLE_LANES(h, 1, 0, 3, 2);
  }
  h = MD_SELECT_LANES(h > s, h, s);
  return h[0];
}
template <class V>
inline auto smallestLane(const V& v) {
  const V negated = -v;  // keys are never the type's minimum, so negation is exact
  return -largestLane(negated);
}

struct HalfLogits {
  using Bits = uint16_t;
  using Key = int16_t;
  static constexpr int32_t kNegInf = -0x7C00;    // key of -inf
  static constexpr int32_t kMaxFinite = 0x7BFF;  // key of 65504
  static constexpr int32_t kMagnitudeInf = 0x7C00;
  static constexpr int kCoarseShift = 0;  // one histogram bin per value

  // All in 16-bit arithmetic so that a vector register holds 8 (SSE) or 16
  // (AVX2, NEON pairs) keys: widening to 32 bits halved the throughput.
  static Key key(Bits b) {
    Key s = Key(b);
    Key m = Key(s >> 15);                                              // 0, or -1 for negative
    Key k = Key((s ^ (m & 0x7FFF)) - m);                               // two's complement; -0 -> 0
    k = (k > kMagnitudeInf || k < -kMagnitudeInf) ? Key(kNegInf) : k;  // NaN
    return k == kMagnitudeInf ? Key(kMaxFinite) : k;                   // +inf
  }
  // key() of the 8 tokens at p, as lanes (an out-parameter: a vector
  // return value's ABI depends on the target's vector width). Each type's
  // Lanes is one 128-bit vector of keys.
  using Lanes = HalfKeyLanes;
  static void keys(const Bits* p, Lanes& out) {
    Lanes s;
    std::memcpy(&s, p, sizeof s);
    const Lanes m = s >> 15;
    Lanes k = (s ^ (m & 0x7FFF)) - m;
    const Lanes nan = (k > kMagnitudeInf) | (k < -kMagnitudeInf);
    k = MD_SELECT_LANES(nan, Lanes{} + Key(kNegInf), k);
    const Lanes inf = k == kMagnitudeInf;
    out = MD_SELECT_LANES(inf, Lanes{} + Key(kMaxFinite), k);
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
  // value() of 8 keys (widened to int32), as lanes.
  static void values(const FloatKeyLanes& k, FloatValueLanes& out) {
    const FloatKeyLanes negative = k < 0;
    const FloatKeyLanes magnitude = MD_SELECT_LANES(negative, -k, k);
    FloatValueLanes v;
    const FloatKeyLanes shifted = magnitude << 13;
    std::memcpy(&v, &shifted, sizeof v);
    v = v * 0x1p112f;
    const FloatKeyLanes infinite = magnitude >= kMagnitudeInf;
    FloatKeyLanes bits;
    std::memcpy(&bits, &v, sizeof bits);
    bits = MD_SELECT_LANES(infinite, FloatKeyLanes{} + 0x7F800000, bits);
    bits |= negative & int32_t(0x80000000u);
    std::memcpy(&out, &bits, sizeof out);
  }
  static Bits fromFloat(float f) { return halfFromFloat(f); }
};

struct FloatLogits {
  using Bits = uint32_t;
  using Key = int32_t;
  static constexpr int32_t kNegInf = -0x7F800000;
  static constexpr int32_t kMaxFinite = 0x7F7FFFFF;
  static constexpr int32_t kMagnitudeInf = 0x7F800000;
  static constexpr int kCoarseShift = 16;  // bins of 2^16 adjacent values

  static Key key(Bits b) {
    int32_t mag = int32_t(b & 0x7FFFFFFFu);
    int32_t k = (b & 0x80000000u) ? -mag : mag;
    k = k > kMaxFinite ? kMaxFinite : k;
    return mag > kMagnitudeInf ? kNegInf : k;
  }
  using Lanes = FloatKeyQuad;  // key() of the 4 tokens at p
  static void keys(const Bits* p, Lanes& out) {
    Lanes b;
    std::memcpy(&b, p, sizeof b);
    const Lanes magnitude = b & 0x7FFFFFFF;
    const Lanes sign = b >> 31;  // arithmetic: all ones for negative
    Lanes k = (magnitude ^ sign) - sign;
    const Lanes overflow = k > kMaxFinite;
    k = MD_SELECT_LANES(overflow, Lanes{} + kMaxFinite, k);
    const Lanes nan = magnitude > kMagnitudeInf;
    out = MD_SELECT_LANES(nan, Lanes{} + kNegInf, k);
  }
  static Bits bitsOfKey(int32_t k) { return k < 0 ? (0x80000000u | uint32_t(-k)) : uint32_t(k); }
  static float value(int32_t k) { return floatFromBits(bitsOfKey(k)); }
  // value() of 8 keys, as lanes.
  static void values(const FloatKeyLanes& k, FloatValueLanes& out) {
    const FloatKeyLanes negative = k < 0;
    const FloatKeyLanes bits = MD_SELECT_LANES(negative, -k, k) | (negative & int32_t(0x80000000u));
    std::memcpy(&out, &bits, sizeof out);
  }
  static Bits fromFloat(float f) { return bitsFromFloat(f); }
};

// The sanitised value of raw bits, rounded into the row's type: used after a
// step modifies a logit (a bias can overflow to +inf, 0 * inf gives NaN).
template <class Logits>
float sanitisedValue(typename Logits::Bits b) {
  return Logits::value(Logits::key(b));
}

// Smallest key whose value is >= limit (kMaxFinite + 1 when none is).
template <class Logits>
int32_t keyAtLeast(float limit) {
  int32_t lo = Logits::kNegInf, hi = Logits::kMaxFinite + 1;
  while (lo < hi) {
    int32_t mid = int32_t(lo + (int64_t(hi) - lo) / 2);
    if (Logits::value(mid) >= limit)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

}  // namespace md
