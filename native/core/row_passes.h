// row_passes.h: streaming passes over a row of logit bits.
//
// One vectorised pass (scanRow) records the largest key of every block of
// kBlock tokens. Every later pass consults those maxima first and reads only
// the blocks that can hold a token it is looking for: with language-model
// logits that is a handful of blocks out of thousands.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "logit_keys.h"

namespace md {

constexpr uint32_t kBlock = 64;

template <class Logits>
struct ScannedRow {
  const typename Logits::Bits* bits;
  uint32_t size;
  const int32_t* blockMax;  // largest key of block b (tokens [b * kBlock, ...))
  uint32_t blocks;
  int32_t top;              // largest key of the row
  int32_t bottom;           // smallest key of the row

  uint32_t blockLength(uint32_t b) const { return std::min(kBlock, size - b * kBlock); }
  int32_t key(uint32_t i) const { return Logits::key(bits[i]); }

  // Calls visit(first, length) for every block holding a key >= threshold.
  template <class Visit>
  void forEachBlockAtLeast(int32_t threshold, Visit&& visit) const {
    for (uint32_t b = 0; b < blocks; ++b)
      if (blockMax[b] >= threshold) visit(b * kBlock, blockLength(b));
  }
};

template <class Logits>
ScannedRow<Logits> scanRow(const typename Logits::Bits* bits, uint32_t n, std::vector<int32_t>& blockMax) {
  using Key = typename Logits::Key;
  const uint32_t blocks = (n + kBlock - 1) / kBlock;
  blockMax.resize(blocks);
  int32_t top = Logits::kNegInf, bottom = Logits::kMaxFinite;
  for (uint32_t b = 0; b < blocks; ++b) {
    const typename Logits::Bits* p = bits + size_t(b) * kBlock;
    const uint32_t len = std::min(kBlock, n - b * kBlock);
    Key high = Key(Logits::kNegInf), low = Key(Logits::kMaxFinite);
    for (uint32_t j = 0; j < len; ++j) {
      Key k = Logits::key(p[j]);
      high = k > high ? k : high;
      low = k < low ? k : low;
    }
    blockMax[b] = high;
    top = std::max<int32_t>(top, high);
    bottom = std::min<int32_t>(bottom, low);
  }
  return {bits, n, blockMax.data(), blocks, top, bottom};
}

// Lowest index whose key is the row's largest (SAMPLING-SPEC's tie rule).
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
// Keeps at most 2k + kBlock candidates above a rising threshold; each
// compaction halves the buffer, so the scan is O(n) even on sorted input.
template <class Logits>
int32_t kthLargestKey(const ScannedRow<Logits>& row, uint32_t k, std::vector<int32_t>& buffer) {
  buffer.clear();
  const size_t capacity = 2 * size_t(k) + kBlock;
  int32_t threshold = Logits::kNegInf - 1;  // accept everything until the first compaction
  auto compact = [&]() {
    std::nth_element(buffer.begin(), buffer.begin() + (k - 1), buffer.end(), std::greater<int32_t>());
    buffer.resize(k);
    threshold = buffer[k - 1];  // nth_element leaves every kept key >= this one
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
  std::nth_element(buffer.begin(), buffer.begin() + (k - 1), buffer.end(), std::greater<int32_t>());
  return buffer[k - 1];
}

// Keys >= threshold, in row order; false (and a partial list) past `limit`.
template <class Logits>
bool gatherKeysAtLeast(const ScannedRow<Logits>& row, int32_t threshold, size_t limit, std::vector<int32_t>& out) {
  out.clear();
  for (uint32_t b = 0; b < row.blocks; ++b) {
    if (row.blockMax[b] < threshold) continue;
    const uint32_t first = b * kBlock, len = row.blockLength(b);
    for (uint32_t i = first; i < first + len; ++i) {
      int32_t key = row.key(i);
      if (key >= threshold) out.push_back(key);
    }
    if (out.size() > limit) return false;
  }
  return true;
}

}  // namespace md
