// sample_binding.cpp: sampleRow, the CPU sampler from JS.
//
// lib/ validates every option before calling; the checks here only keep
// the process alive if something else calls the addon directly.
#include <algorithm>
#include <cmath>

#include "addon.h"
#include "sampling_slots.h"

namespace md::addon {
namespace {

[[noreturn]] void throwType(Napi::Env env, const char* message) {
  throw Napi::TypeError::New(env, message);
}

template <class T>
Napi::TypedArrayOf<T> typedArrayArg(const Napi::CallbackInfo& info, size_t i, napi_typedarray_type type,
                                    const char* message) {
  if (!info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != type)
    throwType(info.Env(), message);
  return info[i].As<Napi::TypedArrayOf<T>>();
}

// An integer slot's value, or a RangeError naming the slot (never a clamp).
uint32_t uint32Slot(Napi::Env env, const double* slots, unsigned slot, const char* name) {
  double x = slots[slot];
  if (!(x >= 0 && x <= 4294967295.0 && x == std::floor(x)))
    throw Napi::RangeError::New(env, std::string("sampleRow: ") + name + " must be an integer from 0 to 4294967295");
  return uint32_t(x);
}

}  // namespace

Napi::Value MetalDecodeAddon::SampleRow(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 5) throwType(env, "sampleRow: expected 5 arguments");

  LogitsRow row{};
  if (info[0].IsTypedArray() && info[0].As<Napi::TypedArray>().TypedArrayType() == napi_float32_array) {
    auto a = info[0].As<Napi::Float32Array>();
    row = {a.Data(), LogitsFormat::Float32, uint32_t(a.ElementLength())};
  } else if (info[0].IsTypedArray() && info[0].As<Napi::TypedArray>().TypedArrayType() == napi_uint16_array) {
    auto a = info[0].As<Napi::Uint16Array>();
    row = {a.Data(), LogitsFormat::Float16, uint32_t(a.ElementLength())};
  } else {
    throwType(env, "sampleRow: logits must be a Float32Array or a Uint16Array of float16 bits");
  }
  auto slots = typedArrayArg<double>(info, 1, napi_float64_array, "sampleRow: slots must be a Float64Array");
  auto history = typedArrayArg<uint32_t>(info, 2, napi_uint32_array, "sampleRow: history must be a Uint32Array");
  auto biasTokens = typedArrayArg<uint32_t>(info, 3, napi_uint32_array, "sampleRow: biasTokens must be a Uint32Array");
  auto biasValues = typedArrayArg<float>(info, 4, napi_float32_array, "sampleRow: biasValues must be a Float32Array");
  if (slots.ElementLength() != kSamplingSlotCount) throwType(env, "sampleRow: slots has the wrong length");
  if (biasTokens.ElementLength() != biasValues.ElementLength())
    throwType(env, "sampleRow: biasTokens and biasValues differ in length");

  const double* s = slots.Data();
  SamplingInputs in{};
  md_sampling_params& p = in.params;
  p.temperature = float(s[kSlot_temperature]);
  p.top_k = uint32Slot(env, s, kSlot_topK, "topK");
  p.top_p = float(s[kSlot_topP]);
  p.min_p = float(s[kSlot_minP]);
  p.seed = uint32Slot(env, s, kSlot_seed, "seed");
  p.position = uint32Slot(env, s, kSlot_position, "position");
  p.flags = s[kSlot_unitFilterTemperature] != 0 ? MD_FLAG_UNIT_FILTER_TEMPERATURE : 0;
  p.repeat_penalty = float(s[kSlot_repeatPenalty]);
  p.frequency_penalty = float(s[kSlot_frequencyPenalty]);
  p.presence_penalty = float(s[kSlot_presencePenalty]);
  p.vocab_size = row.size;

  // The penalty window: the last `lastTokens` tokens of the history.
  p.history_window = uint32Slot(env, s, kSlot_lastTokens, "lastTokens");
  size_t window = std::min<size_t>(history.ElementLength(), p.history_window);
  p.history_count = uint32_t(window);
  in.history = history.Data() + (history.ElementLength() - window);
  p.bias_count = uint32_t(biasTokens.ElementLength());
  in.biasTokens = biasTokens.Data();
  in.biasValues = biasValues.Data();

  if (const char* problem = checkSamplingInputs(row, in)) throw Napi::RangeError::New(env, problem);
  try {
    return Napi::Number::New(env, sampler_.sample(row, in));
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, std::string("sampleRow: ") + e.what());
  }
}

}  // namespace md::addon
