// addon.cpp: module registration and the exported constants.
#include "addon.h"

#include <dlfcn.h>

#include "../core/dispatch_table.h"
#include "../core/kernel_usage.h"
#include "md_transformer.h"
#include "buffer_binding.h"
#include "device_binding.h"
#include "device_open.h"
#include "graph_binding.h"
#include "sampling_launch_binding.h"
#include "sampling_slots.h"
#include "table_binding.h"
#include "transformer_binding.h"

namespace md::addon {
namespace {

// Patch rule names -> the numbers createTable takes (one definition: the
// enum in native/core/dispatch_table.h).
Napi::Object patchRules(Napi::Env env) {
  Napi::Object rules = Napi::Object::New(env);
  for (uint32_t r = 0; r <= uint32_t(PatchRule::SampledToken); ++r)
    rules.Set(patchRuleName(PatchRule(r)), Napi::Number::New(env, r));
  return rules;
}

// The byte layouts of the kernel parameter structs (metal/md_sampling.h)
// that TypeScript packs or patches.
Napi::Object layouts(Napi::Env env) {
  auto n = [&](size_t v) { return Napi::Number::New(env, double(v)); };
  Napi::Object sampling = Napi::Object::New(env);
  sampling.Set("size", n(sizeof(md_sampling_params)));
  sampling.Set("position", n(offsetof(md_sampling_params, position)));
  sampling.Set("historyCount", n(offsetof(md_sampling_params, history_count)));
  Napi::Object argmax = Napi::Object::New(env);
  argmax.Set("size", n(sizeof(md_argmax_params)));
  argmax.Set("vocabSize", n(offsetof(md_argmax_params, vocab_size)));
  argmax.Set("flags", n(offsetof(md_argmax_params, flags)));
  Napi::Object bigram = Napi::Object::New(env);
  bigram.Set("size", n(sizeof(md_bigram_params)));
  bigram.Set("vocabSize", n(offsetof(md_bigram_params, vocab_size)));
  bigram.Set("dim", n(offsetof(md_bigram_params, dim)));
  // The params the TypeScript side packs (metal/md_transformer.h), field by
  // field; the forward graph's own are filled by native/core/graph/table_recorder.cpp.
  auto layout = [&](size_t size, std::initializer_list<std::pair<const char*, size_t>> fields) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("size", n(size));
    for (auto& [name, offset] : fields) o.Set(name, n(offset));
    return o;
  };
  Napi::Object transformer = Napi::Object::New(env);
  transformer.Set("rows", layout(sizeof(md_rows_params), {{"n", offsetof(md_rows_params, n)},
                                                          {"rows", offsetof(md_rows_params, rows)},
                                                          {"eps", offsetof(md_rows_params, eps)},
                                                          {"broadcast", offsetof(md_rows_params, broadcast)}}));
  transformer.Set("headSampling", layout(sizeof(md_head_sampling_params),
                                         {{"rows", offsetof(md_head_sampling_params, rows)},
                                          {"cols", offsetof(md_head_sampling_params, cols)},
                                          {"flags", offsetof(md_head_sampling_params, flags)},
                                          {"temperature", offsetof(md_head_sampling_params, temperature)},
                                          {"seed", offsetof(md_head_sampling_params, seed)},
                                          {"position", offsetof(md_head_sampling_params, position)},
                                          {"linePhase", offsetof(md_head_sampling_params, line_phase)}}));
  Napi::Object headFlags = Napi::Object::New(env);
  headFlags.Set("half", n(MD_HEAD_HALF));
  headFlags.Set("bias", n(MD_HEAD_BIAS));
  transformer.Set("headFlags", headFlags);
  transformer.Set("headMaxTiles", n(MD_HEAD_MAX_TILES));
  transformer.Set("matvecRows", n(MD_MATVEC_ROWS));
  transformer.Set("matvecBatchRows", n(MD_MATVEC_BATCH_ROWS));
  transformer.Set("matvecCount", n(offsetof(md_matvec_params, count)));
  transformer.Set("attentionGroup", n(MD_ATTENTION_GROUP));
  transformer.Set("attentionBlock", n(MD_ATTENTION_BLOCK));
  transformer.Set("lineBytes", n(MD_LINE_BYTES));
  Napi::Object all = Napi::Object::New(env);
  all.Set("transformer", transformer);
  all.Set("samplingParams", sampling);
  all.Set("argmaxParams", argmax);
  all.Set("bigramParams", bigram);
  all.Set("biasEntry", n(sizeof(md_bias_entry)));
  all.Set("halfKeyBins", n(MD_HALF_KEY_BINS));
  Napi::Object wide = Napi::Object::New(env);
  wide.Set("partialBytes", n(sizeof(md_wide_partial)));
  wide.Set("stateBytes", n(sizeof(md_wide_state)));
  all.Set("wideSampling", wide);
  all.Set("maxInlineParams", n(kMaxInlineParams));
  all.Set("maxCommandBuffers", n(kMaxCommandBuffers));
  all.Set("maxBufferIndex", n(kMaxBufferIndex));
  all.Set("noField", n(kNoField));
  all.Set("maxPatchAhead", n(kMaxPatchAhead));
  all.Set("threadgroupMemoryAlignment", n(kThreadgroupMemoryAlignment));
  all.Set("maxThreadgroupMemory", n(kMaxThreadgroupMemory));
  all.Set("maxTemperature", Napi::Number::New(env, double(MD_MAX_TEMPERATURE)));
  return all;
}

// Node unloads an addon (dlclose) when the last worker thread that loaded
// it ends. Our own threads may still be running its code then: the
// emulator's queue finishing work, Metal calling a completion handler. So
// the library pins itself: loaded once, never unmapped.
// dispatchedKernels() -> "kind:kernel"[]: every kernel this process has
// dispatched, per device kind (kernel_usage.h), for the suite's coverage check.
Napi::Value DispatchedKernels(const Napi::CallbackInfo& info) {
  std::vector<std::string> pairs = dispatchedKernels();
  Napi::Array result = Napi::Array::New(info.Env(), pairs.size());
  for (uint32_t i = 0; i < pairs.size(); ++i) result.Set(i, pairs[i]);
  return result;
}

void pinThisLibrary() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&pinThisLibrary), &info) != 0 && info.dli_fname != nullptr)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

}  // namespace

MetalDecodeAddon::MetalDecodeAddon(Napi::Env env, Napi::Object exports) {
  pinThisLibrary();
  Napi::Object slots = Napi::Object::New(env);
#define MD_SLOT_EXPORT(name) slots.Set(#name, Napi::Number::New(env, kSlot_##name));
  MD_SAMPLING_SLOTS(MD_SLOT_EXPORT)
#undef MD_SLOT_EXPORT
  slots.Set("count", Napi::Number::New(env, kSamplingSlotCount));

  Napi::Function buffer = BufferHandle::define(env);
  Napi::Function table = TableHandle::define(env);
  bufferConstructor_ = Napi::Persistent(buffer);
  tableConstructor_ = Napi::Persistent(table);
  sequenceConstructor_ = Napi::Persistent(SequenceHandle::define(env));
  Napi::Function transformer = TransformerHandle::define(env);
  transformerConstructor_ = Napi::Persistent(transformer);
  Napi::Function deviceClass = DeviceHandle::define(env);
  deviceConstructor_ = Napi::Persistent(deviceClass);

  DefineAddon(
      exports,
      {
          InstanceMethod("sampleRow", &MetalDecodeAddon::SampleRow),
          InstanceMethod("bigramForward", &MetalDecodeAddon::BigramForward),
          InstanceMethod("packSamplingParams", &MetalDecodeAddon::PackSamplingParams),
          InstanceMethod("wideSamplingGroups", &MetalDecodeAddon::WideSamplingGroups),
          InstanceMethod("timeLlamaCppSampler", &MetalDecodeAddon::TimeLlamaCppSampler),
          InstanceValue("samplingSlots", slots, napi_enumerable),
          InstanceValue("noToken", Napi::Number::New(env, MD_NO_TOKEN), napi_enumerable),
          InstanceValue("tokenMaskFlag", Napi::Number::New(env, MD_FLAG_TOKEN_MASK), napi_enumerable),
          InstanceValue("patchRules", patchRules(env), napi_enumerable),
          InstanceValue("layouts", layouts(env), napi_enumerable),
          InstanceValue("Device", deviceClass, napi_enumerable),
          InstanceValue("openDevice", Napi::Function::New(env, OpenDevice, "openDevice"), napi_enumerable),
          InstanceValue("Transformer", transformer, napi_enumerable),
          InstanceValue("tensorTypes", tensorTypeTable(env), napi_enumerable),
          InstanceValue("recordForward", Napi::Function::New(env, RecordForward, "recordForward"), napi_enumerable),
          InstanceValue("forwardBuffers", Napi::Function::New(env, ForwardBuffers, "forwardBuffers"), napi_enumerable),
          InstanceValue("samplingLaunches", Napi::Function::New(env, SamplingLaunches, "samplingLaunches"),
                        napi_enumerable),
          InstanceValue("dispatchedKernels", Napi::Function::New(env, DispatchedKernels, "dispatchedKernels"),
                        napi_enumerable),
          InstanceValue("abiVersion", Napi::Number::New(env, 9), napi_enumerable),
      });
}

}  // namespace md::addon

using md::addon::MetalDecodeAddon;
NODE_API_ADDON(MetalDecodeAddon)
