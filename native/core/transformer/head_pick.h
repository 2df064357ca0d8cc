// head_pick.h: FlashSampling on the CPU. When the next token depends only
// on the logits, the temperature and the bias (greedy; temperature-only
// sampling, either with a bias), the LM head's rows are scored as they are
// computed, tile by tile on every thread, and only each thread's best is
// kept: the logits row is never written, and the token is the one
// CpuSampler draws from the float32 logits (docs/sampling.md steps 0, 1, 4
// and 6, with CpuSampler's arithmetic: logit_edits.h, noise_argmax.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace md {

struct HeadPick {
  float temperature = 0.0f;  // 0: the argmax
  uint32_t seed = 0;
  uint32_t position = 0;  // the sampled token's: the noise key's position
  // (token, bias) sorted by token, tokens below the vocabulary, each token's
  // first entry only: what headPickBias() makes of a sampler's lists.
  std::vector<std::pair<uint32_t, float>> bias;
};

// A sampler's bias lists as HeadPick holds them.
std::vector<std::pair<uint32_t, float>> headPickBias(const uint32_t* tokens, const float* values, size_t count,
                                                     uint32_t vocab);

// One thread's best so far: the largest key (greedy) or score (sampled),
// the lowest index among ties.
struct HeadBest {
  int32_t key;
  float score;
  uint32_t index;
};

class HeadScorer {
 public:
  explicit HeadScorer(const HeadPick& pick);

  HeadBest none() const;
  // Rows first .. first + n - 1 of the logits (values[i * stride]), as the
  // unfused LM head stores them, into `best`. Rows come in increasing order.
  void score(int64_t first, int n, const float* values, size_t stride, HeadBest& best) const;
  // `later` (from rows after best's) into `best`.
  void merge(HeadBest& best, const HeadBest& later) const;
  // The token, or MD_NO_TOKEN when every logit is -inf.
  uint32_t token(const HeadBest& best) const;

 private:
  const HeadPick& pick_;
  uint32_t noiseKey_;
};

// The token `pick` draws from a row of `vocab` float32 logits: the one the
// fused head gives when it scores the same values as they are computed.
uint32_t pickFromLogits(const HeadPick& pick, const float* logits, uint32_t vocab);

}  // namespace md
