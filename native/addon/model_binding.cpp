// model_binding.cpp: the addon's pieces of the built-in bigram model: its
// CPU forward and the packing of a sampling command's parameters.
#include <cmath>
#include <cstring>
#include <string>

#include "../core/bigram_forward.h"
#include "addon.h"
#include "sampling_arguments.h"

namespace md::addon {

Napi::Value MetalDecodeAddon::BigramForward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto isHalves = [&](size_t i) {
    return info[i].IsTypedArray() && info[i].As<Napi::TypedArray>().TypedArrayType() == napi_uint16_array;
  };
  if (info.Length() != 5 || !isHalves(0) || !isHalves(1) || !info[2].IsNumber() || !info[3].IsNumber() || !isHalves(4))
    throw Napi::TypeError::New(env, "bigramForward: expected (embedding, head, dim, token, logits) with Uint16Arrays");
  auto embedding = info[0].As<Napi::Uint16Array>();
  auto head = info[1].As<Napi::Uint16Array>();
  auto logits = info[4].As<Napi::Uint16Array>();
  double dim = info[2].As<Napi::Number>().DoubleValue();
  double token = info[3].As<Napi::Number>().DoubleValue();
  if (!(dim >= 1 && dim <= UINT32_MAX && dim == std::floor(dim)))
    throw Napi::RangeError::New(env, "bigramForward: dim must be a positive integer");
  if (!(token >= 0 && token <= UINT32_MAX && token == std::floor(token)))
    throw Napi::RangeError::New(env, "bigramForward: token must be an integer from 0 to 4294967295");
  const size_t vocab = logits.ElementLength();
  if (vocab == 0 || vocab > UINT32_MAX || embedding.ElementLength() != vocab * size_t(dim) ||
      head.ElementLength() != embedding.ElementLength())
    throw Napi::RangeError::New(env, "bigramForward: embedding and head must both hold logits.length x dim halves");
  bigramForward({uint32_t(vocab), uint32_t(dim)}, embedding.Data(), head.Data(), uint32_t(token), logits.Data());
  return env.Undefined();
}

Napi::Value MetalDecodeAddon::PackSamplingParams(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SamplingArguments a = parseSamplingArguments(info, "packSamplingParams");
  const md_sampling_params& p = a.inputs.params;
  Napi::Uint8Array params = Napi::Uint8Array::New(env, sizeof p);
  std::memcpy(params.Data(), &p, sizeof p);
  Napi::Uint8Array bias = Napi::Uint8Array::New(env, size_t(p.bias_count) * sizeof(md_bias_entry));
  for (uint32_t i = 0; i < p.bias_count; ++i) {
    md_bias_entry entry{a.inputs.biasTokens[i], a.inputs.biasValues[i]};
    std::memcpy(bias.Data() + i * sizeof entry, &entry, sizeof entry);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("params", params);
  out.Set("bias", bias);
  return out;
}

Napi::Value MetalDecodeAddon::WideSamplingGroups(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const double vocab = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
  if (!(vocab >= 1 && vocab <= UINT32_MAX && vocab == double(uint64_t(vocab))))
    throw Napi::RangeError::New(env, "wideSamplingGroups: vocabSize must be an integer from 1 to 4294967295");
  return Napi::Number::New(env, md_wide_groups(uint32_t(vocab)));
}

}  // namespace md::addon
