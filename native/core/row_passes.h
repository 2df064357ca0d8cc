// row_passes.h: streaming passes over a row of logit bits.
//
// One vectorised pass (scanRow) records the largest key of every block of
// kBlock tokens. Every later pass consults those maxima first and reads only
// the blocks that can hold a token it is looking for: with language-model
// logits that is a handful of blocks out of thousands.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "logit_keys.h"

namespace md {

constexpr uint32_t kBlock = 64;
// Each block's tokens j, j + kLanes, j + 2 kLanes, ... form lane j: one
// vector lane of the scan, whose largest key the scan keeps too.
constexpr uint32_t kLanes = 8;

// The largest keys scanRow records, reused from row to row.
struct RowMaxima {
  std::vector<int32_t> block;  // per block of kBlock tokens
  std::vector<int32_t> lane;   // kLanes per block; a short last block's empty lanes hold the smallest key
};

template <class Logits>
struct ScannedRow {
  const typename Logits::Bits* bits;
  uint32_t size;
  const int32_t* blockMax;  // largest key of block b (tokens [b * kBlock, ...))
  const int32_t* laneMax;   // largest key of lane l of block b at [b * kLanes + l]
  uint32_t blocks;
  int32_t top;     // largest key of the row
  int32_t bottom;  // smallest key of the row

  uint32_t blockLength(uint32_t b) const { return std::min(kBlock, size - b * kBlock); }
  int32_t key(uint32_t i) const { return Logits::key(bits[i]); }

  // Calls visit(i) for every token of every lane holding a key >= threshold
  // (a superset of the tokens >= threshold, a few lanes of 8 when they are
  // rare), block by block, lane by lane.
  template <class Visit>
  void forEachInLanesAtLeast(int32_t threshold, Visit&& visit) const {
    for (uint32_t b = 0; b < blocks; ++b) {
      if (blockMax[b] < threshold) continue;
      const uint32_t first = b * kBlock, end = first + blockLength(b);
      for (uint32_t l = 0; l < kLanes; ++l)
        if (laneMax[size_t(b) * kLanes + l] >= threshold)
          for (uint32_t i = first + l; i < end; i += kLanes) visit(i);
    }
  }

  // Calls visit(first, length) for every block holding a key >= threshold.
  template <class Visit>
  void forEachBlockAtLeast(int32_t threshold, Visit&& visit) const {
    for (uint32_t b = 0; b < blocks; ++b)
      if (blockMax[b] >= threshold) visit(b * kBlock, blockLength(b));
  }
};

// One pass: every block's and lane's largest key, the row's largest and
// smallest. Full blocks keep kLanes maxima and minima side by side, which
// the compiler keeps in one vector register each.
template <class Logits>
ScannedRow<Logits> scanRow(const typename Logits::Bits* bits, uint32_t n, RowMaxima& maxima) {
  using Key = typename Logits::Key;
  const uint32_t blocks = (n + kBlock - 1) / kBlock;
  maxima.block.resize(blocks);
  maxima.lane.resize(size_t(blocks) * kLanes);
  int32_t* blockMax = maxima.block.data();
  int32_t* laneMax = maxima.lane.data();
  // A block's 8 lanes are `groups` vectors of `perVector` keys.
  using Lanes = typename Logits::Lanes;
  constexpr uint32_t perVector = sizeof(Lanes) / sizeof(Key), groups = kLanes / perVector;
  static_assert(groups * perVector == kLanes, "a whole number of vectors per 8 lanes");
  int32_t top = Logits::kNegInf;
  Lanes low[groups];  // the row's smallest, lane by lane
  for (auto& l : low) l = Lanes{} + Key(Logits::kMaxFinite);
  for (uint32_t b = 0; b < blocks; ++b) {
    const typename Logits::Bits* p = bits + size_t(b) * kBlock;
    const uint32_t len = std::min(kBlock, n - b * kBlock);
    Lanes high[groups];
    for (auto& h : high) h = Lanes{} + Key(Logits::kNegInf);
    if (len == kBlock) {
      for (uint32_t j = 0; j < kBlock; j += kLanes)
        for (uint32_t g = 0; g < groups; ++g) {
          Lanes k;
          Logits::keys(p + j + g * perVector, k);
          const Lanes higher = k > high[g], lower = k < low[g];
          high[g] = MD_SELECT_LANES(higher, k, high[g]);
          low[g] = MD_SELECT_LANES(lower, k, low[g]);
        }
    } else {
      for (uint32_t j = 0; j < len; ++j) {
        const Key k = Logits::key(p[j]);
        Lanes& h = high[(j % kLanes) / perVector];
        Lanes& l = low[(j % kLanes) / perVector];
        const uint32_t lane = j % perVector;
        h[lane] = k > h[lane] ? k : h[lane];
        l[lane] = k < l[lane] ? k : l[lane];
      }
    }
    int32_t blockHigh = Logits::kNegInf;
    for (uint32_t g = 0; g < groups; ++g) {
      // Lanes widened to int32 and stored at once.
      typedef int32_t Wide __attribute__((vector_size(perVector * 4)));
      const Wide wide = __builtin_convertvector(high[g], Wide);
      std::memcpy(laneMax + size_t(b) * kLanes + g * perVector, &wide, sizeof wide);
      blockHigh = std::max<int32_t>(blockHigh, largestLane(high[g]));
    }
    blockMax[b] = blockHigh;
    top = std::max<int32_t>(top, blockHigh);
  }
  int32_t bottom = Logits::kMaxFinite;
  for (const auto& l : low) bottom = std::min<int32_t>(bottom, smallestLane(l));
  return {bits, n, blockMax, laneMax, blocks, top, bottom};
}

// Lowest index whose key is the row's largest (docs/sampling.md's tie rule).
template <class Logits>
uint32_t firstIndexOfTop(const ScannedRow<Logits>& row) {
  for (uint32_t b = 0; b < row.blocks; ++b) {
    if (row.blockMax[b] != row.top) continue;
    // Bounded by the block: the scan found the top here, but memory that
    // changed since (a row shared with another thread) must not send this
    // past the end of the row.
    const uint32_t first = b * kBlock, end = first + row.blockLength(b);
    for (uint32_t i = first; i < end; ++i)
      if (row.key(i) == row.top) return i;
  }
  return row.size;
}

// The k-th largest key counted with multiplicity (top-k's tau_k), 0 < k < n.
// With k blocks or more: the k largest block maxima are k tokens, so tau_k
// is at least the k-th of them, B; the k largest lane maxima from B up are
// k tokens too, so tau_k is at least the k-th of those, L; and only the
// lanes whose largest key is L or more hold candidates (about k lanes of 8).
// With fewer blocks: every key, above a rising threshold, keeping at most
// 2k + kBlock candidates; each compaction halves the buffer, so the scan is
// O(n) even on sorted input.
template <class Logits>
int32_t kthLargestKey(const ScannedRow<Logits>& row, uint32_t k, std::vector<int32_t>& buffer) {
  auto kth = [&]() {
    std::nth_element(buffer.begin(), buffer.begin() + (k - 1), buffer.end(), std::greater<int32_t>());
    return buffer[k - 1];
  };
  if (k <= row.blocks) {
    buffer.assign(row.blockMax, row.blockMax + row.blocks);
    const int32_t fromBlocks = kth();
    buffer.clear();
    for (uint32_t b = 0; b < row.blocks; ++b) {
      if (row.blockMax[b] < fromBlocks) continue;
      for (uint32_t l = 0; l < kLanes; ++l) {
        const int32_t laneMax = row.laneMax[size_t(b) * kLanes + l];
        if (laneMax >= fromBlocks) buffer.push_back(laneMax);
      }
    }
    const int32_t fromLanes = kth();
    buffer.clear();
    row.forEachInLanesAtLeast(fromLanes, [&](uint32_t i) {
      const int32_t key = row.key(i);
      if (key >= fromLanes) buffer.push_back(key);
    });
    // Fewer than k only when another thread wrote the row since the scan.
    return buffer.size() >= k ? kth() : fromLanes;
  }
  buffer.clear();
  const size_t capacity = 2 * size_t(k) + kBlock;
  int32_t threshold = Logits::kNegInf - 1;  // accept everything until the first compaction
  auto compact = [&]() {
    threshold = kth();  // nth_element leaves every kept key >= this one
    buffer.resize(k);
  };
  for (uint32_t b = 0; b < row.blocks; ++b) {
    if (row.blockMax[b] <= threshold) continue;
    const uint32_t first = b * kBlock, len = row.blockLength(b);
    for (uint32_t i = first; i < first + len; ++i) {
      int32_t key = row.key(i);
      if (key > threshold) buffer.push_back(key);
    }
    if (buffer.size() >= capacity) compact();
  }
  return kth();
}

// Keys >= threshold, block by block (in row order across blocks); false
// (and a partial list) past `limit`.
template <class Logits>
bool gatherKeysAtLeast(const ScannedRow<Logits>& row, int32_t threshold, size_t limit, std::vector<int32_t>& out) {
  out.clear();
  for (uint32_t b = 0; b < row.blocks; ++b) {
    if (row.blockMax[b] < threshold) continue;
    const uint32_t first = b * kBlock, end = first + row.blockLength(b);
    for (uint32_t l = 0; l < kLanes; ++l) {
      if (row.laneMax[size_t(b) * kLanes + l] < threshold) continue;
      for (uint32_t i = first + l; i < end; i += kLanes) {
        const int32_t key = row.key(i);
        if (key >= threshold) out.push_back(key);
      }
    }
    if (out.size() > limit) return false;
  }
  return true;
}

}  // namespace md
