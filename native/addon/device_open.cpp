// device_open.cpp: opening a device, on the calling thread or off it.
#include "device_open.h"

#include <thread>

#include "../core/exact_arithmetic.h"
#include "../core/simd_layout_probe.h"
#include "../emu/emulated_device.h"
#include "../metal/metal_device.h"
#include "addon.h"
#include "device_promise.h"

namespace md::addon {

std::unique_ptr<Device> openCheckedDevice(const std::string& kind) {
  std::unique_ptr<Device> device = kind == "emulated" ? std::unique_ptr<Device>(std::make_unique<emu::EmulatedDevice>())
                                                      : metal::createMetalDevice();
  requireExactArithmetic(*device);  // same tokens as the CPU, or no device
  requireSimdLayout(*device);       // reductions over the threads they mean
  // Every pipeline now, while this is (or may be) off the event loop: a
  // table built later finds them made.
  for (const std::string& name : device->kernelNames()) device->pipeline(name);
  return device;
}

std::string deviceKindArgument(const Napi::CallbackInfo& info, const char* method) {
  Napi::Env env = info.Env();
  if (info.Length() != 1 || !info[0].IsString())
    throw Napi::TypeError::New(env, std::string(method) + ": expected the device kind, 'metal' or 'emulated'");
  std::string kind = info[0].As<Napi::String>();
  if (kind != "metal" && kind != "emulated")
    throw Napi::RangeError::New(env,
                                std::string(method) + ": unknown kind '" + kind + "' (expected 'metal' or 'emulated')");
  return kind;
}

Napi::Value OpenDevice(const Napi::CallbackInfo& info) {
  const std::string kind = deviceKindArgument(info, "openDevice");
  DevicePromise promise(info.Env(), "metal-decode:openDevice");
  // A thread of its own rather than a libuv worker: compiling Metal's
  // library can take seconds, and libuv's four workers also serve the
  // file system.
  std::thread([kind, promise]() mutable {
    std::shared_ptr<OpenedDevice> opened;
    std::string failure;
    try {
      opened = std::make_shared<OpenedDevice>(OpenedDevice{openCheckedDevice(kind)});
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (!opened) return promise.reject(failure);
    promise.settle([opened](Napi::Env env) -> Napi::Value {
      Napi::External<OpenedDevice> handle = Napi::External<OpenedDevice>::New(env, opened.get());
      // The constructor takes the device out; `opened` lives until then.
      return env.GetInstanceData<MetalDecodeAddon>()->deviceConstructor().New({handle});
    });
  }).detach();
  return promise.promise();
}

}  // namespace md::addon
