// addon.cpp: module registration and the exported constants.
#include "addon.h"

#include "device_binding.h"
#include "sampling_slots.h"

namespace md::addon {

MetalDecodeAddon::MetalDecodeAddon(Napi::Env env, Napi::Object exports) {
  Napi::Object slots = Napi::Object::New(env);
#define MD_SLOT_EXPORT(name) slots.Set(#name, Napi::Number::New(env, kSlot_##name));
  MD_SAMPLING_SLOTS(MD_SLOT_EXPORT)
#undef MD_SLOT_EXPORT
  slots.Set("count", Napi::Number::New(env, kSamplingSlotCount));

  DefineAddon(exports, {
      InstanceMethod("sampleRow", &MetalDecodeAddon::SampleRow),
      InstanceValue("samplingSlots", slots, napi_enumerable),
      InstanceValue("noToken", Napi::Number::New(env, MD_NO_TOKEN), napi_enumerable),
      InstanceValue("Device", DeviceHandle::define(env), napi_enumerable),
      InstanceValue("abiVersion", Napi::Number::New(env, 2), napi_enumerable),
  });
}

}  // namespace md::addon

using md::addon::MetalDecodeAddon;
NODE_API_ADDON(MetalDecodeAddon)
