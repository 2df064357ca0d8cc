// noise_test.cpp: the shared header's hash, logs and noise.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "float16.h"
#include "md_sampling.h"
#include "noise_block.h"

namespace {

int ulpDistance(float a, float b) {
  int32_t ia = int32_t(md::bitsFromFloat(a)), ib = int32_t(md::bitsFromFloat(b));
  return std::abs(ia - ib);
}

TEST(Noise, HashMatchesAnIndependentPcgImplementation) {
  // Values from a Python transcription of docs/sampling.md's h(x).
  EXPECT_EQ(md_hash(0u), 129708002u);
  EXPECT_EQ(md_hash(1u), 2831084092u);
  EXPECT_EQ(md_hash(42u), 1223963391u);
  EXPECT_EQ(md_hash(0xFFFFFFFFu), 3861530882u);
  EXPECT_EQ(md_noise_key(7u, 3u), 3952640559u);
}

TEST(Noise, SeedAndPositionDoNotAlias) {
  // The spec's counter-example to (position + seed) * C + i.
  EXPECT_NE(md_noise_key(10u, 5u), md_noise_key(9u, 6u));
}

TEST(Noise, UniformIsStrictlyInsideTheUnitInterval) {
  EXPECT_EQ(md_uniform(0u), 5.9604644775390625e-8f);
  EXPECT_EQ(md_uniform(0xFFFFFFFFu), 1.0f - 5.9604644775390625e-8f);
}

TEST(Noise, LogIsWithinTwoUlpOfLibm) {
  std::mt19937 rng(11);
  for (int i = 0; i < 1000000; ++i) {
    float x = md::floatFromBits((rng() % (0x7F000000u - 0x00800000u)) + 0x00800000u);  // positive normals
    ASSERT_LE(ulpDistance(md_log(x), float(std::log(double(x)))), 2) << std::hexfloat << x;
  }
  for (float x : {1e-40f, 1e-45f, 3e-39f})
    EXPECT_NEAR(md_log_any(x), std::log(double(x)), 1e-5 * std::fabs(std::log(double(x))));
}

TEST(Noise, ExpIsWithinTwoUlpOfLibmAndFlushesBelowMinus87) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> dist(-87.0f, 0.0f);
  for (int i = 0; i < 1000000; ++i) {
    float x = dist(rng);
    ASSERT_LE(ulpDistance(md_exp(x), float(std::exp(double(x)))), 2) << x;
  }
  EXPECT_EQ(md_exp(0.0f), 1.0f);
  EXPECT_EQ(md_exp(-87.5f), 0.0f);
  EXPECT_EQ(md_exp(-INFINITY), 0.0f);
  EXPECT_EQ(md_exp(NAN), 0.0f);
}

TEST(Noise, FloorMatchesLibmOverExpsRange) {
  for (float x = -130.0f; x <= 2.0f; x += 0.013f) ASSERT_EQ(md_floor(x), std::floor(x)) << x;
  for (float x : {-1.0f, -0.0f, 0.0f, -126.0f, 0.5f}) EXPECT_EQ(md_floor(x), std::floor(x)) << x;
}

TEST(Noise, GumbelMaxBoundsTheLargestNoise) {
  float largest = 0;
  for (md_u32 cell = (1u << 23) - (1u << 16); cell < (1u << 23); ++cell)
    largest = std::max(largest, md_gumbel(md_uniform(cell << 9)));
  EXPECT_LE(largest, MD_GUMBEL_MAX);
  EXPECT_GT(largest, MD_GUMBEL_MAX - 0.01f);  // and is tight
}

TEST(Noise, GumbelIsMonotoneInTheCell) {
  // The sampler rules tokens out by cell before computing their noise.
  float previous = -INFINITY;
  for (md_u32 cell = 0; cell < (1u << 23); ++cell) {
    float g = md_gumbel(md_uniform(cell << 9));
    ASSERT_GE(g, previous) << cell;
    previous = g;
  }
}

TEST(Noise, BlockRoutinesMatchTheScalarDefinitions) {
  float noise[64];
  uint32_t cells[64];
  for (md_u32 key : {0u, 12345u, 0xFFFFFFF0u}) {
    md::tokenNoiseBlock(key, 1000, 64, noise);
    md::tokenCellBlock(key, 1000, 64, cells);
    for (uint32_t j = 0; j < 64; ++j) {
      ASSERT_EQ(md::bitsFromFloat(noise[j]), md::bitsFromFloat(md_token_noise(key, 1000 + j)));
      ASSERT_EQ(cells[j], md_hash(key + 1000 + j) >> 9);
    }
  }
}

TEST(Noise, HashInverseUndoesTheHash) {
  // Every xorshift amount (the state's top 4 bits), both ends of the word,
  // and a spread of others: the sampler finds unlikely winners through it.
  std::vector<md_u32> inputs = {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu};
  for (md_u32 x = 0, step = 0x9E3779B9u; inputs.size() < (1u << 20); x += step) inputs.push_back(x);
  uint32_t seenShifts = 0;
  for (md_u32 x : inputs) {
    const md_u32 h = md_hash(x);
    ASSERT_EQ(md::hashInverse(h), x) << x;
    seenShifts |= 1u << ((x * 747796405u + 2891336453u) >> 28);
  }
  EXPECT_EQ(seenShifts, 0xFFFFu);
}

TEST(Noise, TokensOfHashesAreTheTokensThatDrawThem) {
  uint32_t tokens[64];
  for (md_u32 key : {0u, 12345u, 0xFFFFFFF0u}) {
    for (md_u32 firstHash : {0u, 0xFFFFFFC0u, 0x12345678u}) {
      md::tokensOfHashes(key, firstHash, 64, tokens);
      for (uint32_t j = 0; j < 64; ++j) ASSERT_EQ(md_hash(key + tokens[j]), firstHash + j);
    }
  }
}

}  // namespace
