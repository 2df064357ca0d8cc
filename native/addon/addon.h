// addon.h: the metal-decode Node addon. Per-addon state lives here (not in
// globals), so the addon can be loaded by several worker threads at once.
#pragma once
#include <napi.h>

#include "../core/cpu_sampler.h"

namespace md::addon {

class MetalDecodeAddon : public Napi::Addon<MetalDecodeAddon> {
 public:
  MetalDecodeAddon(Napi::Env env, Napi::Object exports);

 private:
  // sampleRow(logits, slots, history, biasTokens, biasValues) -> token id,
  // or 0xFFFFFFFF when every logit is -inf. See lib/native/contract.ts.
  Napi::Value SampleRow(const Napi::CallbackInfo& info);

  CpuSampler sampler_;
};

}  // namespace md::addon
