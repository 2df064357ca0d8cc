// buffer_binding.h: a device buffer in JS (device.createBuffer(bytes)).
// Holds the buffer and the device session, so neither is freed while JS
// or a dispatch table still uses it.
#pragma once
#include <napi.h>

#include <memory>

#include "device_binding.h"

namespace md::addon {

class BufferHandle : public Napi::ObjectWrap<BufferHandle>, public DeviceResource {
 public:
  static Napi::Function define(Napi::Env env);
  // Wraps a new buffer of `length` bytes of `session`'s device.
  static Napi::Object create(Napi::Env env, std::shared_ptr<DeviceSession> session, size_t length);
  // Wraps `buffer`, made by the device over memory it does not own (a
  // mapped file, device.mapFile): write() refuses it, and V8 is not told of
  // memory the file's pages are.
  static Napi::Object adoptReadOnly(Napi::Env env, std::shared_ptr<DeviceSession> session,
                                    std::shared_ptr<Buffer> buffer);
  // The handle behind a JS value, or nullptr if it is not a buffer handle.
  static BufferHandle* unwrap(Napi::Value value);

  explicit BufferHandle(const Napi::CallbackInfo& info);
  ~BufferHandle() override;
  // Frees the memory (V8 hears of it) and lets go of the device.
  void releaseDeviceResources() override;

  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  const DeviceSession* session() const { return session_.get(); }

 private:
  Napi::Value Length(const Napi::CallbackInfo& info);
  // write(offset, view): copies the view's bytes to offset.
  Napi::Value Write(const Napi::CallbackInfo& info);
  // read(offset, length) -> ArrayBuffer: a copy of the bytes.
  Napi::Value Read(const Napi::CallbackInfo& info);
  // dispose(): frees the memory now (work in flight keeps it until done).
  Napi::Value Dispose(const Napi::CallbackInfo& info);

  std::shared_ptr<DeviceSession> session_;
  std::shared_ptr<Buffer> buffer_;
  bool readOnly_ = false;
};

}  // namespace md::addon
