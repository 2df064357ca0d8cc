// row_passes_test.cpp: the sampler's vector lanes against their scalar
// definitions, the scan's maxima against brute force, and the top-p weight
// bounds against the weights they bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "float16.h"
#include "logit_keys.h"
#include "row_passes.h"
#include "top_p.h"
#include "weight_bounds.h"

namespace {

using Half = md::HalfLogits;
using Float = md::FloatLogits;

TEST(KeyLanes, HalfKeysAndValuesEqualTheScalarOnesForEveryPattern) {
  for (uint32_t first = 0; first < 65536; first += md::kLanes) {
    uint16_t bits[md::kLanes];
    for (uint32_t l = 0; l < md::kLanes; ++l) bits[l] = uint16_t(first + l);
    md::HalfKeyLanes keys;
    Half::keys(bits, keys);
    md::FloatKeyLanes wide;
    for (uint32_t l = 0; l < md::kLanes; ++l) {
      ASSERT_EQ(keys[l], Half::key(bits[l])) << std::hex << bits[l];
      wide[l] = keys[l];
    }
    md::FloatValueLanes values;
    Half::values(wide, values);
    for (uint32_t l = 0; l < md::kLanes; ++l)
      ASSERT_EQ(md::bitsFromFloat(values[l]), md::bitsFromFloat(Half::value(wide[l]))) << std::hex << bits[l];
  }
}

TEST(KeyLanes, FloatKeysEqualTheScalarOnes) {
  std::mt19937 rng(5);
  std::vector<uint32_t> bits = {0, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFFFFFFFu, 0x7F7FFFFFu, 1};
  while (bits.size() < 800000) bits.push_back(rng());
  for (size_t first = 0; first + 4 <= bits.size(); first += 4) {
    md::FloatKeyQuad keys;
    Float::keys(bits.data() + first, keys);
    for (uint32_t l = 0; l < 4; ++l) ASSERT_EQ(keys[l], Float::key(bits[first + l])) << std::hex << bits[first + l];
  }
}

// Block and lane maxima, the top and the bottom, for rows of every length
// around a block's (short last blocks included) and with specials.
template <class Logits>
void checkScan(const std::vector<typename Logits::Bits>& row) {
  md::RowMaxima maxima;
  const auto scanned = md::scanRow<Logits>(row.data(), uint32_t(row.size()), maxima);
  int32_t top = Logits::kNegInf, bottom = Logits::kMaxFinite;
  for (uint32_t b = 0; b < scanned.blocks; ++b) {
    int32_t blockMax = Logits::kNegInf;
    for (uint32_t l = 0; l < md::kLanes; ++l) {
      int32_t laneMax = Logits::kNegInf;
      for (size_t i = size_t(b) * md::kBlock + l; i < std::min(row.size(), size_t(b + 1) * md::kBlock); i += md::kLanes)
        laneMax = std::max<int32_t>(laneMax, Logits::key(row[i]));
      ASSERT_EQ(scanned.laneMax[size_t(b) * md::kLanes + l], laneMax) << "block " << b << " lane " << l;
      blockMax = std::max(blockMax, laneMax);
    }
    ASSERT_EQ(scanned.blockMax[b], blockMax) << "block " << b;
    top = std::max(top, blockMax);
  }
  for (auto bits : row) bottom = std::min<int32_t>(bottom, Logits::key(bits));
  EXPECT_EQ(scanned.top, top);
  EXPECT_EQ(scanned.bottom, bottom);
}

TEST(ScanRow, BlockAndLaneMaximaAreTheLargestKeysOfTheirTokens) {
  std::mt19937 rng(9);
  for (uint32_t n : {1u, 7u, 8u, 9u, 63u, 64u, 65u, 130u, 1000u, 4099u}) {
    std::vector<uint16_t> halves(n);
    std::vector<uint32_t> floats(n);
    for (uint32_t i = 0; i < n; ++i) {
      halves[i] = uint16_t(rng());  // every pattern, NaN and infinities included
      floats[i] = rng() % 5 == 0 ? std::vector<uint32_t>{0x7FC00000u, 0xFF800000u, 0x7F800000u}[rng() % 3] : rng();
    }
    checkScan<Half>(halves);
    checkScan<Float>(floats);
  }
}

// The exact weights the bounds stand for (top_p.h's, in double).
double weightOf(int32_t key, float top, float temperature) {
  const md::TopPContext<Half> ctx{top, temperature};
  return double(ctx.weight(key));
}

TEST(WeightBounds, BoundTheWeightsFromAboveAndWithin7Percent) {
  std::mt19937 rng(13);
  for (int c = 0; c < 200; ++c) {
    const uint32_t n = 1 + rng() % 5000;
    const float temperature = std::vector<float>{0.05f, 0.5f, 1.0f, 3.0f, 1000.0f}[c % 5];
    std::normal_distribution<float> bulk(0.f, std::vector<float>{0.5f, 2.f, 10.f}[c % 3]);
    std::vector<uint16_t> row(n);
    for (auto& h : row) h = md::halfFromFloat(bulk(rng));
    // Specials: infinities, NaN, -0, subnormals.
    const uint16_t specials[] = {0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x8000, 0x0001, 0x8001, 0x03FF};
    for (int j = 0; j < 4; ++j) row[rng() % n] = specials[rng() % 8];
    md::RowMaxima maxima;
    const auto scanned = md::scanRow<Half>(row.data(), n, maxima);
    if (scanned.top == Half::kNegInf) continue;
    const float top = Half::value(scanned.top);
    // A cut somewhere in the row, and the weights below it.
    const int32_t below = Half::key(row[rng() % n]) + 1;
    double exact = 0;
    for (uint16_t h : row)
      if (Half::key(h) < below) exact += weightOf(Half::key(h), top, temperature);
    const double fromTokens = md::rowWeightBound(Half{}, row.data(), n, below, top, temperature);
    ASSERT_GE(fromTokens, exact) << "case " << c;
    // Whichever conversion this CPU takes (F16C, NEON or the rescaling),
    // the same values and so the same bound as the portable one's, but for
    // a negative NaN: the rescaling makes it a finite value below -65504,
    // weighed at 2^-126; a conversion keeps it NaN, left out.
    const double portable = md::rowWeightBoundWithoutF16c(row.data(), n, below, top, temperature);
    ASSERT_NEAR(fromTokens, portable, 4 * 0x1p-125 + portable * 0x1p-50) << "case " << c;
    // 6.2% from the chord, 2^-10 of margin, and 2^-126 per token for weights below that.
    ASSERT_LE(fromTokens, exact * 1.0635 + n * 0x1p-125) << "case " << c;
    // The lanes' bound: each lane's largest key (capped below the cut)
    // for its 8 tokens, against the same cap applied exactly.
    double lanesExact = 0;
    for (uint32_t b = 0; b < scanned.blocks; ++b)
      for (uint32_t l = 0; l < md::kLanes; ++l)
        lanesExact +=
            md::kLanes * weightOf(std::min(scanned.laneMax[size_t(b) * md::kLanes + l], below - 1), top, temperature);
    const double fromLanes = md::keyWeightBound(Half{}, scanned.laneMax, scanned.blocks * md::kLanes, below - 1,
                                                md::kLanes, top, temperature);
    ASSERT_GE(fromLanes, lanesExact) << "case " << c;
    ASSERT_GE(fromLanes, exact) << "case " << c;
    ASSERT_LE(fromLanes, lanesExact * 1.0635 + scanned.blocks * md::kLanes * md::kLanes * 0x1p-125) << "case " << c;
  }
}

}  // namespace
