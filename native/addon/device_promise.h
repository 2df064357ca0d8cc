// device_promise.h: a JavaScript Promise settled from a device thread.
// Device completions (device.h) run on Metal's or the emulator's threads;
// a thread-safe function carries the outcome to the JavaScript thread, so
// no libuv worker is parked waiting for the GPU.
//
// Teardown: when the environment ends first (a worker thread terminated
// with work in flight), Node frees its thread-safe functions whether or not
// a thread still holds them. A cleanup hook registered after the function
// (hooks run last-in first-out, so before Node's) closes it under a lock
// the settling thread takes too: an outcome that arrives after that is
// dropped, and nothing touches the freed function.
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
  enum class ErrorKind { Error, RangeError };

  // On the JavaScript thread. `name` labels the async resource.
  DevicePromise(Napi::Env env, const char* name);
  Napi::Promise promise() const;

  // From any thread, exactly once (a promise never settled keeps the event
  // loop alive): runs `settle` on the JavaScript thread.
  void settle(Settle settle);
  // The same, rejecting with an Error (or RangeError) of this message.
  void reject(std::string message, ErrorKind kind = ErrorKind::Error);

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace md::addon
