// float16_test.cpp: half conversions and logit keys, exhaustively.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "float16.h"
#include "logit_keys.h"
#include "md_sampling.h"

namespace {

// The value of half bits by the definition of binary16.
double referenceHalf(uint16_t h) {
  int sign = h & 0x8000 ? -1 : 1, exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Nearest half to x, ties to even, by searching the representable values.
uint16_t referenceRound(float x) {
  if (std::isnan(x)) return 0x7E00;
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double ax = std::fabs(double(x));
  if (ax >= 65520.0) return sign | 0x7C00;
  uint16_t lo = 0, hi = 0x7BFF;
  while (lo < hi) {  // largest magnitude <= ax
    uint16_t mid = uint16_t((lo + hi + 1) / 2);
    if (referenceHalf(mid) <= ax)
      lo = mid;
    else
      hi = uint16_t(mid - 1);
  }
  if (lo == 0x7BFF) return sign | lo;  // below 65520: rounds down to 65504
  double down = referenceHalf(lo), up = referenceHalf(uint16_t(lo + 1));
  uint16_t pick = (ax - down < up - ax)   ? lo
                  : (ax - down > up - ax) ? uint16_t(lo + 1)
                                          : ((lo & 1) ? uint16_t(lo + 1) : lo);
  return sign | pick;
}

TEST(Float16, HalfToFloatIsExactForEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    double expected = referenceHalf(uint16_t(h));
    float got = md::halfToFloat(uint16_t(h));
    if (std::isnan(expected))
      EXPECT_TRUE(std::isnan(got)) << h;
    else
      EXPECT_EQ(double(got), expected) << h;
  }
}

TEST(Float16, HalfFromFloatRoundsToNearestEven) {
  for (uint32_t h = 0; h < 65536; ++h) {  // every half, and the midpoints around it
    float v = md::halfToFloat(uint16_t(h));
    if (std::isnan(v)) continue;
    EXPECT_EQ(md::halfFromFloat(v), uint16_t(h)) << h;
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t bits = rng();
    float x = md::floatFromBits(bits);
    if (std::isnan(x)) continue;
    ASSERT_EQ(md::halfFromFloat(x), referenceRound(x)) << std::hexfloat << x;
  }
  for (uint16_t h = 0; h < 0x7BFF; ++h) {  // exact ties between neighbours
    float mid = float((referenceHalf(h) + referenceHalf(uint16_t(h + 1))) / 2);
    ASSERT_EQ(md::halfFromFloat(mid), referenceRound(mid)) << h;
  }
}

TEST(LogitKeys, HalfKeysOrderLikeTheSanitisedValues) {
  using L = md::HalfLogits;
  for (uint32_t a = 0; a < 65536; a += 7) {
    for (uint32_t b = 0; b < 65536; b += 251) {
      float va = md::sanitisedValue<L>(uint16_t(a)), vb = md::sanitisedValue<L>(uint16_t(b));
      ASSERT_EQ(L::key(uint16_t(a)) < L::key(uint16_t(b)), va < vb) << a << " " << b;
      ASSERT_EQ(L::key(uint16_t(a)) == L::key(uint16_t(b)), va == vb) << a << " " << b;
    }
  }
}

TEST(LogitKeys, SanitiseMapsNaNToMinusInfinityAndInfinityToLargestFinite) {
  using L = md::HalfLogits;
  EXPECT_EQ(md::sanitisedValue<L>(0x7E00), -INFINITY);
  EXPECT_EQ(md::sanitisedValue<L>(0xFE01), -INFINITY);
  EXPECT_EQ(md::sanitisedValue<L>(0x7C00), 65504.0f);
  EXPECT_EQ(md::sanitisedValue<L>(0xFC00), -INFINITY);
  EXPECT_EQ(L::key(0x8000), L::key(0x0000));  // -0 == +0
  using F = md::FloatLogits;
  EXPECT_EQ(md::sanitisedValue<F>(md::bitsFromFloat(NAN)), -INFINITY);
  EXPECT_EQ(md::sanitisedValue<F>(md::bitsFromFloat(INFINITY)), 3.4028234663852886e38f);
  EXPECT_EQ(F::key(md::bitsFromFloat(-0.0f)), F::key(md::bitsFromFloat(0.0f)));
}

TEST(LogitKeys, HalfValueOfKeyMatchesTheConversion) {
  using L = md::HalfLogits;
  for (uint32_t h = 0; h < 65536; ++h)
    ASSERT_EQ(L::value(L::key(uint16_t(h))), md::sanitisedValue<L>(uint16_t(h))) << h;
}

TEST(LogitKeys, KeyAtLeastFindsTheSmallestQualifyingKey) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);
  for (int i = 0; i < 20000; ++i) {
    float limit = dist(rng) * (i % 2 ? 1.0f : 1e-4f);
    int32_t hk = md::keyAtLeast<md::HalfLogits>(limit);
    if (hk <= md::HalfLogits::kMaxFinite) {
      ASSERT_GE(md::HalfLogits::value(hk), limit);
    }
    ASSERT_LT(md::HalfLogits::value(hk - 1), limit);
    int32_t fk = md::keyAtLeast<md::FloatLogits>(limit);
    ASSERT_GE(md::FloatLogits::value(fk), limit);
    ASSERT_LT(md::FloatLogits::value(fk - 1), limit);
  }
}

}  // namespace

// The kernels' scalar key maps (metal/md_sampling.h) and the vectorised ones
// the CPU sampler uses are the same functions.
TEST(LogitKeys, KernelKeyMapsEqualTheCpuOnes) {
  for (uint32_t b = 0; b < 65536; ++b) {
    ASSERT_EQ(md_half_key(b), int32_t(md::HalfLogits::key(uint16_t(b)))) << std::hex << b;
    ASSERT_EQ(md_half_bits_of_key(md_half_key(b)), md::HalfLogits::bitsOfKey(md::HalfLogits::key(uint16_t(b))));
  }
  std::mt19937 rng(11);
  const uint32_t special[] = {0, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFFFFFFFu, 0x7F7FFFFFu, 1};
  for (uint32_t b : special) EXPECT_EQ(md_float_key(b), md::FloatLogits::key(b)) << std::hex << b;
  for (int i = 0; i < 1000000; ++i) {
    uint32_t b = rng();
    ASSERT_EQ(md_float_key(b), md::FloatLogits::key(b)) << std::hex << b;
  }
}
