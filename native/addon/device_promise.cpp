// device_promise.cpp: the thread-safe function behind DevicePromise, and
// its teardown guard.
#include "device_promise.h"

#include <mutex>

namespace md::addon {
namespace {

struct Context;
void callJs(Napi::Env env, Napi::Function, Context* context, DevicePromise::Settle* settle);
using Tsfn = Napi::TypedThreadSafeFunction<Context, DevicePromise::Settle, callJs>;

}  // namespace

struct DevicePromise::Shared {
  std::mutex mutex;
  bool closed = false;   // settled already, or the environment is ending
  bool hookRan = false;  // the teardown hook ran (and freed its argument)
  Tsfn tsfn;
};

namespace {

// Owned by the thread-safe function; freed by its finalizer on the
// JavaScript thread.
struct Context {
  explicit Context(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise::Deferred deferred;
  std::shared_ptr<DevicePromise::Shared> shared;
  std::shared_ptr<DevicePromise::Shared>* hookArgument = nullptr;  // owned by the hook until it runs
};

void onEnvironmentTeardown(void* argument) {
  auto* shared = static_cast<std::shared_ptr<DevicePromise::Shared>*>(argument);
  {
    std::lock_guard<std::mutex> lock((*shared)->mutex);
    (*shared)->closed = true;
    (*shared)->hookRan = true;
  }
  delete shared;
}

// Never throws: an exception leaving a thread-safe function's callback
// ends the process. A worker thread that is terminating still runs it, but
// every call into JavaScript then fails (node-addon-api throws an empty
// Napi::Error): nobody is left to tell, so that failure is dropped.
void callJs(Napi::Env env, Napi::Function, Context* context, DevicePromise::Settle* settle) {
  std::unique_ptr<DevicePromise::Settle> owned(settle);
  if (env == nullptr || context == nullptr || !owned) return;
  try {
    Napi::HandleScope scope(env);
    try {
      context->deferred.Resolve((*owned)(env));
    } catch (const Napi::Error& error) {
      context->deferred.Reject(error.Value());
    }
  } catch (const Napi::Error&) {
    // The environment is ending (see above).
  }
}

void finalize(Napi::Env env, void*, Context* context) {
  bool hookRan;
  {
    std::lock_guard<std::mutex> lock(context->shared->mutex);
    hookRan = context->shared->hookRan;
  }
  if (!hookRan) {
    napi_remove_env_cleanup_hook(env, onEnvironmentTeardown, context->hookArgument);
    delete context->hookArgument;
  }
  delete context;
}

}  // namespace

DevicePromise::DevicePromise(Napi::Env env, const char* name) : shared_(std::make_shared<Shared>()) {
  auto* context = new Context(env);
  context->shared = shared_;
  context->hookArgument = new std::shared_ptr<Shared>(shared_);
  shared_->tsfn = Tsfn::New(env, name, 0, 1, context, finalize);
  // After the function, so that it runs before Node's own teardown of it.
  napi_add_env_cleanup_hook(env, onEnvironmentTeardown, context->hookArgument);
}

Napi::Promise DevicePromise::promise() const { return shared_->tsfn.GetContext()->deferred.Promise(); }

void DevicePromise::settle(Settle settle) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  if (shared_->closed) return;  // the environment is gone (or a second settle): nobody to tell
  shared_->closed = true;
  auto* owned = new Settle(std::move(settle));
  if (shared_->tsfn.NonBlockingCall(owned) != napi_ok) delete owned;
  shared_->tsfn.Release();
}

void DevicePromise::reject(std::string message, ErrorKind kind) {
  settle([message = std::move(message), kind](Napi::Env env) -> Napi::Value {
    if (kind == ErrorKind::RangeError) throw Napi::RangeError::New(env, message);
    throw Napi::Error::New(env, message);
  });
}

}  // namespace md::addon
