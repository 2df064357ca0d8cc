// graph_binding.h: a model's forward graph recorded as kernel launches for
// JavaScript's dispatch tables (native/core/graph/table_recorder.h):
//   recordForward(config, tensors, options) -> { commands, headTensor? }
//   forwardBuffers(config, options) -> [{ name, bytes }]
#pragma once
#include <napi.h>

namespace md::addon {

Napi::Value RecordForward(const Napi::CallbackInfo& info);
Napi::Value ForwardBuffers(const Napi::CallbackInfo& info);

}  // namespace md::addon
