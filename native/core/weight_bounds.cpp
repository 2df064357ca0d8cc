// weight_bounds.cpp: the bounds of weight_bounds.h, on 8 lanes at a time
// (GCC's and Clang's vector extension), also compiled for AVX2 on x86-64
// Linux (MD_VECTOR_CLONES).
#include "weight_bounds.h"

#include <algorithm>
#include <cstring>

#include "logit_keys.h"
#include "vector_clones.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>

#include "quant/cpu_features.h"
#endif

namespace md {

// The loops below are templates, inlined into each clone so that each is
// compiled for the clone's target.
#define MD_ALWAYS_INLINE __attribute__((always_inline))

namespace {

constexpr uint32_t kLaneCount = 8;
// Lanes summed in float before the sum moves to double: 64 additions per
// lane at most, a relative error below 2^-18.
constexpr uint32_t kChunk = 512;
constexpr double kMargin = 1 + 0x1p-10;

// What turns a value into its weight bound: y = (v - top) * log2(e) / T.
// (Not TopPContext's float operations: the bound's margin covers the
// difference, a relative error of y below 2^-21.)
struct Exponent {
  float top;
  float scale;  // log2(e) / T
};

// Float lanes chosen or cleared by an integer mask (all ones or zeros per
// lane), through their bits: out = mask ? a : b, and v = mask ? v : 0.
inline void selectValues(const FloatKeyLanes& mask, const FloatValueLanes& a, const FloatValueLanes& b,
                         FloatValueLanes& out) {
  FloatKeyLanes aBits, bBits;
  std::memcpy(&aBits, &a, sizeof a);
  std::memcpy(&bBits, &b, sizeof b);
  const FloatKeyLanes chosen = MD_SELECT_LANES(mask, aBits, bBits);
  std::memcpy(&out, &chosen, sizeof out);
}
inline void keepValues(const FloatKeyLanes& mask, FloatValueLanes& v) {
  FloatKeyLanes bits;
  std::memcpy(&bits, &v, sizeof v);
  bits &= mask;
  std::memcpy(&v, &bits, sizeof v);
}

// An upper bound on the weight of each of 8 values.
inline void weightBounds(const FloatValueLanes& v, const Exponent& e, FloatValueLanes& out) {
  FloatValueLanes y = (v - e.top) * e.scale;
  // Below 2^-126 every weight is bounded by 2^-126 (as are -inf's, zero).
  selectValues(y < -126.0f, FloatValueLanes{} + -126.0f, y, y);
  // Truncation rounds down; the + 1 puts the bits at or above the chord.
  const FloatKeyLanes bits = __builtin_convertvector((y + 127.0f) * 8388608.0f, FloatKeyLanes) + 1;
  std::memcpy(&out, &bits, sizeof out);
}

// The float32 values of 8 float16 logits: converted by the CPU on AArch64
// (one instruction per 4 lanes), else by rescaling the magnitude as
// halfToFloat does, which turns +-inf and NaN into finite values of
// magnitude 65536 or more; on x86-64 CPUs with F16C, HalfRowsF16c below
// (the AVX2 clone's dispatch does not promise F16C, and a Haswell clone is
// chosen by CPU model, not features: AMD's would miss it). Either way the
// specials compare where the caller needs them (see rowBound).
#if defined(__aarch64__)
constexpr bool kHalfValuesFinite = false;
inline void halfValues(const uint16_t* bits, FloatValueLanes& out) {
  const float16x8_t halves = vreinterpretq_f16_u16(vld1q_u16(bits));
  const float32x4_t low = vcvt_f32_f16(vget_low_f16(halves)), high = vcvt_high_f32_f16(halves);
  std::memcpy(&out, &low, sizeof low);
  std::memcpy(reinterpret_cast<char*>(&out) + sizeof low, &high, sizeof high);
}
#else
constexpr bool kHalfValuesFinite = true;
inline void halfValues(const uint16_t* bits, FloatValueLanes& out) {
  HalfKeyLanes narrow;
  std::memcpy(&narrow, bits, sizeof narrow);
  const FloatKeyLanes wide = __builtin_convertvector(narrow, FloatKeyLanes);  // sign-extended
  const FloatKeyLanes magnitude = (wide & 0x7FFF) << 13;
  FloatValueLanes v;
  std::memcpy(&v, &magnitude, sizeof v);
  v = v * 0x1p112f;
  FloatKeyLanes vBits;
  std::memcpy(&vBits, &v, sizeof vBits);
  vBits |= wide & int32_t(0x80000000u);
  std::memcpy(&out, &vBits, sizeof out);
}
#endif

inline float laneSum(const FloatValueLanes& v) {
  float total = 0;
  for (uint32_t l = 0; l < kLaneCount; ++l) total += v[l];
  return total;
}

// A row's values, 8 at a time, for rowBound: the row type, how its values
// are read (float16 converted as above, float32 as they are), and whether
// they are always finite.
struct HalfRows {
  using Logits = HalfLogits;
  static constexpr bool kFinite = kHalfValuesFinite;
  static void values(const uint16_t* bits, FloatValueLanes& out) { halfValues(bits, out); }
};
struct FloatRows {
  using Logits = FloatLogits;
  static constexpr bool kFinite = false;
  static void values(const uint32_t* bits, FloatValueLanes& out) { std::memcpy(&out, bits, sizeof out); }
};
#if defined(__x86_64__)
// float16 rows converted by F16C, on CPUs that have it (cpuHasAvx2).
struct HalfRowsF16c {
  using Logits = HalfLogits;
  static constexpr bool kFinite = false;
  __attribute__((target("avx2,f16c"))) static void values(const uint16_t* bits, FloatValueLanes& out) {
    const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bits)));
    std::memcpy(&out, &v, sizeof out);
  }
};
#endif

template <class Logits>
MD_ALWAYS_INLINE inline double keyBound(const int32_t* keys, uint32_t count, int32_t highest, uint32_t multiplicity,
                                        float top, float temperature) {
  const Exponent e{top, 1.44269504088896341f / temperature};
  double total = 0;
  const FloatKeyLanes ceiling = FloatKeyLanes{} + highest;
  for (uint32_t first = 0; first < count; first += kChunk) {
    const uint32_t end = std::min(count, first + kChunk);
    FloatValueLanes sum = {};
    uint32_t i = first;
    for (; i + kLaneCount <= end; i += kLaneCount) {
      FloatKeyLanes k;
      std::memcpy(&k, keys + i, sizeof k);
      const FloatKeyLanes above = k > ceiling;
      k = MD_SELECT_LANES(above, ceiling, k);
      FloatValueLanes v, w;
      Logits::values(k, v);
      weightBounds(v, e, w);
      sum += w;
    }
    // The last few keys; the lanes past the end are left out.
    FloatKeyLanes rest = ceiling;
    for (uint32_t l = 0; i + l < end; ++l) rest[l] = std::min(keys[i + l], highest);
    FloatValueLanes v, w;
    Logits::values(rest, v);
    weightBounds(v, e, w);
    for (uint32_t l = 0; i + l < end; ++l) sum[l] += w[l];
    total += double(laneSum(sum));
  }
  return total * multiplicity * kMargin;
}

template <class Rows>
MD_ALWAYS_INLINE inline double rowBound(const typename Rows::Logits::Bits* bits, uint32_t count, int32_t below,
                                        float top, float temperature) {
  using Logits = typename Rows::Logits;
  const Exponent e{top, 1.44269504088896341f / temperature};
  // key < below exactly when value < below's value, for every finite key.
  const FloatValueLanes limit = FloatValueLanes{} + Logits::value(below);
  double total = 0;
  for (uint32_t first = 0; first < count; first += kChunk) {
    const uint32_t end = std::min(count, first + kChunk);
    FloatValueLanes sum = {};
    uint32_t i = first;
    for (; i + kLaneCount <= end; i += kLaneCount) {
      FloatValueLanes v, w;
      Rows::values(bits + i, v);
      // Light: below the limit. NaN compares false (its key is -inf's,
      // of weight zero) and +inf is the top's key (heavy). Where values
      // can be NaN or infinite, the others are weighed as the top (finite)
      // before they are left out.
      const FloatKeyLanes light = v < limit;
      if constexpr (!Rows::kFinite) selectValues(light, v, FloatValueLanes{} + top, v);
      weightBounds(v, e, w);
      keepValues(light, w);
      sum += w;
    }
    for (; i < end; ++i) {
      const int32_t key = Logits::key(bits[i]);
      if (key >= below) continue;
      FloatValueLanes v = FloatValueLanes{} + Logits::value(key), w;
      weightBounds(v, e, w);
      sum[0] += w[0];
    }
    total += double(laneSum(sum));
  }
  return total * kMargin;
}

}  // namespace

MD_VECTOR_CLONES
double keyWeightBound(HalfLogits, const int32_t* keys, uint32_t count, int32_t highest, uint32_t multiplicity,
                      float top, float temperature) {
  return keyBound<HalfLogits>(keys, count, highest, multiplicity, top, temperature);
}

MD_VECTOR_CLONES
double keyWeightBound(FloatLogits, const int32_t* keys, uint32_t count, int32_t highest, uint32_t multiplicity,
                      float top, float temperature) {
  return keyBound<FloatLogits>(keys, count, highest, multiplicity, top, temperature);
}

MD_VECTOR_CLONES
double rowWeightBoundWithoutF16c(const uint16_t* bits, uint32_t count, int32_t below, float top, float temperature) {
  return rowBound<HalfRows>(bits, count, below, top, temperature);
}

#if defined(__x86_64__)
namespace {
__attribute__((target("avx2,f16c"))) double rowWeightBoundF16c(const uint16_t* bits, uint32_t count, int32_t below,
                                                               float top, float temperature) {
  return rowBound<HalfRowsF16c>(bits, count, below, top, temperature);
}
}  // namespace
#endif

double rowWeightBound(HalfLogits, const uint16_t* bits, uint32_t count, int32_t below, float top, float temperature) {
#if defined(__x86_64__)
  static const bool f16c = cpuHasAvx2();  // AVX2, FMA and F16C, with the YMM state saved
  if (f16c) return rowWeightBoundF16c(bits, count, below, top, temperature);
#endif
  return rowWeightBoundWithoutF16c(bits, count, below, top, temperature);
}

MD_VECTOR_CLONES
double rowWeightBound(FloatLogits, const uint32_t* bits, uint32_t count, int32_t below, float top, float temperature) {
  return rowBound<FloatRows>(bits, count, below, top, temperature);
}

}  // namespace md
