// sampling_arguments.h: the JS arguments of one sampling step
// (logits, slots, history, biasTokens, biasValues, mask), checked and unpacked.
// Shared by sampleRow (CPU) and the device methods (GPU).
#pragma once
#include <napi.h>

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

}  // namespace md::addon
