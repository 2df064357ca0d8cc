// head_pick.cpp
#include "head_pick.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../logit_keys.h"
#include "md_sampling.h"

namespace md {

std::vector<std::pair<uint32_t, float>> headPickBias(const uint32_t* tokens, const float* values, size_t count,
                                                     uint32_t vocab) {
  std::vector<std::pair<uint32_t, float>> bias;
  for (size_t i = 0; i < count; ++i)
    if (tokens[i] < vocab) bias.emplace_back(tokens[i], values[i]);
  // A token listed twice keeps its first bias, as computeLogitEdits does.
  std::stable_sort(bias.begin(), bias.end(), [](auto& a, auto& b) { return a.first < b.first; });
  bias.erase(std::unique(bias.begin(), bias.end(), [](auto& a, auto& b) { return a.first == b.first; }), bias.end());
  return bias;
}

HeadScorer::HeadScorer(const HeadPick& pick) : pick_(pick), noiseKey_(md_noise_key(pick.seed, pick.position)) {}

HeadBest HeadScorer::none() const { return HeadBest{MD_KEY_NONE, -INFINITY, MD_NO_TOKEN}; }

void HeadScorer::score(int64_t first, int n, const float* values, size_t stride, HeadBest& best) const {
  using L = FloatLogits;
  // The biased tokens among these rows, in order.
  auto bias = std::lower_bound(pick_.bias.begin(), pick_.bias.end(), uint32_t(first),
                               [](const std::pair<uint32_t, float>& b, uint32_t t) { return b.first < t; });
  for (int i = 0; i < n; ++i) {
    const uint32_t token = uint32_t(first + i);
    int32_t key = L::key(L::fromFloat(values[size_t(i) * stride]));
    if (bias != pick_.bias.end() && bias->first == token) {
      key = L::key(L::fromFloat(L::value(key) + bias->second));  // roundLogit(z + bias): step 1 in float32
      ++bias;
    }
    if (pick_.temperature == 0.0f) {
      if (key > best.key) best = HeadBest{key, best.score, token};
      continue;
    }
    // NoiseArgmax::score: the scaled noise, then the addition.
    const float scaled = pick_.temperature * md_token_noise(noiseKey_, token);
    const float s = L::value(key) + scaled;
    if (s > best.score) best = HeadBest{best.key, s, token};
  }
}

void HeadScorer::merge(HeadBest& best, const HeadBest& later) const {
  if (pick_.temperature == 0.0f ? later.key > best.key : later.score > best.score) best = later;
}

uint32_t HeadScorer::token(const HeadBest& best) const {
  if (pick_.temperature == 0.0f) return best.key <= FloatLogits::kNegInf ? MD_NO_TOKEN : best.index;
  return best.index;
}

uint32_t pickFromLogits(const HeadPick& pick, const float* logits, uint32_t vocab) {
  const HeadScorer scorer(pick);
  HeadBest best = scorer.none();
  scorer.score(0, int(vocab), logits, 1, best);
  return scorer.token(best);
}

}  // namespace md
