// sampling_arguments.h: the JS arguments of one sampling step
// (logits, slots, history, biasTokens, biasValues), checked and unpacked.
// Shared by sampleRow (CPU) and the device methods (GPU).
#pragma once
#include <napi.h>

#include <vector>

#include "../core/cpu_sampler.h"

namespace md::addon {

// Views into the JS arrays: valid during the call only.
struct SamplingArguments {
  LogitsRow row{};
  SamplingInputs inputs{};
};

// Throws a JS TypeError or RangeError naming the argument (never aborts).
// `method` prefixes the messages. The inputs pass checkSamplingInputs.
SamplingArguments parseSamplingArguments(const Napi::CallbackInfo& info, const char* method);

// An owned copy, for work that outlives the call (asynchronous sampling).
struct OwnedSampling {
  std::vector<uint8_t> logits;
  LogitsFormat format;
  uint32_t vocab;
  md_sampling_params params;
  std::vector<uint32_t> history, biasTokens;
  std::vector<float> biasValues;

  explicit OwnedSampling(const SamplingArguments& a);
  LogitsRow row() const { return {logits.data(), format, vocab}; }
  SamplingInputs inputs() const { return {params, history.data(), biasTokens.data(), biasValues.data()}; }
};

}  // namespace md::addon
