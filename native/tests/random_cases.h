// random_cases.h: random sampling cases for the tests that compare two
// samplers: realistic spreads, heavy ties, peaks, -inf and NaN, penalties
// with repeats and out-of-range ids, biases including -inf, token masks
// from dense to allowing one token or none.
#pragma once
#include <cmath>
#include <random>
#include <vector>

#include "reference_sampler.h"

namespace testing_cases {

inline float uniform(std::mt19937& rng, float a, float b) { return std::uniform_real_distribution<float>(a, b)(rng); }

// shape: 0 normal, 1 heavy ties (rounded), 2 peaks, 3 some -inf, 4 some NaN.
inline reference::Case randomCase(std::mt19937& rng, uint32_t vocab, int shape, bool isHalf) {
  reference::Case k;
  k.isHalf = isHalf;
  std::normal_distribution<float> normal(0, uniform(rng, 0.01f, 4.0f));
  for (uint32_t i = 0; i < vocab; ++i) {
    float v = normal(rng);
    if (shape == 1) v = std::round(v);
    if (shape == 2 && rng() % 50 == 0) v = 12 + uniform(rng, 0, 6);
    if (shape == 3 && rng() % 20 == 0) v = -INFINITY;
    if (shape == 4 && rng() % 1000 == 0) v = NAN;
    k.values.push_back(isHalf ? md::halfToFloat(md::halfFromFloat(v)) : v);
  }
  md_sampling_params& p = k.params;
  p = md::greedySamplingParams(vocab);
  p.temperature = rng() % 6 == 0 ? 0.0f : uniform(rng, 0.05f, 2.5f);
  p.top_k = std::vector<uint32_t>{0, 1, 2, 40, 1000, vocab}[rng() % 6];
  p.top_p = rng() % 3 == 0 ? 1.0f : uniform(rng, 0.05f, 0.999f);
  p.min_p = rng() % 3 == 0 ? 0.0f : uniform(rng, 0.0f, 0.3f);
  p.seed = rng();
  p.position = rng();
  p.flags = rng() % 2 ? MD_FLAG_UNIT_FILTER_TEMPERATURE : 0;
  if (rng() % 3 == 0) {
    p.repeat_penalty = uniform(rng, 0.8f, 1.5f);
    p.frequency_penalty = uniform(rng, -0.5f, 0.5f);
    p.presence_penalty = uniform(rng, -0.5f, 0.5f);
    for (int i = 0; i < 64; ++i) k.window.push_back(rng() % (vocab + 3));
  }
  if (rng() % 3 == 0) {
    for (int i = 0; i < 5; ++i) {
      k.biasTokens.push_back(rng() % (vocab + 2));
      k.biasValues.push_back(rng() % 4 == 0 ? -INFINITY : uniform(rng, -3, 3));
    }
  }
  if (rng() % 4 == 0) {
    // A grammar's mask: most tokens refused, or most allowed; rarely none.
    const uint32_t density = std::vector<uint32_t>{0, 1, 50, 500, 990}[rng() % 5];
    k.mask.assign(md_mask_words(vocab), 0u);
    for (uint32_t t = 0; t < vocab; ++t)
      if (rng() % 1000 < density) k.mask[t / 32] |= 1u << (t % 32);
    if (density == 1) k.mask[(rng() % vocab) / 32] |= 1u;  // at least one word set, usually one token
    p.flags |= MD_FLAG_TOKEN_MASK;
  }
  p.history_count = p.history_window = uint32_t(k.window.size());
  p.bias_count = uint32_t(k.biasTokens.size());
  return k;
}

// The row of a case in the layout the samplers read.
struct CaseRow {
  std::vector<uint16_t> halves;
  md::LogitsRow row;
  md::SamplingInputs inputs;

  explicit CaseRow(const reference::Case& c) {
    row = {c.values.data(), md::LogitsFormat::Float32, uint32_t(c.values.size())};
    if (c.isHalf) {
      for (float v : c.values) halves.push_back(md::halfFromFloat(v));
      row = {halves.data(), md::LogitsFormat::Float16, uint32_t(halves.size())};
    }
    inputs = {c.params, c.window.data(), c.biasTokens.data(), c.biasValues.data(),
              c.mask.empty() ? nullptr : c.mask.data()};
  }
};

}  // namespace testing_cases
