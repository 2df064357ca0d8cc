// model_arguments.cpp
#include "model_arguments.h"

#include <cmath>
#include <string>

namespace md::addon {
namespace {

[[noreturn]] void typeError(Napi::Env env, const std::string& message) { throw Napi::TypeError::New(env, message); }

double numberField(Napi::Object o, const char* where, const char* name) {
  Napi::Value v = o.Get(name);
  if (!v.IsNumber()) typeError(o.Env(), std::string(where) + "." + name + ": expected a number");
  return v.As<Napi::Number>().DoubleValue();
}

uint64_t integerField(Napi::Object o, const char* where, const char* name, double max) {
  const double x = numberField(o, where, name);
  if (!(x >= 0 && x <= max && x == std::floor(x)))
    throw Napi::RangeError::New(o.Env(), std::string(where) + "." + name + ": expected an integer from 0 to " +
                                             std::to_string(uint64_t(max)) + ", got " + std::to_string(x));
  return uint64_t(x);
}

bool boolField(Napi::Object o, const char* where, const char* name) {
  Napi::Value v = o.Get(name);
  if (!v.IsBoolean()) typeError(o.Env(), std::string(where) + "." + name + ": expected a boolean");
  return v.As<Napi::Boolean>().Value();
}

}  // namespace

ModelConfig parseConfig(Napi::Value value) {
  if (!value.IsObject()) typeError(value.Env(), "Transformer: config must be an object");
  Napi::Object o = value.As<Napi::Object>();
  const double u32 = 4294967295.0;
  ModelConfig c;
  c.vocabSize = uint32_t(integerField(o, "config", "vocabSize", u32));
  c.embeddingLength = uint32_t(integerField(o, "config", "embeddingLength", u32));
  c.blockCount = uint32_t(integerField(o, "config", "blockCount", u32));
  c.headCount = uint32_t(integerField(o, "config", "headCount", u32));
  c.headCountKv = uint32_t(integerField(o, "config", "headCountKv", u32));
  c.headDim = uint32_t(integerField(o, "config", "headDim", u32));
  c.ffnLength = uint32_t(integerField(o, "config", "ffnLength", u32));
  c.ropeDims = uint32_t(integerField(o, "config", "ropeDims", u32));
  c.ropeMode = RopeMode(uint32_t(integerField(o, "config", "ropeMode", u32)));
  c.ropeBase = float(numberField(o, "config", "ropeBase"));
  c.ropeFreqScale = float(numberField(o, "config", "ropeFreqScale"));
  c.normEps = float(numberField(o, "config", "normEps"));
  c.qkvBias = boolField(o, "config", "qkvBias");
  c.qkNorm = boolField(o, "config", "qkNorm");
  c.graph = GraphFamily(uint32_t(integerField(o, "config", "graph", u32)));
  c.ffnActivation = FfnActivation(uint32_t(integerField(o, "config", "ffnActivation", u32)));
  c.embeddingScale = float(numberField(o, "config", "embeddingScale"));
  c.attentionScale = float(numberField(o, "config", "attentionScale"));
  c.slidingWindow = uint32_t(integerField(o, "config", "slidingWindow", u32));
  c.slidingWindowPattern = uint32_t(integerField(o, "config", "slidingWindowPattern", u32));
  c.ropeBaseLocal = float(numberField(o, "config", "ropeBaseLocal"));
  c.ropeOriginalContext = uint32_t(integerField(o, "config", "ropeOriginalContext", u32));
  c.ropeAttnFactor = float(numberField(o, "config", "ropeAttnFactor"));
  c.expertCount = uint32_t(integerField(o, "config", "expertCount", u32));
  c.expertUsedCount = uint32_t(integerField(o, "config", "expertUsedCount", u32));
  c.expertFfnLength = uint32_t(integerField(o, "config", "expertFfnLength", u32));
  return c;
}

std::vector<TensorEntry> parseTensors(Napi::Value value) {
  Napi::Env env = value.Env();
  if (!value.IsArray()) typeError(env, "Transformer: tensors must be an array");
  Napi::Array array = value.As<Napi::Array>();
  std::vector<TensorEntry> entries(array.Length());
  for (uint32_t i = 0; i < array.Length(); ++i) {
    const std::string where = "tensors[" + std::to_string(i) + "]";
    Napi::Value item = array.Get(i);
    if (!item.IsObject()) typeError(env, where + ": expected an object");
    Napi::Object o = item.As<Napi::Object>();
    Napi::Value name = o.Get("name"), dims = o.Get("dims");
    if (!name.IsString()) typeError(env, where + ".name: expected a string");
    if (!dims.IsArray()) typeError(env, where + ".dims: expected an array");
    TensorEntry& e = entries[i];
    e.name = name.As<Napi::String>().Utf8Value();
    e.type = uint32_t(integerField(o, where.c_str(), "type", 4294967295.0));
    e.offset = integerField(o, where.c_str(), "offset", 9007199254740991.0);
    Napi::Array d = dims.As<Napi::Array>();
    for (uint32_t j = 0; j < d.Length(); ++j) {
      Napi::Value v = d.Get(j);
      const double x = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
      if (!(x >= 1 && x <= 9007199254740991.0 && x == std::floor(x)))
        throw Napi::RangeError::New(env, where + ".dims[" + std::to_string(j) + "]: expected a positive integer");
      e.dims.push_back(uint64_t(x));
    }
  }
  return entries;
}

uint32_t uint32Option(Napi::Object options, const char* method, const char* name, uint32_t min,
                      std::optional<uint32_t> fallback) {
  Napi::Value v = options.Get(name);
  if (v.IsUndefined() && fallback) return *fallback;
  const double x = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
  if (!(x >= min && x <= 4294967295.0 && x == std::floor(x)))
    throw Napi::RangeError::New(options.Env(), std::string(method) + ": options." + name + " must be an integer from " +
                                                   std::to_string(min) + " to 4294967295");
  return uint32_t(x);
}

}  // namespace md::addon
