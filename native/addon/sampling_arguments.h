// sampling_arguments.h: the JS arguments of one sampling step
// (logits, slots, history, biasTokens, biasValues, mask), checked and unpacked.
// Shared by sampleRow (CPU) and the device methods (GPU).
#pragma once
#include <napi.h>

#include "../core/cpu_sampler.h"
#include "../core/transformer/head_pick.h"

namespace md::addon {

// Views into the JS arrays: valid during the call only.
struct SamplingArguments {
  LogitsRow row{};
  SamplingInputs inputs{};
};

// Throws a JS TypeError or RangeError naming the argument (never aborts).
// `method` prefixes the messages. The inputs pass checkSamplingInputs.
SamplingArguments parseSamplingArguments(const Napi::CallbackInfo& info, const char* method);

// evaluateAndPick's options: slots, biasTokens and biasValues at
// info[first], info[first + 1], info[first + 2], checked as
// parseSamplingArguments checks them, for a vocabulary of `vocab`. A filter
// or a penalty that is on is a RangeError naming it: the fused LM head has
// neither.
HeadPick parseHeadPick(const Napi::CallbackInfo& info, size_t first, uint32_t vocab, const char* method);
// The same from three values (slots, biasTokens, biasValues): one row's pick of a batch.
HeadPick parseHeadPick(Napi::Env env, Napi::Value slots, Napi::Value biasTokens, Napi::Value biasValues, uint32_t vocab,
                       const char* method);

}  // namespace md::addon
