// sampling_arguments.cpp: unpacking and checking one sampling step's
// arguments. lib/ validates every option before calling; these checks keep
// the process alive when something else calls the addon directly.
#include "sampling_arguments.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "sampling_slots.h"

namespace md::addon {
namespace {

[[noreturn]] void throwType(Napi::Env env, const char* method, const char* message) {
  throw Napi::TypeError::New(env, std::string(method) + ": " + message);
}

template <class T>
Napi::TypedArrayOf<T> typedArrayOf(Napi::Env env, Napi::Value value, napi_typedarray_type type, const char* method,
                                   const char* message) {
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != type) throwType(env, method, message);
  return value.As<Napi::TypedArrayOf<T>>();
}

template <class T>
Napi::TypedArrayOf<T> typedArrayArg(const Napi::CallbackInfo& info, size_t i, napi_typedarray_type type,
                                    const char* method, const char* message) {
  return typedArrayOf<T>(info.Env(), info[i], type, method, message);
}

// An integer slot's value, or a RangeError naming the slot (never a clamp).
uint32_t uint32Slot(Napi::Env env, const char* method, const double* slots, unsigned slot, const char* name) {
  double x = slots[slot];
  if (!(x >= 0 && x <= 4294967295.0 && x == std::floor(x)))
    throw Napi::RangeError::New(env, std::string(method) + ": " + name + " must be an integer from 0 to 4294967295");
  return uint32_t(x);
}

// The scalar options of `slots`, integers checked (the window's length is the caller's).
md_sampling_params paramsOfSlots(Napi::Env env, const char* method, const double* s) {
  md_sampling_params p{};
  p.temperature = float(s[kSlot_temperature]);
  p.top_k = uint32Slot(env, method, s, kSlot_topK, "topK");
  p.top_p = float(s[kSlot_topP]);
  p.min_p = float(s[kSlot_minP]);
  p.seed = uint32Slot(env, method, s, kSlot_seed, "seed");
  p.position = uint32Slot(env, method, s, kSlot_position, "position");
  p.flags = s[kSlot_unitFilterTemperature] != 0 ? MD_FLAG_UNIT_FILTER_TEMPERATURE : 0;
  p.repeat_penalty = float(s[kSlot_repeatPenalty]);
  p.frequency_penalty = float(s[kSlot_frequencyPenalty]);
  p.presence_penalty = float(s[kSlot_presencePenalty]);
  p.history_window = uint32Slot(env, method, s, kSlot_lastTokens, "lastTokens");
  return p;
}

}  // namespace

SamplingArguments parseSamplingArguments(const Napi::CallbackInfo& info, const char* method) {
  Napi::Env env = info.Env();
  if (info.Length() != 6) throwType(env, method, "expected 6 arguments");

  SamplingArguments a;
  LogitsRow& row = a.row;
  if (info[0].IsTypedArray() && info[0].As<Napi::TypedArray>().TypedArrayType() == napi_float32_array) {
    auto v = info[0].As<Napi::Float32Array>();
    row = {v.Data(), LogitsFormat::Float32, uint32_t(v.ElementLength())};
  } else if (info[0].IsTypedArray() && info[0].As<Napi::TypedArray>().TypedArrayType() == napi_uint16_array) {
    auto v = info[0].As<Napi::Uint16Array>();
    row = {v.Data(), LogitsFormat::Float16, uint32_t(v.ElementLength())};
  } else {
    throwType(env, method, "logits must be a Float32Array or a Uint16Array of float16 bits");
  }
  auto slots = typedArrayArg<double>(info, 1, napi_float64_array, method, "slots must be a Float64Array");
  auto history = typedArrayArg<uint32_t>(info, 2, napi_uint32_array, method, "history must be a Uint32Array");
  auto biasTokens = typedArrayArg<uint32_t>(info, 3, napi_uint32_array, method, "biasTokens must be a Uint32Array");
  auto biasValues = typedArrayArg<float>(info, 4, napi_float32_array, method, "biasValues must be a Float32Array");
  auto mask = typedArrayArg<uint32_t>(info, 5, napi_uint32_array, method, "mask must be a Uint32Array");
  if (slots.ElementLength() != kSamplingSlotCount) throwType(env, method, "slots has the wrong length");
  if (biasTokens.ElementLength() != biasValues.ElementLength())
    throwType(env, method, "biasTokens and biasValues differ in length");

  SamplingInputs& in = a.inputs;
  md_sampling_params& p = in.params;
  p = paramsOfSlots(env, method, slots.Data());
  p.vocab_size = row.size;

  // The penalty window: the last `lastTokens` tokens of the history.
  size_t window = std::min<size_t>(history.ElementLength(), p.history_window);
  p.history_count = uint32_t(window);
  in.history = history.Data() + (history.ElementLength() - window);
  p.bias_count = uint32_t(biasTokens.ElementLength());
  in.biasTokens = biasTokens.Data();
  in.biasValues = biasValues.Data();
  // The allowed tokens: none given (every token), or one bit per token.
  if (mask.ElementLength() > 0) {
    if (mask.ElementLength() != md_mask_words(row.size))
      throw Napi::RangeError::New(env, std::string(method) + ": mask must hold ceil(logits.length / 32) = " +
                                           std::to_string(md_mask_words(row.size)) + " words");
    p.flags |= MD_FLAG_TOKEN_MASK;
    in.mask = mask.Data();
  }

  if (const char* problem = checkSamplingInputs(row, in))
    throw Napi::RangeError::New(env, std::string(method) + ": " + problem);
  return a;
}

HeadPick parseHeadPick(const Napi::CallbackInfo& info, size_t first, uint32_t vocab, const char* method) {
  return parseHeadPick(info.Env(), info[first], info[first + 1], info[first + 2], vocab, method);
}

HeadPick parseHeadPick(Napi::Env env, Napi::Value slotsValue, Napi::Value biasTokensValue, Napi::Value biasValuesValue,
                       uint32_t vocab, const char* method) {
  auto slots = typedArrayOf<double>(env, slotsValue, napi_float64_array, method, "slots must be a Float64Array");
  auto biasTokens =
      typedArrayOf<uint32_t>(env, biasTokensValue, napi_uint32_array, method, "biasTokens must be a Uint32Array");
  auto biasValues =
      typedArrayOf<float>(env, biasValuesValue, napi_float32_array, method, "biasValues must be a Float32Array");
  if (slots.ElementLength() != kSamplingSlotCount) throwType(env, method, "slots has the wrong length");
  if (biasTokens.ElementLength() != biasValues.ElementLength())
    throwType(env, method, "biasTokens and biasValues differ in length");
  SamplingInputs in{};
  in.params = paramsOfSlots(env, method, slots.Data());
  in.params.vocab_size = vocab;
  in.params.bias_count = uint32_t(biasTokens.ElementLength());
  in.biasTokens = biasTokens.Data();
  in.biasValues = biasValues.Data();
  const float unread = 0.0f;  // the checks read the options only
  if (const char* problem = checkSamplingInputs(LogitsRow{&unread, LogitsFormat::Float32, vocab}, in))
    throw Napi::RangeError::New(env, std::string(method) + ": " + problem);
  // What the fused head does not do: it reads each logit once, as it is computed.
  const md_sampling_params& p = in.params;
  auto refuse = [&](const char* what) {
    throw Napi::RangeError::New(
        env, std::string(method) + ": " + what + " (the fused LM head samples with temperature and bias only)");
  };
  if (p.temperature > 0 && p.top_k > 0 && p.top_k < vocab) refuse("topK is on");
  if (p.temperature > 0 && p.top_p < 1.0f) refuse("topP is on");
  if (p.temperature > 0 && p.min_p > 0.0f) refuse("minP is on");
  if (p.history_window > 0 && md_penalties_on(p.repeat_penalty, p.frequency_penalty, p.presence_penalty))
    refuse("repeatPenalty is on");
  HeadPick pick;
  pick.temperature = p.temperature;
  pick.seed = p.seed;
  pick.position = p.position;
  pick.bias = headPickBias(in.biasTokens, in.biasValues, in.params.bias_count, vocab);
  return pick;
}

}  // namespace md::addon
