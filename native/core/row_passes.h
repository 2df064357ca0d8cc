// row_passes.h: streaming passes over a row of logit bits.
//
// Rows are scanned in blocks of kBlock: a branch-free "does anything in this
// block pass?" test (which compilers vectorise) guards the rare scalar work.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "logit_keys.h"

namespace md {

constexpr uint32_t kBlock = 64;

template <class Logits>
int32_t maxKey(const typename Logits::Bits* row, uint32_t n) {
  typename Logits::Key m = typename Logits::Key(Logits::kNegInf);
  for (uint32_t i = 0; i < n; ++i) {
    typename Logits::Key k = Logits::key(row[i]);
    m = k > m ? k : m;
  }
  return m;
}

template <class Logits>
bool anyKeyAtLeast(const typename Logits::Bits* block, uint32_t len, int32_t threshold) {
  const typename Logits::Key t = typename Logits::Key(threshold);
  int any = 0;
  for (uint32_t j = 0; j < len; ++j) any |= Logits::key(block[j]) >= t;
  return any != 0;
}

// Thresholds handed to anyKeyAtLeast must fit the key type.
template <class Logits>
int32_t clampThreshold(int32_t t) {
  return std::min(std::max(t, Logits::kNegInf), Logits::kMaxFinite + 1);
}

// Lowest index whose key equals `key` (the row's max, so it exists).
template <class Logits>
uint32_t firstIndexOfKey(const typename Logits::Bits* row, uint32_t n, int32_t key) {
  for (uint32_t b = 0; b < n; b += kBlock) {
    uint32_t len = std::min(kBlock, n - b);
    if (!anyKeyAtLeast<Logits>(row + b, len, key)) continue;
    for (uint32_t j = 0; j < len; ++j)
      if (Logits::key(row[b + j]) == key) return b + j;
  }
  return n;
}

// The k-th largest key counted with multiplicity (top-k's tau_k), 0 < k < n.
// Keeps a buffer of at most 2k + kBlock candidates above a rising threshold;
// each compaction halves it, so the whole scan is O(n) even on sorted input.
template <class Logits>
int32_t kthLargestKey(const typename Logits::Bits* row, uint32_t n, uint32_t k,
                      std::vector<int32_t>& buffer) {
  buffer.clear();
  const size_t capacity = 2 * size_t(k) + kBlock;
  int32_t threshold = Logits::kNegInf - 1;  // accept everything until the first compaction
  auto compact = [&]() {
    std::nth_element(buffer.begin(), buffer.begin() + (k - 1), buffer.end(), std::greater<int32_t>());
    buffer.resize(k);
    threshold = buffer[k - 1];  // nth_element leaves every kept key >= this one
  };
  for (uint32_t b = 0; b < n; b += kBlock) {
    uint32_t len = std::min(kBlock, n - b);
    if (!anyKeyAtLeast<Logits>(row + b, len, threshold + 1)) continue;
    for (uint32_t j = 0; j < len; ++j) {
      int32_t key = Logits::key(row[b + j]);
      if (key > threshold) buffer.push_back(key);
    }
    if (buffer.size() >= capacity) compact();
  }
  std::nth_element(buffer.begin(), buffer.begin() + (k - 1), buffer.end(), std::greater<int32_t>());
  return buffer[k - 1];
}

// Keys >= threshold, in row order; false (and a partial list) past `limit`.
template <class Logits>
bool gatherKeysAtLeast(const typename Logits::Bits* row, uint32_t n, int32_t threshold,
                       size_t limit, std::vector<int32_t>& out) {
  out.clear();
  for (uint32_t b = 0; b < n; b += kBlock) {
    uint32_t len = std::min(kBlock, n - b);
    if (!anyKeyAtLeast<Logits>(row + b, len, threshold)) continue;
    for (uint32_t j = 0; j < len; ++j) {
      int32_t key = Logits::key(row[b + j]);
      if (key >= threshold) out.push_back(key);
    }
    if (out.size() > limit) return false;
  }
  return true;
}

}  // namespace md
