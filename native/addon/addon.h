// addon.h: the metal-decode Node addon. Per-addon state lives here (not in
// globals), so the addon can be loaded by several worker threads at once.
#pragma once
#include <napi.h>

#include "../core/cpu_sampler.h"

namespace md::addon {

class MetalDecodeAddon : public Napi::Addon<MetalDecodeAddon> {
 public:
  MetalDecodeAddon(Napi::Env env, Napi::Object exports);

  // The classes native code instantiates (device.createBuffer, createTable).
  Napi::FunctionReference& bufferConstructor() { return bufferConstructor_; }
  Napi::FunctionReference& tableConstructor() { return tableConstructor_; }
  Napi::FunctionReference& sequenceConstructor() { return sequenceConstructor_; }
  // The class device.mapFile recognises a model by (map once, from the model's own mapping).
  Napi::FunctionReference& transformerConstructor() { return transformerConstructor_; }
  // The Device class, which openDevice's promise resolves with.
  Napi::FunctionReference& deviceConstructor() { return deviceConstructor_; }

 private:
  // sampleRow(logits, slots, history, biasTokens, biasValues) -> token id,
  // or 0xFFFFFFFF when every logit is -inf. See lib/native/contract.ts.
  Napi::Value SampleRow(const Napi::CallbackInfo& info);
  // bigramForward(embedding, head, dim, token, logits): the CPU forward of
  // the bigram model (native/core/bigram_forward.h) into `logits`.
  Napi::Value BigramForward(const Napi::CallbackInfo& info);
  // packSamplingParams(logits, slots, history, biasTokens, biasValues) ->
  // { params, bias }: md_sampling_params and md_bias_entry bytes for a
  // sampling command of a dispatch table, checked as sampleRow checks them.
  Napi::Value PackSamplingParams(const Napi::CallbackInfo& info);
  // wideSamplingGroups(vocabSize) -> how many threadgroups the wide
  // sampling kernels' row passes get by default (md_wide_groups).
  Napi::Value WideSamplingGroups(const Napi::CallbackInfo& info);
  // timeLlamaCppSampler(libraryPath, rows, vocab, config, history,
  // iterations, warmup) -> Promise<{ microseconds, tokens }>: llama.cpp's
  // sampler chain on our rows (bench_binding.cpp), for the benchmark.
  Napi::Value TimeLlamaCppSampler(const Napi::CallbackInfo& info);

  CpuSampler sampler_;
  Napi::FunctionReference bufferConstructor_;
  Napi::FunctionReference tableConstructor_;
  Napi::FunctionReference sequenceConstructor_;
  Napi::FunctionReference transformerConstructor_;
  Napi::FunctionReference deviceConstructor_;
};

}  // namespace md::addon
