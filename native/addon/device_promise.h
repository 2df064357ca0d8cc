// device_promise.h: a JavaScript Promise settled from a device thread.
// Device completions (device.h) run on Metal's or the emulator's threads;
// a thread-safe function carries the outcome to the JavaScript thread, so
// no libuv worker is parked waiting for the GPU. If the environment is
// torn down first (a worker thread terminated), the outcome is dropped and
// nothing touches JavaScript.
#pragma once
#include <napi.h>

#include <functional>
#include <memory>
#include <string>

namespace md::addon {

class DevicePromise {
 public:
  // How the promise is settled, on the JavaScript thread: return the value
  // to resolve with, or throw a Napi::Error to reject with it.
  using Settle = std::function<Napi::Value(Napi::Env)>;

  // On the JavaScript thread. `name` labels the async resource.
  DevicePromise(Napi::Env env, const char* name);
  Napi::Promise promise() const { return promise_; }

  // From any thread, at most once: runs `settle` on the JavaScript thread.
  void settle(Settle settle);
  // The same for an error message: rejects with an Error whose message is
  // `prefix` + `message`.
  void reject(std::string message);

 private:
  struct Shared;
  Napi::Promise promise_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace md::addon
