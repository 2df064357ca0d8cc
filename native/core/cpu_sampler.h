// cpu_sampler.h: docs/sampling.md on the CPU, for float16 and float32 rows.
//
// The reference every other backend is measured against, and fast by design:
// every stage is a streaming pass over the row (vectorisable, no full sort),
// thresholds are selected on the logits' integer keys, and noise is computed
// only for tokens that could still win.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "../../metal/md_sampling.h"
#include "row_passes.h"

namespace md {

enum class LogitsFormat { Float16, Float32 };

struct LogitsRow {
  const void* data;  // uint16_t float16 bits, or float
  LogitsFormat format;
  uint32_t size;  // V
};

// One sampling step. params.vocab_size must equal the row's size;
// params.history_count and params.bias_count give the arrays' lengths.
struct SamplingInputs {
  md_sampling_params params;
  const uint32_t* history;     // the penalty window, oldest first
  const uint32_t* biasTokens;  // token ids (a repeated id keeps its first bias)
  const float* biasValues;     // finite or -inf
  // With MD_FLAG_TOKEN_MASK in params.flags: md_mask_words(vocab_size)
  // words per row, the tokens allowed (a grammar's); the others are -inf
  // before anything else. nullptr otherwise.
  const uint32_t* mask = nullptr;
};

// Parameters with every option off: greedy, no filters, no penalties.
inline md_sampling_params greedySamplingParams(uint32_t vocab) {
  md_sampling_params p{};
  p.top_p = 1.0f;
  p.repeat_penalty = 1.0f;
  p.vocab_size = vocab;
  return p;
}

// Why a SamplingInputs cannot be sampled, or nullptr when it can. Messages
// name the field; callers surface them as RangeError.
const char* checkSamplingInputs(const LogitsRow& row, const SamplingInputs& in);

// Reusable scratch for the sampler: one per thread of use.
struct SamplerScratch {
  std::vector<uint8_t> editedRow;                  // the row with bias and penalties applied
  RowMaxima maxima;                                // largest keys of the row's blocks and lanes
  std::vector<int32_t> keys;                       // top-k buffer, top-p candidates
  std::vector<uint32_t> counts;                    // top-p histogram
  std::vector<uint32_t> rawCounts;                 // top-p over a whole float16 row: counts by bit pattern
  std::vector<double> mass;                        // top-p histogram
  std::vector<std::pair<int32_t, double>> levels;  // top-p: (value, mass) from the top
  std::vector<uint32_t> window;                    // penalty window, sorted
};

class CpuSampler {
 public:
  // The sampled token, or MD_NO_TOKEN when every logit is -inf (step 3).
  // The inputs must have passed checkSamplingInputs.
  uint32_t sample(const LogitsRow& row, const SamplingInputs& in);

 private:
  SamplerScratch scratch_;
};

}  // namespace md
