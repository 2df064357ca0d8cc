// graph_binding.cpp
#include "graph_binding.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "../core/graph/forward_graph.h"
#include "../core/graph/table_recorder.h"
#include "model_arguments.h"

namespace md::addon {
namespace {

Napi::Object optionsArgument(const Napi::CallbackInfo& info, size_t i, const char* method) {
  if (info.Length() <= i || !info[i].IsObject())
    throw Napi::TypeError::New(info.Env(), std::string(method) + ": options must be an object");
  return info[i].As<Napi::Object>();
}

TensorType cacheTypeOption(Napi::Object o, const char* method) {
  const uint32_t id = uint32Option(o, method, "cacheType", 0);
  if (id != uint32_t(TensorType::F16) && id != uint32_t(TensorType::F32) && id != uint32_t(TensorType::Q8_0))
    throw Napi::RangeError::New(
        o.Env(),
        std::string(method) + ": options.cacheType must be the type id of F16, F32 or Q8_0, got " + std::to_string(id));
  return TensorType(id);
}

Napi::Object commandObject(Napi::Env env, const RecordedCommand& c) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("kernel", c.kernel);
  o.Set("label", c.label);
  Napi::Array buffers = Napi::Array::New(env, c.buffers.size());
  for (size_t i = 0; i < c.buffers.size(); ++i) {
    Napi::Object b = Napi::Object::New(env);
    b.Set("index", c.buffers[i].index);
    b.Set("buffer", c.buffers[i].buffer);
    b.Set("offset", double(c.buffers[i].offset));
    buffers.Set(uint32_t(i), b);
  }
  o.Set("buffers", buffers);
  Napi::Object params = Napi::Object::New(env);
  params.Set("index", c.paramsIndex);
  Napi::ArrayBuffer bytes = Napi::ArrayBuffer::New(env, c.params.size());
  std::memcpy(bytes.Data(), c.params.data(), c.params.size());
  params.Set("bytes", Napi::Uint8Array::New(env, c.params.size(), bytes, 0));
  o.Set("params", params);
  o.Set("threadgroups", c.threadgroups);
  o.Set("threadsPerThreadgroup", c.threadsPerThreadgroup);
  Napi::Array phases = Napi::Array::New(env, c.linePhases.size());
  for (size_t i = 0; i < c.linePhases.size(); ++i) {
    Napi::Object phase = Napi::Object::New(env);
    phase.Set("paramsByte", c.linePhases[i].first);
    phase.Set("buffer", c.linePhases[i].second);
    phases.Set(uint32_t(i), phase);
  }
  o.Set("linePhases", phases);
  if (c.sequenceRow >= 0) o.Set("sequenceRow", c.sequenceRow);
  if (!c.patchRule.empty()) {
    Napi::Object patch = Napi::Object::New(env);
    patch.Set("rule", c.patchRule);
    if (c.patchRule == "tokenOffset") {
      patch.Set("buffer", c.patchBuffer);
    } else {
      Napi::Array fields = Napi::Array::New(env, c.patchFields.size());
      for (size_t i = 0; i < c.patchFields.size(); ++i) fields.Set(uint32_t(i), c.patchFields[i]);
      patch.Set("fields", fields);
    }
    o.Set("patch", patch);
  }
  return o;
}

}  // namespace

Napi::Value RecordForward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 3) throw Napi::TypeError::New(env, "recordForward: expected (config, tensors, options)");
  const ModelConfig config = parseConfig(info[0]);
  const std::vector<TensorEntry> tensors = parseTensors(info[1]);
  Napi::Object o = optionsArgument(info, 2, "recordForward");
  RecordOptions options;
  options.count = uint32Option(o, "recordForward", "count", 1);
  const std::string logits = o.Get("logits").IsString() ? o.Get("logits").As<Napi::String>().Utf8Value() : "";
  if (logits == "none")
    options.logits = LogitRows::None;
  else if (logits == "last")
    options.logits = LogitRows::Last;
  else if (logits == "every")
    options.logits = LogitRows::Every;
  else
    throw Napi::RangeError::New(env, "recordForward: options.logits must be 'none', 'last' or 'every'");
  options.headPick = o.Get("headPick").ToBoolean().Value();
  options.sequenceRows = o.Get("sequenceRows").ToBoolean().Value();
  options.contextSize = uint32Option(o, "recordForward", "contextSize", 1);
  options.attentionSplits = uint32Option(o, "recordForward", "attentionSplits", 1);
  options.cacheType = cacheTypeOption(o, "recordForward");
  RecordedForward recorded;
  try {
    recorded = recordForward(buildForwardGraph(config, tensors), config, options);
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, std::string("recordForward: ") + e.what());
  }
  Napi::Object result = Napi::Object::New(env);
  Napi::Array commands = Napi::Array::New(env, recorded.commands.size());
  for (size_t i = 0; i < recorded.commands.size(); ++i)
    commands.Set(uint32_t(i), commandObject(env, recorded.commands[i]));
  result.Set("commands", commands);
  if (!recorded.headTensor.empty()) result.Set("headTensor", recorded.headTensor);
  return result;
}

Napi::Value ForwardBuffers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 2) throw Napi::TypeError::New(env, "forwardBuffers: expected (config, options)");
  const ModelConfig config = parseConfig(info[0]);
  Napi::Object o = optionsArgument(info, 1, "forwardBuffers");
  const auto buffers = forwardBuffers(
      config, uint32Option(o, "forwardBuffers", "maxBatch", 1), uint32Option(o, "forwardBuffers", "contextSize", 1),
      uint32Option(o, "forwardBuffers", "attentionSplits", 1), cacheTypeOption(o, "forwardBuffers"));
  Napi::Array result = Napi::Array::New(env, buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    Napi::Object b = Napi::Object::New(env);
    b.Set("name", buffers[i].first);
    b.Set("bytes", double(buffers[i].second));
    result.Set(uint32_t(i), b);
  }
  return result;
}

}  // namespace md::addon
