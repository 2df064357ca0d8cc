// sample_binding.cpp: sampleRow, the CPU sampler from JS.
#include "addon.h"
#include "sampling_arguments.h"

namespace md::addon {

Napi::Value MetalDecodeAddon::SampleRow(const Napi::CallbackInfo& info) {
  SamplingArguments a = parseSamplingArguments(info, "sampleRow");
  try {
    return Napi::Number::New(info.Env(), sampler_.sample(a.row, a.inputs));
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), std::string("sampleRow: ") + e.what());
  }
}

}  // namespace md::addon
