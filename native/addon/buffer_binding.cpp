// buffer_binding.cpp: the Buffer class of the addon.
#include "buffer_binding.h"

#include <cmath>
#include <cstring>
#include <string>

#include "addon.h"

namespace md::addon {
namespace {

// A byte count or offset argument: an integer from 0 to 2^53.
size_t sizeArgument(const Napi::CallbackInfo& info, size_t i, const char* method, const char* name) {
  if (!info[i].IsNumber())
    throw Napi::TypeError::New(info.Env(), std::string(method) + ": " + name + " must be a number");
  double x = info[i].As<Napi::Number>().DoubleValue();
  if (!(x >= 0 && x <= 9007199254740991.0 && x == std::floor(x)))
    throw Napi::RangeError::New(info.Env(), std::string(method) + ": " + name + " must be a non-negative integer");
  return size_t(x);
}

// [offset, offset + length) inside the buffer, or a RangeError.
void checkRange(Napi::Env env, const char* method, size_t offset, size_t length, size_t size) {
  if (offset > size || length > size - offset)
    throw Napi::RangeError::New(env, std::string(method) + ": bytes " + std::to_string(offset) + ".." +
                                         std::to_string(offset + length) + " are outside the " + std::to_string(size) +
                                         "-byte buffer");
}

}  // namespace

Napi::Function BufferHandle::define(Napi::Env env) {
  return DefineClass(env, "Buffer",
                     {
                         InstanceAccessor("length", &BufferHandle::Length, nullptr),
                         InstanceMethod("write", &BufferHandle::Write),
                         InstanceMethod("read", &BufferHandle::Read),
                         InstanceMethod("dispose", &BufferHandle::Dispose),
                     });
}

Napi::Object BufferHandle::create(Napi::Env env, std::shared_ptr<DeviceSession> session, size_t length) {
  std::shared_ptr<Buffer> buffer;
  try {
    buffer = session->device->newBuffer(length);
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, std::string("createBuffer: ") + e.what());
  }
  Napi::Object object = env.GetInstanceData<MetalDecodeAddon>()->bufferConstructor().New({});
  BufferHandle* handle = Napi::ObjectWrap<BufferHandle>::Unwrap(object);
  session->resources.insert(handle);
  handle->session_ = std::move(session);
  handle->buffer_ = std::move(buffer);
  // Native memory V8 cannot see would never prompt a garbage collection.
  Napi::MemoryManagement::AdjustExternalMemory(env, int64_t(length));
  return object;
}

Napi::Object BufferHandle::adoptReadOnly(Napi::Env env, std::shared_ptr<DeviceSession> session,
                                         std::shared_ptr<Buffer> buffer) {
  Napi::Object object = env.GetInstanceData<MetalDecodeAddon>()->bufferConstructor().New({});
  BufferHandle* handle = Napi::ObjectWrap<BufferHandle>::Unwrap(object);
  session->resources.insert(handle);
  handle->session_ = std::move(session);
  handle->buffer_ = std::move(buffer);
  handle->readOnly_ = true;
  return object;
}

BufferHandle::~BufferHandle() { releaseDeviceResources(); }

Napi::Value BufferHandle::Dispose(const Napi::CallbackInfo& info) {
  releaseDeviceResources();
  return info.Env().Undefined();
}

void BufferHandle::releaseDeviceResources() {
  if (buffer_ && !readOnly_) Napi::MemoryManagement::AdjustExternalMemory(Env(), -int64_t(buffer_->length()));
  buffer_.reset();
  if (session_) session_->resources.erase(this);
  session_.reset();
}

BufferHandle* BufferHandle::unwrap(Napi::Value value) {
  if (!value.IsObject()) return nullptr;
  Napi::Object object = value.As<Napi::Object>();
  Napi::Function constructor = value.Env().GetInstanceData<MetalDecodeAddon>()->bufferConstructor().Value();
  if (!object.InstanceOf(constructor)) return nullptr;
  BufferHandle* handle = Napi::ObjectWrap<BufferHandle>::Unwrap(object);
  return handle->buffer_ ? handle : nullptr;
}

// Made by create() only: `new Buffer()` from JS gives an empty handle that
// every method refuses.
BufferHandle::BufferHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BufferHandle>(info) {}

Napi::Value BufferHandle::Length(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(buffer_ ? buffer_->length() : 0));
}

Napi::Value BufferHandle::Write(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!buffer_)
    throw Napi::Error::New(env, "write: the buffer's device was disposed, or it was not made by device.createBuffer");
  if (readOnly_)
    throw Napi::Error::New(env, "write: this buffer maps a file read-only (device.mapFile); kernels may only read it");
  if (info.Length() != 2 || !info[1].IsTypedArray())
    throw Napi::TypeError::New(env, "write: expected (offset, typedArray)");
  size_t offset = sizeArgument(info, 0, "write", "offset");
  // The view's own data pointer: it also works for a SharedArrayBuffer,
  // whose ArrayBuffer accessors N-API refuses.
  void* data = nullptr;
  size_t elements = 0;
  napi_typedarray_type type;
  if (napi_get_typedarray_info(env, info[1], &type, &elements, &data, nullptr, nullptr) != napi_ok)
    throw Napi::TypeError::New(env, "write: could not read the typed array");
  const size_t length = info[1].As<Napi::TypedArray>().ByteLength();
  checkRange(env, "write", offset, length, buffer_->length());
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (length) std::memcpy(static_cast<uint8_t*>(buffer_->contents()) + offset, bytes, length);
  return env.Undefined();
}

Napi::Value BufferHandle::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!buffer_)
    throw Napi::Error::New(env, "read: the buffer's device was disposed, or it was not made by device.createBuffer");
  if (info.Length() != 2) throw Napi::TypeError::New(env, "read: expected (offset, length)");
  size_t offset = sizeArgument(info, 0, "read", "offset");
  size_t length = sizeArgument(info, 1, "read", "length");
  checkRange(env, "read", offset, length, buffer_->length());
  Napi::ArrayBuffer out = Napi::ArrayBuffer::New(env, length);
  if (length) std::memcpy(out.Data(), static_cast<const uint8_t*>(buffer_->contents()) + offset, length);
  return out;
}

}  // namespace md::addon
