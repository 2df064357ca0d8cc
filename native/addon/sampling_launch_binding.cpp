// sampling_launch_binding.cpp
#include "sampling_launch_binding.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "../core/sampling_launches.h"
#include "model_arguments.h"

namespace md::addon {
namespace {

[[noreturn]] void rangeError(Napi::Env env, const std::string& message) {
  throw Napi::RangeError::New(env, "samplingLaunches: " + message);
}

std::string oneOf(Napi::Object o, const char* name, const char* a, const char* b) {
  Napi::Value v = o.Get(name);
  const std::string s = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  if (s != a && s != b) rangeError(o.Env(), std::string("options.") + name + " must be '" + a + "' or '" + b + "'");
  return s;
}

const char* roleName(LaunchRole r) {
  switch (r) {
    case LaunchRole::Step: return "step";
    case LaunchRole::Pick: return "pick";
    case LaunchRole::None: break;
  }
  return "none";
}

}  // namespace

Napi::Value SamplingLaunches(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 1 || !info[0].IsObject())
    throw Napi::TypeError::New(env, "samplingLaunches: expected (options)");
  Napi::Object o = info[0].As<Napi::Object>();
  SamplingPlan plan;
  plan.vocab = uint32Option(o, "samplingLaunches", "vocab", 1);
  plan.rows = uint32Option(o, "samplingLaunches", "rows", 1, 1);
  plan.half = oneOf(o, "logits", "f16", "f32") == "f16";
  plan.sample = oneOf(o, "pick", "argmax", "sample") == "sample";
  plan.wide = o.Get("wide").ToBoolean().Value();
  if (plan.sample) {
    Napi::Value params = o.Get("params");
    if (!params.IsTypedArray() || params.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array ||
        params.As<Napi::Uint8Array>().ByteLength() != sizeof(md_sampling_params))
      rangeError(env, "options.params must be the " + std::to_string(sizeof(md_sampling_params)) +
                          " bytes of md_sampling_params for the sampling kernels");
    md_sampling_params p;
    std::memcpy(&p, params.As<Napi::Uint8Array>().Data(), sizeof p);
    const SamplingWork work = samplingWork(p, true);  // a chain's history count grows step by step
    plan.edits = work.edits;
    plan.histogram = work.histogram;
    plan.masked = work.masked;
  }
  std::vector<SamplingLaunch> launches;
  try {
    launches = samplingLaunches(plan);
  } catch (const std::invalid_argument& e) {
    rangeError(env, e.what());
  }
  Napi::Array result = Napi::Array::New(env, launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    const SamplingLaunch& l = launches[i];
    Napi::Object launch = Napi::Object::New(env);
    launch.Set("kernel", l.kernel);
    launch.Set("label", l.label);
    Napi::Array buffers = Napi::Array::New(env, l.buffers.size());
    for (size_t b = 0; b < l.buffers.size(); ++b) {
      Napi::Object binding = Napi::Object::New(env);
      binding.Set("index", l.buffers[b].first);
      binding.Set("buffer", samplingBufferName(l.buffers[b].second));
      buffers.Set(uint32_t(b), binding);
    }
    launch.Set("buffers", buffers);
    launch.Set("paramsIndex", l.paramsIndex);
    launch.Set("threadgroups", l.threadgroups);
    launch.Set("tokensPerThreadgroup", l.tokensPerThreadgroup);
    launch.Set("role", roleName(l.role));
    result.Set(uint32_t(i), launch);
  }
  return result;
}

}  // namespace md::addon
