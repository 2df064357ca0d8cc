// top_p.h: top-p's threshold tau_p (SAMPLING-SPEC step 5), exactly.
//
// Masses are summed level by level from the top (a level is one logit value
// and all its ties) in double: float32 weights, double sums. The TypeScript
// sampler sums in the same order, so the two agree on the boundary.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "cpu_sampler.h"
#include "row_passes.h"

namespace md {

// Candidate lists up to this size are sorted; larger ones use a histogram.
constexpr size_t kTopPSortLimit = 4096;

template <class Logits>
struct TopPContext {
  float maxValue;
  float filterTemperature;

  float weight(int32_t key) const {
    return md_exp((Logits::value(key) - maxValue) / filterTemperature);
  }
};

// The levels of `keys` (sorted descending) with their masses, appended to
// `levels`: each weight is computed once, for the total and the walk alike.
template <class Logits>
void appendLevels(const std::vector<int32_t>& keys, const TopPContext<Logits>& ctx,
                  std::vector<std::pair<int32_t, double>>& levels) {
  for (size_t i = 0; i < keys.size();) {
    size_t end = i;
    while (end < keys.size() && keys[end] == keys[i]) ++end;
    levels.push_back({keys[i], double(end - i) * double(ctx.weight(keys[i]))});
    i = end;
  }
}

// The first level at which the cumulative mass, starting from `cumulative`,
// reaches target; the last level when rounding keeps it from getting there.
inline int32_t walkLevels(const std::vector<std::pair<int32_t, double>>& levels, double target,
                          double cumulative, int32_t fallback) {
  for (const auto& [level, mass] : levels) {
    cumulative += mass;
    if (cumulative >= target) return level;
  }
  return levels.empty() ? fallback : levels.back().first;
}

// tau_p over S_k = { key >= floorKey } (floorKey = kNegInf when top-k is off).
template <class Logits>
int32_t topPThreshold(const ScannedRow<Logits>& row, int32_t floorKey, float filterTemperature,
                      float p, SamplerScratch& s) {
  const int32_t maxKey = row.top;
  const TopPContext<Logits> ctx{Logits::value(maxKey), filterTemperature};
  std::vector<int32_t>& keys = s.keys;

  if (gatherKeysAtLeast<Logits>(row, floorKey, kTopPSortLimit, keys)) {
    std::sort(keys.begin(), keys.end(), std::greater<int32_t>());
    s.levels.clear();
    appendLevels(keys, ctx, s.levels);
    double total = 0;
    for (const auto& level : s.levels) total += level.second;
    return walkLevels(s.levels, double(p) * total, 0.0, floorKey);
  }

  // Histogram over coarse keys (exact levels for float16; 2^16-value bins
  // for float32, refined by sorting the one bin the boundary falls in).
  constexpr int shift = Logits::kCoarseShift;
  const int32_t low = std::max(floorKey, row.bottom) >> shift, high = maxKey >> shift;
  const size_t bins = size_t(high - low) + 1;
  s.counts.assign(bins, 0);
  s.mass.assign(bins, 0.0);
  // Local pointers: through the vectors the compiler must reload them
  // after every store.
  uint32_t* counts = s.counts.data();
  double* mass = s.mass.data();
  const typename Logits::Bits* bits = row.bits;
  if constexpr (shift == 0) {
    if (floorKey == Logits::kNegInf) {
      // Every token counts: index by the raw bits (no key, no branch), then
      // fold the patterns into their keys' bins.
      s.rawCounts.assign(65536, 0);
      uint32_t* raw = s.rawCounts.data();
      const uint32_t n = row.size;  // a local: the stores through `raw` could alias the row otherwise
      for (uint32_t i = 0; i < n; ++i) raw[bits[i]]++;
      for (uint32_t pattern = 0; pattern < 65536; ++pattern)
        if (raw[pattern]) counts[Logits::key(typename Logits::Bits(pattern)) - low] += raw[pattern];
    }
  }
  if (shift != 0 || floorKey != Logits::kNegInf) row.forEachBlockAtLeast(floorKey, [&](uint32_t first, uint32_t len) {
    for (uint32_t i = first; i < first + len; ++i) {
      int32_t key = Logits::key(bits[i]);
      if (key < floorKey) continue;
      if constexpr (shift == 0) counts[key - low]++;
      else mass[(key >> shift) - low] += double(ctx.weight(key));
    }
  });
  if constexpr (shift == 0) {
    // Every bin, empty or not: a branch-free loop the compiler vectorises.
    for (size_t b = 0; b < bins; ++b) mass[b] = double(counts[b]) * double(ctx.weight(int32_t(b) + low));
  }
  // Empty bins add exact zeros, so skipping them leaves the sum's bits as
  // they are (and in the order the TypeScript sampler sums levels).
  double total = 0;
  for (size_t b = bins; b-- > 0;)
    if (mass[b] != 0) total += mass[b];
  const double target = double(p) * total;

  double cumulative = 0;
  for (size_t b = bins; b-- > 0;) {
    if (s.mass[b] == 0 && (shift != 0 || s.counts[b] == 0)) continue;
    if (cumulative + s.mass[b] < target && b > 0) { cumulative += s.mass[b]; continue; }
    const int32_t bin = int32_t(b) + low;
    if constexpr (shift == 0) {
      return bin;
    } else {
      // The boundary is inside this bin: its keys, sorted, finish the walk.
      keys.clear();
      row.forEachBlockAtLeast(std::max(floorKey, bin * (int32_t(1) << shift)), [&](uint32_t first, uint32_t len) {
        for (uint32_t i = first; i < first + len; ++i) {
          int32_t key = row.key(i);
          if (key >= floorKey && (key >> shift) == bin) keys.push_back(key);
        }
      });
      std::sort(keys.begin(), keys.end(), std::greater<int32_t>());
      s.levels.clear();
      appendLevels(keys, ctx, s.levels);
      return walkLevels(s.levels, target, cumulative, floorKey);
    }
  }
  return floorKey;
}

}  // namespace md
