// table_binding.cpp: the Table class, createTable and runChain.
#include "table_binding.h"

#include <cmath>
#include <cstring>
#include <string>

#include "addon.h"
#include "buffer_binding.h"
#include "device_promise.h"

namespace md::addon {
namespace {

// Reads fields of one command object, naming them in errors.
class CommandReader {
 public:
  CommandReader(Napi::Env env, Napi::Object object, uint32_t i)
      : env_(env), object_(object), where_("createTable: commands[" + std::to_string(i) + "].") {}

  Napi::Value get(const char* field) const { return object_.Get(field); }

  uint32_t uint(const char* field, Napi::Value value, uint32_t max = UINT32_MAX) const {
    if (!value.IsNumber()) throw Napi::TypeError::New(env_, where_ + field + " must be a number");
    double x = value.As<Napi::Number>().DoubleValue();
    if (!(x >= 0 && x <= max && x == std::floor(x)))
      throw Napi::RangeError::New(env_, where_ + field + " must be an integer from 0 to " + std::to_string(max));
    return uint32_t(x);
  }
  uint32_t uint(const char* field, uint32_t max = UINT32_MAX) const { return uint(field, get(field), max); }

  std::string string(const char* field) const {
    Napi::Value v = get(field);
    if (!v.IsString()) throw Napi::TypeError::New(env_, where_ + field + " must be a string");
    return v.As<Napi::String>();
  }

  Napi::Array array(const char* field) const {
    Napi::Value v = get(field);
    if (!v.IsArray()) throw Napi::TypeError::New(env_, where_ + field + " must be an array");
    return v.As<Napi::Array>();
  }

  Napi::Object object(const char* field) const {
    Napi::Value v = get(field);
    if (!v.IsObject()) throw Napi::TypeError::New(env_, where_ + field + " must be an object");
    return v.As<Napi::Object>();
  }

  [[noreturn]] void fail(const std::string& message) const { throw Napi::TypeError::New(env_, where_ + message); }

 private:
  Napi::Env env_;
  Napi::Object object_;
  std::string where_;
};

DispatchCmd readCommand(Napi::Env env, Napi::Object object, uint32_t i, DispatchTable& table,
                        const std::shared_ptr<DeviceSession>& session) {
  CommandReader r(env, object, i);
  DispatchCmd cmd;
  try {
    cmd.pipeline = &session->device->pipeline(r.string("kernel"));
  } catch (const DeviceError& e) {
    throw Napi::Error::New(env, "createTable: commands[" + std::to_string(i) + "].kernel: " + e.what());
  }
  Napi::Array buffers = r.array("buffers");
  if (buffers.Length() > kMaxCommandBuffers) r.fail("buffers: at most " + std::to_string(kMaxCommandBuffers));
  for (uint32_t b = 0; b < buffers.Length(); ++b) {
    Napi::Value entry = buffers.Get(b);
    if (!entry.IsObject()) r.fail("buffers[" + std::to_string(b) + "] must be an object");
    Napi::Object binding = entry.As<Napi::Object>();
    BufferHandle* handle = BufferHandle::unwrap(binding.Get("buffer"));
    if (!handle) r.fail("buffers[" + std::to_string(b) + "].buffer must be a buffer from device.createBuffer");
    if (handle->session() != session.get())
      r.fail("buffers[" + std::to_string(b) + "].buffer belongs to another device");
    cmd.buffers[b].buffer = handle->buffer().get();
    cmd.buffers[b].index = r.uint("buffers[].index", binding.Get("index"), kMaxBufferIndex);
    cmd.buffers[b].offset = r.uint("buffers[].offset", binding.Get("offset"));
    table.retain(handle->buffer());
  }
  cmd.bufferCount = buffers.Length();
  Napi::Value params = r.get("params");
  if (!params.IsNull() && !params.IsUndefined()) {
    if (!params.IsTypedArray() || params.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
      r.fail("params must be a Uint8Array or null");
    Napi::Uint8Array bytes = params.As<Napi::Uint8Array>();
    if (bytes.ByteLength() > kMaxInlineParams)
      throw Napi::RangeError::New(env, "createTable: commands[" + std::to_string(i) +
                                           "].params: " + std::to_string(bytes.ByteLength()) + " bytes; at most 64");
    std::memcpy(cmd.params, bytes.Data(), bytes.ByteLength());
    cmd.paramsSize = uint32_t(bytes.ByteLength());
    cmd.paramsIndex = r.uint("paramsIndex", kMaxBufferIndex);
  }
  cmd.threadgroups = r.uint("threadgroups");
  cmd.threadsPerThreadgroup = r.uint("threadsPerThreadgroup");
  cmd.threadgroupMemory = r.uint("threadgroupMemory");
  Napi::Object patch = r.object("patch");
  const uint32_t rule = r.uint("patch.rule", patch.Get("rule"), uint32_t(PatchRule::SampledToken));
  cmd.patch.rule = PatchRule(rule);
  cmd.patch.buffer = uint8_t(r.uint("patch.buffer", patch.Get("buffer"), kMaxBufferIndex));
  Napi::Value fields = patch.Get("fields");
  if (!fields.IsArray() || fields.As<Napi::Array>().Length() != 2) r.fail("patch.fields must be an array of two");
  for (uint32_t f = 0; f < 2; ++f)
    cmd.patch.fields[f] = uint8_t(r.uint("patch.fields[]", fields.As<Napi::Array>().Get(f), kNoField));
  Napi::Value ahead = patch.Get("ahead");
  if (!ahead.IsUndefined()) cmd.patch.ahead = uint32_t(r.uint("patch.ahead", ahead, kMaxPatchAhead));
  return cmd;
}

}  // namespace

Napi::Function TableHandle::define(Napi::Env env) {
  return DefineClass(env, "Table",
                     {
                         InstanceAccessor("size", &TableHandle::Size, nullptr),
                         InstanceAccessor("labels", &TableHandle::Labels, nullptr),
                         InstanceMethod("dispose", &TableHandle::Dispose),
                     });
}

TableHandle::TableHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TableHandle>(info) {}

TableHandle::~TableHandle() { releaseDeviceResources(); }

Napi::Value TableHandle::Dispose(const Napi::CallbackInfo& info) {
  releaseDeviceResources();
  return info.Env().Undefined();
}

void TableHandle::releaseDeviceResources() {
  table_.reset();
  if (session_) session_->resources.erase(this);
  session_.reset();
}

Napi::Object TableHandle::create(const Napi::CallbackInfo& info, std::shared_ptr<DeviceSession> session) {
  Napi::Env env = info.Env();
  if (info.Length() != 1 || !info[0].IsArray())
    throw Napi::TypeError::New(env, "createTable: expected an array of commands");
  Napi::Array commands = info[0].As<Napi::Array>();
  auto table = std::make_shared<DispatchTable>();
  for (uint32_t i = 0; i < commands.Length(); ++i) {
    Napi::Value value = commands.Get(i);
    if (!value.IsObject())
      throw Napi::TypeError::New(env, "createTable: commands[" + std::to_string(i) + "] must be an object");
    Napi::Object object = value.As<Napi::Object>();
    DispatchCmd cmd = readCommand(env, object, i, *table, session);
    CommandReader r(env, object, i);
    try {
      table->add(cmd, r.string("label"));
    } catch (const DeviceError& e) {
      throw Napi::RangeError::New(env, std::string("createTable: ") + e.what());
    }
  }
  Napi::Object object = env.GetInstanceData<MetalDecodeAddon>()->tableConstructor().New({});
  TableHandle* handle = Napi::ObjectWrap<TableHandle>::Unwrap(object);
  session->resources.insert(handle);
  handle->session_ = std::move(session);
  handle->table_ = std::move(table);
  return object;
}

Napi::Value TableHandle::runChain(const Napi::CallbackInfo& info, std::shared_ptr<DeviceSession> session) {
  Napi::Env env = info.Env();
  Napi::Function constructor = env.GetInstanceData<MetalDecodeAddon>()->tableConstructor().Value();
  if (info.Length() != 3 || !info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(constructor))
    throw Napi::TypeError::New(env, "runChain: expected (table, start, n) with a table from createTable");
  TableHandle* table = Napi::ObjectWrap<TableHandle>::Unwrap(info[0].As<Napi::Object>());
  if (!table->table_)
    throw Napi::TypeError::New(env, "runChain: the table's device was disposed, or it was not made by createTable");
  if (table->session_ != session) throw Napi::TypeError::New(env, "runChain: the table belongs to another device");
  uint32_t position[2];
  const char* names[2] = {"start", "n"};
  for (int k = 0; k < 2; ++k) {
    Napi::Value v = info[1 + k];
    double x = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
    if (!(x >= 0 && x <= UINT32_MAX && x == std::floor(x)))
      throw Napi::RangeError::New(env,
                                  std::string("runChain: ") + names[k] + " must be an integer from 0 to 4294967295");
    position[k] = uint32_t(x);
  }
  DevicePromise promise(env, "metal-decode:chain");
  try {
    // Committed here, in as many command buffers as the watchdog bound
    // needs; the last one's completion settles the promise.
    commitChain(*session->device, *table->table_, position[0], position[1],
                [promise](const std::string& error) mutable {
                  if (!error.empty()) return promise.reject("runChain: " + error);
                  promise.settle([](Napi::Env env) -> Napi::Value { return env.Undefined(); });
                });
  } catch (const ChainError& e) {
    promise.reject(std::string("runChain: ") + e.what(), DevicePromise::ErrorKind::RangeError);
  } catch (const std::exception& e) {
    promise.reject(std::string("runChain: ") + e.what());
  }
  return promise.promise();
}

Napi::Value TableHandle::Size(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(table_ ? table_->size() : 0));
}

Napi::Value TableHandle::Labels(const Napi::CallbackInfo& info) {
  Napi::Array labels = Napi::Array::New(info.Env());
  for (size_t i = 0; table_ && i < table_->size(); ++i) labels.Set(uint32_t(i), table_->label(i));
  return labels;
}

}  // namespace md::addon
