// top_p.h: top-p's threshold tau_p (docs/sampling.md step 5), exactly.
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
#include "weight_bounds.h"

namespace md {

// Candidate lists up to this size are sorted; larger ones use a histogram.
constexpr size_t kTopPSortLimit = 4096;

template <class Logits>
struct TopPContext {
  float maxValue;
  float filterTemperature;

  float weight(int32_t key) const { return md_exp((Logits::value(key) - maxValue) / filterTemperature); }
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
inline int32_t walkLevels(const std::vector<std::pair<int32_t, double>>& levels, double target, double cumulative,
                          int32_t fallback) {
  for (const auto& [level, mass] : levels) {
    cumulative += mass;
    if (cumulative >= target) return level;
  }
  return levels.empty() ? fallback : levels.back().first;
}

// How many tokens of a float16 row have each bit pattern, into s.rawCounts:
// indexed by the raw bits, no key, no branch.
template <class Logits>
void countPatterns(const ScannedRow<Logits>& row, SamplerScratch& s) {
  s.rawCounts.assign(65536, 0);
  uint32_t* raw = s.rawCounts.data();
  const typename Logits::Bits* bits = row.bits;
  const uint32_t n = row.size;  // a local: the stores through `raw` could alias the row otherwise
  for (uint32_t i = 0; i < n; ++i) raw[bits[i]]++;
}

// The histogram of the keys >= floorKey up to the row's top (exact levels
// for float16; 2^16-value bins for float32) and each bin's mass, into
// s.counts and s.mass: bin b holds keys (b + low) << shift ... Returns low.
template <class Logits>
int32_t binMasses(const ScannedRow<Logits>& row, int32_t floorKey, const TopPContext<Logits>& ctx, SamplerScratch& s) {
  constexpr int shift = Logits::kCoarseShift;
  const int32_t low = std::max(floorKey, row.bottom) >> shift, high = row.top >> shift;
  const size_t bins = size_t(high - low) + 1;
  s.counts.assign(bins, 0);
  s.mass.assign(bins, 0.0);
  // Local pointers: through the vectors the compiler must reload them
  // after every store.
  uint32_t* counts = s.counts.data();
  double* mass = s.mass.data();
  const typename Logits::Bits* bits = row.bits;
  const bool wholeRow = floorKey == Logits::kNegInf;
  if constexpr (shift == 0) {
    if (wholeRow) {
      // Every token counts: index by the raw bits (no key, no branch), then
      // fold the patterns into their keys' bins.
      countPatterns(row, s);
      const uint32_t* raw = s.rawCounts.data();
      for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
        if (!raw[pattern]) continue;
        const int32_t key = Logits::key(typename Logits::Bits(pattern));
        if (key >= low && key <= row.top) counts[key - low] += raw[pattern];
      }
    }
  }
  if (shift != 0 || !wholeRow)
    row.forEachBlockAtLeast(floorKey, [&](uint32_t first, uint32_t len) {
      for (uint32_t i = first; i < first + len; ++i) {
        int32_t key = Logits::key(bits[i]);
        // Outside the scan's range only when another thread wrote the row since.
        if (key < floorKey || key > row.top || (key >> shift) < low) continue;
        if constexpr (shift == 0)
          counts[key - low]++;
        else
          mass[(key >> shift) - low] += double(ctx.weight(key));
      }
    });
  if constexpr (shift == 0) {
    // Every bin, empty or not: a branch-free loop the compiler vectorises.
    for (size_t b = 0; b < bins; ++b) mass[b] = double(counts[b]) * double(ctx.weight(int32_t(b) + low));
  }
  return low;
}

// The sum of the bins' masses from the top. Empty bins add exact zeros,
// so skipping them leaves the sum's bits as they are (and in the order the
// TypeScript sampler sums levels).
inline double sumFromTop(const std::vector<double>& mass) {
  double total = 0;
  for (size_t b = mass.size(); b-- > 0;)
    if (mass[b] != 0) total += mass[b];
  return total;
}

// The walk down the bins binMasses() left (first bin `low`) to the level
// where the cumulative mass reaches target. `bottomIsFloor`: the lowest bin
// is the lowest there is, and ends the walk whatever the mass (rounding);
// otherwise reaching it short of the target is no answer (false).
template <class Logits>
bool walkBins(const ScannedRow<Logits>& row, int32_t floorKey, int32_t low, const TopPContext<Logits>& ctx,
              double target, bool bottomIsFloor, SamplerScratch& s, int32_t* tau) {
  constexpr int shift = Logits::kCoarseShift;
  std::vector<int32_t>& keys = s.keys;
  double cumulative = 0;
  for (size_t b = s.mass.size(); b-- > 0;) {
    if (s.mass[b] == 0 && (shift != 0 || s.counts[b] == 0)) continue;
    if (cumulative + s.mass[b] < target && b > 0) {
      cumulative += s.mass[b];
      continue;
    }
    if (cumulative + s.mass[b] < target && !bottomIsFloor) return false;
    const int32_t bin = int32_t(b) + low;
    if constexpr (shift == 0) {
      *tau = bin;
      return true;
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
      // (Should the bin's levels round short of the target its mass
      // reached: its last level, wherever the walk started.)
      *tau = walkLevels(s.levels, target, cumulative, floorKey);
      return true;
    }
  }
  if (!bottomIsFloor) return false;
  *tau = floorKey;
  return true;
}

// Heavy levels for topPFromHeavyLevels: the whole-row histogram's bins
// from heavyFrom's (a bin's first key) up to the top's, into s.counts and
// s.mass (index bin - heavyFrom's bin), with the same sums binMasses makes.
// float16: a count per key (only the lanes whose largest key is heavy are
// read, 8 tokens kLanes apart) times its weight. float32: every heavy
// token's weight added in token order, as binMasses adds them (the blocks
// without a heavy token are skipped, which leaves the order as it is).
template <class Logits>
void heavyLevels(const ScannedRow<Logits>& row, int32_t heavyFrom, const TopPContext<Logits>& ctx, SamplerScratch& s) {
  constexpr int shift = Logits::kCoarseShift;
  const int32_t low = heavyFrom >> shift;
  s.counts.assign(size_t((row.top >> shift) - low) + 1, 0);
  s.mass.assign(s.counts.size(), 0.0);
  uint32_t* counts = s.counts.data();
  double* mass = s.mass.data();
  if constexpr (shift == 0) {
    row.forEachInLanesAtLeast(heavyFrom, [&](uint32_t i) {
      // (<= top: a row another thread writes may have changed since the scan)
      const int32_t key = row.key(i);
      if (key >= heavyFrom && key <= row.top) counts[key - heavyFrom]++;
    });
    for (size_t j = 0; j < s.counts.size(); ++j)
      if (counts[j]) mass[j] = double(counts[j]) * double(ctx.weight(heavyFrom + int32_t(j)));
  } else {
    row.forEachBlockAtLeast(heavyFrom, [&](uint32_t first, uint32_t len) {
      for (uint32_t i = first; i < first + len; ++i) {
        const int32_t key = row.key(i);
        if (key >= heavyFrom && key <= row.top) mass[(key >> shift) - low] += double(ctx.weight(key));
      }
    });
  }
}

// Whether the walk stops at the same level (s.counts and s.mass from
// heavyLevels) for every total between heavy and heavy + light.
template <class Logits>
bool heavyWalksAgree(const ScannedRow<Logits>& row, const TopPContext<Logits>& ctx, float p, int32_t heavyFrom,
                     double light, SamplerScratch& s, int32_t* tau) {
  const double heavy = sumFromTop(s.mass);
  // Margins: md_exp need not be monotone in its last bit; the whole-row
  // total rounds once per bin (at most 65,536 x 2^-53 of it).
  const double lowTarget = double(p) * heavy;
  const double highTarget = double(p) * ((heavy + light * (1 + 0x1p-20)) * (1 + 0x1p-30));
  const int32_t low = heavyFrom >> Logits::kCoarseShift;
  int32_t atLow, atHigh;
  if (!walkBins(row, Logits::kNegInf, low, ctx, lowTarget, false, s, &atLow)) return false;
  if (!walkBins(row, Logits::kNegInf, low, ctx, highTarget, false, s, &atHigh) || atHigh != atLow) return false;
  *tau = atLow;
  return true;
}

// The whole-row histogram's answer from its heaviest bins alone, when the
// rest cannot change it (false when it might). Heavy: keys from the bin of
// the top's value + Tf ln 2^-16 up (weights down to 2^-16 of the top's);
// light: the keys below. The whole-row walk sums the heavy bins first, in
// the same order, and its target p * total lies between p * heavy and
// p * (heavy + light); if the walk stops at the same level for both, that
// level is its answer, bit for bit (within a float32 bin the walk goes on
// level by level from the bins above, which are the same). The light mass
// is bounded (weight_bounds.h) first from the scan's lane maxima, each
// standing for its 8 tokens (a pass over V / 8 keys), and when that is too
// loose to decide, from every token (a pass over the row, within 6.2%).
// With language-model logits (a few tokens near the top, the rest far
// below) the bounds are far below the heavy levels' steps.
template <class Logits>
bool topPFromHeavyLevels(const ScannedRow<Logits>& row, const TopPContext<Logits>& ctx, float p, SamplerScratch& s,
                         int32_t* tau) {
  constexpr int shift = Logits::kCoarseShift;
  const float limit = ctx.maxValue + ctx.filterTemperature * -11.090354888959125f;         // ln 2^-16
  const int32_t heavyFrom = (keyAtLeast<Logits>(limit) >> shift) * (int32_t(1) << shift);  // its bin's first key
  const int32_t lowest = std::max(row.bottom, Logits::kNegInf + 1);                        // -inf weighs nothing
  if (heavyFrom <= lowest) return false;                                                   // everything is heavy
  // More bins than that many weights save nothing over weighing all (flat
  // rows), nor do heavy tokens in more than an eighth of the blocks.
  if ((row.top >> shift) - (heavyFrom >> shift) > int32_t(kTopPSortLimit)) return false;
  uint32_t heavyBlocks = 0;
  for (uint32_t b = 0; b < row.blocks; ++b) heavyBlocks += row.blockMax[b] >= heavyFrom;
  if (heavyBlocks > row.blocks / 8) return false;
  heavyLevels(row, heavyFrom, ctx, s);
  const double fromLanes = keyWeightBound(Logits{}, row.laneMax, row.blocks * kLanes, heavyFrom - 1, kLanes,
                                          ctx.maxValue, ctx.filterTemperature);
  if (heavyWalksAgree(row, ctx, p, heavyFrom, fromLanes, s, tau)) return true;
  const double fromTokens =
      rowWeightBound(Logits{}, row.bits, row.size, heavyFrom, ctx.maxValue, ctx.filterTemperature);
  return heavyWalksAgree(row, ctx, p, heavyFrom, fromTokens, s, tau);
}

// tau_p over S_k = { key >= floorKey } (floorKey = kNegInf when top-k is off).
template <class Logits>
int32_t topPThreshold(const ScannedRow<Logits>& row, int32_t floorKey, float filterTemperature, float p,
                      SamplerScratch& s) {
  const TopPContext<Logits> ctx{Logits::value(row.top), filterTemperature};
  std::vector<int32_t>& keys = s.keys;

  // (Without top-k every token is a candidate: a long row has too many.)
  const bool few = floorKey != Logits::kNegInf || row.size <= kTopPSortLimit;
  if (few && gatherKeysAtLeast<Logits>(row, floorKey, kTopPSortLimit, keys)) {
    std::sort(keys.begin(), keys.end(), std::greater<int32_t>());
    s.levels.clear();
    appendLevels(keys, ctx, s.levels);
    double total = 0;
    for (const auto& level : s.levels) total += level.second;
    return walkLevels(s.levels, double(p) * total, 0.0, floorKey);
  }
  int32_t tau;
  if (floorKey == Logits::kNegInf && topPFromHeavyLevels(row, ctx, p, s, &tau)) return tau;
  // The whole histogram.
  const int32_t low = binMasses(row, floorKey, ctx, s);
  walkBins(row, floorKey, low, ctx, double(p) * sumFromTop(s.mass), true, s, &tau);
  return tau;
}

}  // namespace md
