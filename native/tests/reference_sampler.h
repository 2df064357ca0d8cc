// reference_sampler.h: docs/sampling.md written as plainly as possible
// (sorts, full passes), the oracle for the optimised CpuSampler.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <vector>

#include "cpu_sampler.h"
#include "float16.h"
#include "md_sampling.h"

namespace reference {

struct Case {
  std::vector<float> values;  // logits (rounded to half when isHalf)
  bool isHalf = false;
  md_sampling_params params{};
  std::vector<uint32_t> window, biasTokens;
  std::vector<float> biasValues;
  std::vector<uint32_t> mask;  // the allowed tokens (MD_FLAG_TOKEN_MASK); empty for all
};

inline float sanitise(float v, bool isHalf) {
  if (std::isnan(v)) return -INFINITY;
  if (v == INFINITY) return isHalf ? 65504.0f : 3.4028234663852886e38f;
  return v;
}
inline float roundTo(float v, bool isHalf) {
  return sanitise(isHalf ? md::halfToFloat(md::halfFromFloat(v)) : v, isHalf);
}

inline uint32_t sample(const Case& c) {
  const md_sampling_params& p = c.params;
  const size_t n = c.values.size();
  std::vector<float> z(n);
  for (size_t i = 0; i < n; ++i) z[i] = sanitise(c.values[i], c.isHalf);
  std::vector<bool> biased(n);
  for (size_t i = 0; i < c.biasTokens.size(); ++i) {
    uint32_t t = c.biasTokens[i];
    if (t >= n || biased[t]) continue;
    biased[t] = true;
    z[t] = roundTo(z[t] + c.biasValues[i], c.isHalf);
  }
  std::map<uint32_t, int> counts;
  for (uint32_t t : c.window)
    if (t < n) counts[t]++;
  bool on = p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
  for (auto [t, count] : counts) {
    if (!on) break;
    float r = p.repeat_penalty, zt = z[t];
    float y = r == 1.0f ? zt : (zt > 0 ? zt / r : zt * r);
    float offset = float(count) * p.frequency_penalty + p.presence_penalty;
    z[t] = roundTo(y - offset, c.isHalf);
  }
  if (p.flags & MD_FLAG_TOKEN_MASK)
    for (size_t t = 0; t < n; ++t)
      if (!((c.mask[t / 32] >> (t % 32)) & 1u)) z[t] = -INFINITY;
  size_t argmax = 0;
  for (size_t i = 1; i < n; ++i)
    if (z[i] > z[argmax]) argmax = i;
  const float m = z[argmax];
  if (m == -INFINITY) return MD_NO_TOKEN;
  if (p.temperature == 0) return uint32_t(argmax);

  const float T = p.temperature, tf = (p.flags & MD_FLAG_UNIT_FILTER_TEMPERATURE) ? 1.0f : T;
  std::vector<float> sorted = z;
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  float tau = -INFINITY;
  float tauK = -INFINITY;
  if (p.top_k > 0 && p.top_k < n) tau = tauK = sorted[p.top_k - 1];
  if (p.top_p < 1.0f) {
    std::vector<std::pair<float, double>> levels;
    double total = 0;
    for (size_t i = 0; i < n && sorted[i] >= tauK;) {
      size_t j = i;
      while (j < n && sorted[j] == sorted[i]) ++j;
      float tempered = (sorted[i] - m) / tf;
      double mass = double(j - i) * double(md_exp(tempered));
      levels.push_back({sorted[i], mass});
      total += mass;
      i = j;
    }
    double target = double(p.top_p) * total, cumulative = 0;
    float tauP = levels.back().first;
    for (auto [value, mass] : levels) {
      cumulative += mass;
      if (cumulative >= target) {
        tauP = value;
        break;
      }
    }
    tau = std::max(tau, tauP);
  }
  if (p.min_p > 0) tau = std::max(tau, m + tf * md_log_any(p.min_p));

  const md_u32 key = md_noise_key(p.seed, p.position);
  uint32_t best = MD_NO_TOKEN;
  float bestScore = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    if (z[i] < tau) continue;
    float scaled = T * md_token_noise(key, uint32_t(i));
    float s = z[i] + scaled;
    if (best == MD_NO_TOKEN || s > bestScore) {
      best = uint32_t(i);
      bestScore = s;
    }
  }
  return best;
}

}  // namespace reference
