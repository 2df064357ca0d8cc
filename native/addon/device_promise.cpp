// device_promise.cpp: the thread-safe function behind DevicePromise.
#include "device_promise.h"

namespace md::addon {
namespace {

struct Deferred {
  explicit Deferred(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise::Deferred deferred;
};

void callJs(Napi::Env env, Napi::Function, Deferred* context, DevicePromise::Settle* settle) {
  std::unique_ptr<DevicePromise::Settle> owned(settle);
  if (env == nullptr || context == nullptr || !owned) return;  // torn down: nothing to settle
  Napi::HandleScope scope(env);
  try {
    context->deferred.Resolve((*owned)(env));
  } catch (const Napi::Error& error) {
    context->deferred.Reject(error.Value());
  }
}

using Tsfn = Napi::TypedThreadSafeFunction<Deferred, DevicePromise::Settle, callJs>;

}  // namespace

struct DevicePromise::Shared {
  Tsfn tsfn;
};

DevicePromise::DevicePromise(Napi::Env env, const char* name) : shared_(std::make_shared<Shared>()) {
  auto* context = new Deferred(env);
  promise_ = context->deferred.Promise();
  // One call, from one thread; the finalizer frees the deferred on the
  // JavaScript thread, after the call or at teardown.
  shared_->tsfn = Tsfn::New(env, name, 0, 1, context, [](Napi::Env, void*, Deferred* deferred) { delete deferred; });
}

void DevicePromise::settle(Settle settle) {
  auto* owned = new Settle(std::move(settle));
  if (shared_->tsfn.NonBlockingCall(owned) != napi_ok) delete owned;  // the environment is gone
  shared_->tsfn.Release();
}

void DevicePromise::reject(std::string message) {
  settle([message = std::move(message)](Napi::Env env) -> Napi::Value { throw Napi::Error::New(env, message); });
}

}  // namespace md::addon
