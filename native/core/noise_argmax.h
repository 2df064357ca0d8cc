// noise_argmax.h: SAMPLING-SPEC step 6, argmax of z_i + T * g_i over the
// survivors { key >= tau }, lowest index among ties.
//
// g_i <= MD_GUMBEL_MAX, so a token whose z + T * MD_GUMBEL_MAX is below the
// best score so far cannot win and needs no noise. Starting from the row's
// argmax makes that window narrow at once; with peaked logits only a few
// tokens get noise, with flat logits whole blocks do, computed in a
// vectorisable loop.
#pragma once
#include <cmath>

#include "row_passes.h"

namespace md {

template <class Logits>
class NoiseArgmax {
 public:
  NoiseArgmax(const typename Logits::Bits* row, uint32_t n, int32_t tau, float temperature,
              md_u32 noiseKey)
      : row_(row), n_(n), tau_(tau), t_(temperature), key_(noiseKey),
        tMaxNoise_(temperature * MD_GUMBEL_MAX) {}

  uint32_t run(uint32_t argmaxIndex) {
    best_ = score(argmaxIndex, md_token_noise(key_, argmaxIndex));
    bestIndex_ = argmaxIndex;
    updateWindow();
    float noise[kBlock];
    for (uint32_t b = 0; b < n_; b += kBlock) {
      uint32_t len = std::min(kBlock, n_ - b);
      if (!anyKeyAtLeast<Logits>(row_ + b, len, window_)) continue;
      uint32_t live = 0;
      for (uint32_t j = 0; j < len; ++j) live += Logits::key(row_[b + j]) >= window_;
      if (live >= 8) {
        for (uint32_t j = 0; j < len; ++j) noise[j] = md_token_noise(key_, b + j);
        for (uint32_t j = 0; j < len; ++j) consider(b + j, noise[j]);
      } else {
        for (uint32_t j = 0; j < len; ++j)
          if (Logits::key(row_[b + j]) >= window_) consider(b + j, md_token_noise(key_, b + j));
      }
    }
    return bestIndex_;
  }

 private:
  float score(uint32_t i, float noise) const {
    float scaled = t_ * noise;
    return Logits::value(Logits::key(row_[i])) + scaled;
  }

  void consider(uint32_t i, float noise) {
    if (Logits::key(row_[i]) < window_ || i == bestIndex_) return;
    float s = score(i, noise);
    if (s > best_ || (s == best_ && i < bestIndex_)) {
      best_ = s;
      bestIndex_ = i;
      updateWindow();
    }
  }

  // The lowest key that could still reach best_: value + T * MD_GUMBEL_MAX
  // >= best_, less a few ulps so that rounding never skips a winner.
  void updateWindow() {
    float limit = best_ - tMaxNoise_;
    limit -= (std::fabs(best_) + tMaxNoise_) * 0x1p-20f;
    int32_t w = std::isfinite(limit) ? keyAtLeast<Logits>(limit) : Logits::kNegInf;
    window_ = clampThreshold<Logits>(std::max(w, tau_));
  }

  const typename Logits::Bits* row_;
  uint32_t n_;
  int32_t tau_;
  float t_;
  md_u32 key_;
  float tMaxNoise_;
  float best_ = 0;
  uint32_t bestIndex_ = 0;
  int32_t window_ = 0;
};

}  // namespace md
