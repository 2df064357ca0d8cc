// logit_edits.h: docs/sampling.md steps 1-2 (token bias, penalties).
//
// Both touch only a handful of tokens, so they are computed as a short list
// of (token, new bits) edits instead of a pass over the row; the sampler
// then applies them to a copy of the row.
#pragma once
#include <algorithm>
#include <vector>

#include "cpu_sampler.h"
#include "logit_keys.h"

namespace md {

template <class Logits>
struct LogitEdit {
  uint32_t token;
  typename Logits::Bits bits;
};

// A float32 result rounded back into the row's type and sanitised again
// (a bias can overflow to +inf; -inf - -inf is NaN).
template <class Logits>
typename Logits::Bits roundLogit(float value) {
  return Logits::bitsOfKey(Logits::key(Logits::fromFloat(value)));
}

template <class Logits>
void computeLogitEdits(const typename Logits::Bits* row, const SamplingInputs& in, SamplerScratch& scratch,
                       std::vector<LogitEdit<Logits>>& edits) {
  const md_sampling_params& p = in.params;
  const uint32_t vocab = p.vocab_size;
  edits.clear();

  for (uint32_t i = 0; i < p.bias_count; ++i) {
    uint32_t token = in.biasTokens[i];
    if (token >= vocab) continue;
    float z = sanitisedValue<Logits>(row[token]);
    edits.push_back({token, roundLogit<Logits>(z + in.biasValues[i])});
  }
  // A token listed twice keeps its first bias (a JS Map cannot list it twice).
  std::stable_sort(edits.begin(), edits.end(), [](auto& a, auto& b) { return a.token < b.token; });
  edits.erase(std::unique(edits.begin(), edits.end(), [](auto& a, auto& b) { return a.token == b.token; }),
              edits.end());
  const size_t biasEdits = edits.size();

  if (!md_penalties_on(p.repeat_penalty, p.frequency_penalty, p.presence_penalty) || p.history_count == 0 ||
      p.history_window == 0)
    return;

  // Distinct in-vocabulary tokens of the window with their counts.
  // The last min(history_window, history_count) tokens.
  const uint32_t first = p.history_count > p.history_window ? p.history_count - p.history_window : 0;
  std::vector<uint32_t>& window = scratch.window;
  window.clear();
  for (uint32_t i = first; i < p.history_count; ++i)
    if (in.history[i] < vocab) window.push_back(in.history[i]);
  std::sort(window.begin(), window.end());

  for (size_t i = 0; i < window.size();) {
    uint32_t token = window[i];
    size_t end = i;
    while (end < window.size() && window[end] == token) ++end;
    float count = float(end - i);
    i = end;

    auto biased = std::lower_bound(edits.begin(), edits.begin() + biasEdits, token,
                                   [](auto& e, uint32_t t) { return e.token < t; });
    bool wasBiased = biased != edits.begin() + biasEdits && biased->token == token;
    float z = sanitisedValue<Logits>(wasBiased ? biased->bits : row[token]);
    float r = p.repeat_penalty;
    float y = r == 1.0f ? z : (z > 0.0f ? z / r : z * r);
    float offset = count * p.frequency_penalty + p.presence_penalty;
    typename Logits::Bits bits = roundLogit<Logits>(y - offset);
    if (wasBiased)
      biased->bits = bits;
    else
      edits.push_back({token, bits});
  }
}

}  // namespace md
