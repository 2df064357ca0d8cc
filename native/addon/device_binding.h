// device_binding.h: `new addon.Device(kind)`, a GPU device ('metal', or
// 'emulated': the same kernels on CPU fibers) with the sampling kernels.
// A thin handle: the device and its KernelSampler live in a shared session
// that asynchronous work keeps alive after dispose().
#pragma once
#include <napi.h>

#include <memory>
#include <unordered_set>

#include "../core/device.h"
#include "../core/kernel_sampler.h"

namespace md::addon {

// What a device's buffers and tables hold of it, released by dispose()
// at once rather than whenever the garbage collector finds their handles.
class DeviceResource {
 public:
  virtual void releaseDeviceResources() = 0;

 protected:
  ~DeviceResource() = default;
};

struct DeviceSession {
  explicit DeviceSession(std::unique_ptr<Device> d) : device(std::move(d)), sampler(*device) {}
  std::unique_ptr<Device> device;
  KernelSampler sampler;
  // The live buffer and table handles of this device (JavaScript thread only).
  std::unordered_set<DeviceResource*> resources;
};

class DeviceHandle : public Napi::ObjectWrap<DeviceHandle> {
 public:
  static Napi::Function define(Napi::Env env);
  explicit DeviceHandle(const Napi::CallbackInfo& info);

 private:
  Napi::Value Name(const Napi::CallbackInfo& info);
  // sample(logits, slots, history, biasTokens, biasValues) -> token
  Napi::Value Sample(const Napi::CallbackInfo& info);
  // The same, resolved off the event loop: Promise<token>.
  Napi::Value SampleAsync(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  // Dispatch tables (table_binding.h, buffer_binding.h).
  Napi::Value CreateBuffer(const Napi::CallbackInfo& info);
  // mapFile(path, ranges: {offset, length}[]) -> {buffer, offset}[]: each
  // range of the file as a read-only buffer over its mapping (no copy),
  // from the granule boundary below it; `offset` is where the range starts
  // in that buffer.
  Napi::Value MapFile(const Napi::CallbackInfo& info);
  Napi::Value CreateTable(const Napi::CallbackInfo& info);
  Napi::Value RunChain(const Napi::CallbackInfo& info);
  Napi::Value KernelNames(const Napi::CallbackInfo& info);
  Napi::Value MaxThreadsPerThreadgroup(const Napi::CallbackInfo& info);
  Napi::Value AddKernelSource(const Napi::CallbackInfo& info);

  std::shared_ptr<DeviceSession> session(Napi::Env env, const char* method) const;

  std::shared_ptr<DeviceSession> session_;
  std::string name_;
};

}  // namespace md::addon
