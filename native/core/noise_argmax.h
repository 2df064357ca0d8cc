// noise_argmax.h: docs/sampling.md step 6, argmax of z_i + T * g_i over the
// survivors { key >= tau }, lowest index among ties.
//
// g_i <= MD_GUMBEL_MAX, so a token whose z + T * MD_GUMBEL_MAX is below the
// best score so far cannot win and needs no noise. Starting from the row's
// argmax makes that window narrow at once: with peaked logits only a few
// blocks are read at all; with flat logits whole blocks get their noise from
// the vectorised tokenNoiseBlock.
#pragma once
#include <cmath>

#include "noise_block.h"
#include "row_passes.h"

namespace md {

template <class Logits>
class NoiseArgmax {
 public:
  NoiseArgmax(const ScannedRow<Logits>& row, int32_t tau, float temperature, md_u32 noiseKey)
      : row_(row), tau_(tau), t_(temperature), key_(noiseKey), tMaxNoise_(temperature * MD_GUMBEL_MAX) {}

  uint32_t run(uint32_t argmaxIndex) {
    bestIndex_ = argmaxIndex;
    best_ = score(argmaxIndex, md_token_noise(key_, argmaxIndex));
    updateWindow();
    // The blocks nearest the top first: their noise raises the best score,
    // which narrows the window for the rest.
    const int32_t nearTop = std::max(window_, keyAtLeast<Logits>(Logits::value(row_.top) - 2 * t_));
    scoreBlocks(nearTop, Logits::kMaxFinite + 1);
    int32_t split = window_;
    const bool fromCells = planUnlikelyTokens(&split);
    scoreBlocks(split, nearTop);
    // The cell for the best score now, higher than when planned (or equal).
    if (fromCells) scoreTokensOfCells(minimumCell(split - 1));
    return bestIndex_;
  }

 private:
  float score(uint32_t i, float noise) const {
    float scaled = t_ * noise;
    return Logits::value(row_.key(i)) + scaled;
  }

  // A token of a block whose largest value is v can only win with
  // g >= (best - v) / T, so its uniform must be >= exp(-exp(-g)): the lowest
  // md_uniform cell that can do it, less a margin for rounding, or 0 when
  // most cells can.
  uint32_t minimumCell(int32_t blockMaxKey) const {
    const float v = Logits::value(blockMaxKey);
    const double slack = (std::fabs(double(best_)) + std::fabs(double(v))) * 0x1p-20 + 1e-6;
    const double needed = (double(best_) - double(v) - slack) / double(t_) - 1e-3;
    if (!(needed > 1.0)) return 0;  // g > 1 has probability 0.31: not worth it
    const double u = std::exp(-std::exp(-needed));
    const double cell = std::floor((u * 16777216.0 - 1.0) / 2.0) - 2.0;
    return cell > 0 ? uint32_t(std::min(cell, 8388607.0)) : 0;
  }

  // minimumCell at the largest key of blockMaxKey's bucket (2^6 float16
  // keys, 2^13 float32 ones): a cell no higher than the block's own, so the
  // same tokens or more are scored, and one exp pair per bucket while best_
  // stands instead of one per block (thousands share a few buckets).
  static constexpr int kCellBucketShift = sizeof(typename Logits::Bits) == 2 ? 6 : 13;
  static constexpr uint32_t kCellCacheSize = 256;
  uint32_t bucketMinimumCell(int32_t blockMaxKey) {
    const int32_t bucket = blockMaxKey >> kCellBucketShift;
    CachedCell& cached = cellCache_[uint32_t(bucket) % kCellCacheSize];
    if (cached.generation != generation_ || cached.bucket != bucket) {
      const int64_t width = int64_t(1) << kCellBucketShift;
      const int64_t highest = int64_t(bucket) * width + (width - 1);  // (a negative bucket may not be shifted left)
      cached = CachedCell{bucket, generation_, minimumCell(int32_t(std::min<int64_t>(highest, Logits::kMaxFinite)))};
    }
    return cached.cell;
  }

  // The blocks whose largest key is in [low, high) and in the window.
  void scoreBlocks(int32_t low, int32_t high) {
    for (uint32_t b = 0; b < row_.blocks; ++b) {
      const int32_t blockMax = row_.blockMax[b];
      if (blockMax < low || blockMax >= high || blockMax < window_) continue;
      const uint32_t first = b * kBlock, len = row_.blockLength(b);
      const uint32_t minCell = bucketMinimumCell(blockMax);
      if (minCell > 0)
        scoreUnlikelyBlock(first, len, minCell);
      else if (liveTokens(first, len) > 1)
        scoreBlock(first, len);
      else
        scoreEach(first, len, 0, nullptr);
    }
  }

  // Hashes inverted to find the tokens below the split: 2^kUnlikelyCellsLog2
  // cells of 512 hashes each. The blocks above the split are scored as
  // usual; at a temperature of 0.8 the split is about 11 below the best.
  static constexpr uint32_t kUnlikelyCellsLog2 = 4;

  // A key `split` such that a token below it can win only with a cell among
  // the top 2^kUnlikelyCellsLog2 (minimumCell(split - 1) or above):
  // the tokens below the split are then found from their cells
  // (scoreTokensOfCells), not by hashing every one (most of a row, with
  // temperature sampling alone). False when no key above the window has
  // that property (a high temperature) or the scores are not finite.
  bool planUnlikelyTokens(int32_t* split) const {
    if (!std::isfinite(best_) || !std::isfinite(tMaxNoise_)) return false;
    constexpr uint32_t lowestCell = (1u << 23) - (1u << kUnlikelyCellsLog2);
    // minimumCell falls as the key rises: the lowest key whose cell is
    // below lowestCell.
    int32_t lo = window_, hi = row_.top + 1;
    while (lo < hi) {
      const int32_t mid = int32_t(lo + (int64_t(hi) - lo) / 2);
      if (minimumCell(mid) < lowestCell)
        hi = mid;
      else
        lo = mid + 1;
    }
    if (lo <= window_ || minimumCell(lo - 1) < lowestCell) return false;
    *split = lo;
    return true;
  }

  // Every token whose cell is >= cell, found by inverting its hash, scored
  // if it is in the row and the window (a fraction V / 2^32 of them is).
  void scoreTokensOfCells(uint32_t cell) {
    uint32_t tokens[kBlock];
    for (uint64_t hash = uint64_t(cell) << 9; hash < (uint64_t(1) << 32); hash += kBlock) {
      tokensOfHashes(key_, md_u32(hash), kBlock, tokens);
      for (uint32_t j = 0; j < kBlock; ++j) {
        const uint32_t i = tokens[j];
        if (i < row_.size && row_.key(i) >= window_) consider(i, score(i, md_token_noise(key_, i)));
      }
    }
  }

  // Only tokens whose cell reaches minCell can win; usually none do.
  void scoreUnlikelyBlock(uint32_t first, uint32_t len, uint32_t minCell) {
    uint32_t cells[kBlock];
    tokenCellBlock(key_, first, len, cells);
    uint32_t any = 0;
    for (uint32_t j = 0; j < len; ++j) any |= cells[j] >= minCell;
    if (any) scoreEach(first, len, minCell, cells);
  }

  void scoreEach(uint32_t first, uint32_t len, uint32_t minCell, const uint32_t* cells) {
    for (uint32_t j = 0; j < len; ++j) {
      const uint32_t i = first + j;
      if (row_.key(i) >= window_ && (!cells || cells[j] >= minCell)) consider(i, score(i, md_token_noise(key_, i)));
    }
  }

  uint32_t liveTokens(uint32_t first, uint32_t len) const {
    const typename Logits::Bits* bits = row_.bits + first;
    const int32_t window = window_;
    uint32_t live = 0;
    for (uint32_t j = 0; j < len; ++j) live += Logits::key(bits[j]) >= window;
    return live;
  }

  // Every token of a block at once: noise, scores (-inf outside the window)
  // and the block's best, in loops without branches. Members are copied to
  // locals so the compiler sees that the stores cannot alias them.
  void scoreBlock(uint32_t first, uint32_t len) {
    float scores[kBlock];
    tokenNoiseBlock(key_, first, len, scores);
    const typename Logits::Bits* bits = row_.bits + first;
    const int32_t window = window_;
    const float t = t_;
    for (uint32_t j = 0; j < len; ++j) {
      int32_t k = Logits::key(bits[j]);
      float scaled = t * scores[j];
      float s = Logits::value(k) + scaled;
      scores[j] = k >= window ? s : -INFINITY;
    }
    float blockBest = -INFINITY;
    for (uint32_t j = 0; j < len; ++j) blockBest = scores[j] > blockBest ? scores[j] : blockBest;
    if (blockBest < best_) return;
    for (uint32_t j = 0; j < len; ++j)
      if (scores[j] == blockBest) return consider(first + j, blockBest);
  }

  void consider(uint32_t i, float s) {
    if (i == bestIndex_) return;
    if (s > best_ || (s == best_ && i < bestIndex_)) {
      best_ = s;
      bestIndex_ = i;
      ++generation_;  // the cached cells were for the old best
      updateWindow();
    }
  }

  // The lowest key that could still reach best_: value + T * MD_GUMBEL_MAX
  // >= best_, less a few ulps so that rounding never skips a winner.
  void updateWindow() {
    float limit = best_ - tMaxNoise_;
    limit -= (std::fabs(best_) + tMaxNoise_) * 0x1p-20f;
    int32_t w = std::isfinite(limit) ? keyAtLeast<Logits>(limit) : Logits::kNegInf;
    window_ = std::max(w, tau_);
  }

  const ScannedRow<Logits>& row_;
  int32_t tau_;
  float t_;
  md_u32 key_;
  float tMaxNoise_;
  float best_ = 0;
  uint32_t bestIndex_ = 0;
  int32_t window_ = 0;
  struct CachedCell {
    int32_t bucket = 0;
    uint32_t generation = 0xFFFFFFFFu;  // no generation yet
    uint32_t cell = 0;
  };
  CachedCell cellCache_[kCellCacheSize];
  uint32_t generation_ = 0;
};

}  // namespace md
