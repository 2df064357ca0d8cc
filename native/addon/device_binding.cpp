// device_binding.cpp: the Device class of the addon.
#include "device_binding.h"
#include "transformer_binding.h"

#include <cmath>

#include "../core/mapped_file.h"
#include "buffer_binding.h"
#include "device_open.h"
#include "device_promise.h"
#include "sampling_arguments.h"
#include "table_binding.h"

namespace md::addon {
namespace {

// The arguments of a sampling call, checked for the kernels too.
SamplingArguments kernelArguments(const Napi::CallbackInfo& info, const char* method) {
  SamplingArguments a = parseSamplingArguments(info, method);
  if (const char* problem = checkKernelInputs(a.row, a.inputs))
    throw Napi::TypeError::New(info.Env(), std::string(method) + ": " + problem);
  return a;
}

}  // namespace

Napi::Function DeviceHandle::define(Napi::Env env) {
  return DefineClass(env, "Device",
                     {
                         InstanceAccessor("name", &DeviceHandle::Name, nullptr),
                         InstanceMethod("sample", &DeviceHandle::Sample),
                         InstanceMethod("sampleAsync", &DeviceHandle::SampleAsync),
                         InstanceMethod("dispose", &DeviceHandle::Dispose),
                         InstanceMethod("createBuffer", &DeviceHandle::CreateBuffer),
                         InstanceMethod("mapFile", &DeviceHandle::MapFile),
                         InstanceMethod("createTable", &DeviceHandle::CreateTable),
                         InstanceMethod("runChain", &DeviceHandle::RunChain),
                         InstanceMethod("kernelNames", &DeviceHandle::KernelNames),
                         InstanceMethod("maxThreadsPerThreadgroup", &DeviceHandle::MaxThreadsPerThreadgroup),
                         InstanceMethod("addKernelSource", &DeviceHandle::AddKernelSource),
                     });
}

DeviceHandle::DeviceHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DeviceHandle>(info) {
  Napi::Env env = info.Env();
  std::unique_ptr<Device> device;
  if (info.Length() == 1 && info[0].IsExternal()) {
    // From openDevice (device_open.cpp): opened off the event loop.
    device = std::move(info[0].As<Napi::External<OpenedDevice>>().Data()->device);
    if (!device) throw Napi::Error::New(env, "Device: that opened device was already taken");
  } else {
    const std::string kind = deviceKindArgument(info, "Device");
    try {
      device = openCheckedDevice(kind);
    } catch (const DeviceError& e) {
      throw Napi::Error::New(env, e.what());
    }
  }
  name_ = device->name();
  session_ = std::make_shared<DeviceSession>(std::move(device));
}

std::shared_ptr<DeviceSession> DeviceHandle::session(Napi::Env env, const char* method) const {
  if (!session_) throw Napi::Error::New(env, std::string(method) + ": the device was disposed");
  return session_;
}

Napi::Value DeviceHandle::Name(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), name_); }

Napi::Value DeviceHandle::Sample(const Napi::CallbackInfo& info) {
  auto s = session(info.Env(), "sample");
  // Blocking: the JS arrays outlive the call, so no copy is needed.
  SamplingArguments input = kernelArguments(info, "sample");
  try {
    return Napi::Number::New(info.Env(), s->sampler.sample(input.row, 1, input.inputs).at(0));
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

Napi::Value DeviceHandle::SampleAsync(const Napi::CallbackInfo& info) {
  auto s = session(info.Env(), "sampleAsync");
  SamplingArguments input = kernelArguments(info, "sampleAsync");
  DevicePromise promise(info.Env(), "metal-decode:sample");
  try {
    // The inputs are copied into device buffers before this returns; the
    // kernels' completion settles the promise (no thread waits for them).
    s->sampler.sampleAsync(
        input.row, 1, input.inputs, [promise](std::vector<uint32_t> tokens, const std::string& error) mutable {
          if (!error.empty()) return promise.reject(error);
          const uint32_t token = tokens.at(0);
          promise.settle([token](Napi::Env env) -> Napi::Value { return Napi::Number::New(env, token); });
        });
  } catch (const std::exception& e) {
    promise.reject(e.what());  // as an error while it ran would be
  }
  return promise.promise();
}

Napi::Value DeviceHandle::Dispose(const Napi::CallbackInfo& info) {
  if (session_) {
    // Buffers and tables let go of their memory and of the device now;
    // work in flight holds what it uses until it completes.
    auto resources = session_->resources;
    for (DeviceResource* resource : resources) resource->releaseDeviceResources();
    session_.reset();
  }
  return info.Env().Undefined();
}

Napi::Value DeviceHandle::CreateBuffer(const Napi::CallbackInfo& info) {
  auto s = session(info.Env(), "createBuffer");
  if (info.Length() != 1 || !info[0].IsNumber())
    throw Napi::TypeError::New(info.Env(), "createBuffer: expected a byte length");
  double length = info[0].As<Napi::Number>().DoubleValue();
  if (!(length >= 1 && length <= 9007199254740991.0 && length == std::floor(length)))
    throw Napi::RangeError::New(info.Env(), "createBuffer: the length must be a positive integer");
  return BufferHandle::create(info.Env(), s, size_t(length));
}

Napi::Value DeviceHandle::MapFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto s = session(env, "mapFile");
  // A model (new Transformer) shares its own mapping: the file that was
  // opened at load, whatever the path holds now.
  std::shared_ptr<MappedFile> file = info.Length() == 2 ? TransformerHandle::mappedFileOf(env, info[0]) : nullptr;
  if (info.Length() != 2 || !(file || info[0].IsString()) || !info[1].IsArray())
    throw Napi::TypeError::New(env, "mapFile: expected (path or model, ranges: {offset, length}[])");
  if (!file) {
    try {
      file = std::make_shared<MappedFile>(info[0].As<Napi::String>().Utf8Value());
    } catch (const std::exception& e) {
      throw Napi::Error::New(env, std::string("mapFile: ") + e.what());
    }
  }
  Napi::Array ranges = info[1].As<Napi::Array>();
  Napi::Array result = Napi::Array::New(env, ranges.Length());
  for (uint32_t i = 0; i < ranges.Length(); ++i) {
    const std::string at = "mapFile: ranges[" + std::to_string(i) + "]";
    Napi::Value item = ranges.Get(i);
    if (!item.IsObject()) throw Napi::TypeError::New(env, at + " must be an object {offset, length}");
    auto field = [&](const char* name) {
      Napi::Value v = item.As<Napi::Object>().Get(name);
      const double x = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
      if (!(x >= 0 && x <= 9007199254740991.0 && x == std::floor(x)))
        throw Napi::RangeError::New(env, at + "." + name + " must be a non-negative integer");
      return uint64_t(x);
    };
    const uint64_t offset = field("offset"), length = field("length");
    if (length == 0 || offset > file->size() || length > file->size() - offset)
      throw Napi::RangeError::New(env, at + ": bytes " + std::to_string(offset) + ".." +
                                           std::to_string(offset + length) + " are not a non-empty range of the " +
                                           std::to_string(file->size()) + "-byte file");
    const uint64_t start = offset / kWrapGranularity * kWrapGranularity;
    std::shared_ptr<Buffer> buffer;
    try {
      buffer = s->device->wrapMemory(file->data() + start, size_t(offset + length - start), file);
    } catch (const std::exception& e) {
      throw Napi::Error::New(env, at + ": " + e.what());
    }
    Napi::Object entry = Napi::Object::New(env);
    entry.Set("buffer", BufferHandle::adoptReadOnly(env, s, std::move(buffer)));
    entry.Set("offset", Napi::Number::New(env, double(offset - start)));
    result.Set(i, entry);
  }
  return result;
}

Napi::Value DeviceHandle::CreateTable(const Napi::CallbackInfo& info) {
  return TableHandle::create(info, session(info.Env(), "createTable"));
}

Napi::Value DeviceHandle::RunChain(const Napi::CallbackInfo& info) {
  return TableHandle::runChain(info, session(info.Env(), "runChain"));
}

Napi::Value DeviceHandle::KernelNames(const Napi::CallbackInfo& info) {
  auto s = session(info.Env(), "kernelNames");
  Napi::Array names = Napi::Array::New(info.Env());
  uint32_t i = 0;
  for (const std::string& name : s->device->kernelNames()) names.Set(i++, name);
  return names;
}

Napi::Value DeviceHandle::MaxThreadsPerThreadgroup(const Napi::CallbackInfo& info) {
  auto s = session(info.Env(), "maxThreadsPerThreadgroup");
  if (info.Length() != 1 || !info[0].IsString())
    throw Napi::TypeError::New(info.Env(), "maxThreadsPerThreadgroup: expected a kernel name");
  try {
    return Napi::Number::New(info.Env(), s->device->pipeline(info[0].As<Napi::String>()).maxThreadsPerThreadgroup());
  } catch (const DeviceError& e) {
    throw Napi::Error::New(info.Env(), std::string("maxThreadsPerThreadgroup: ") + e.what());
  }
}

Napi::Value DeviceHandle::AddKernelSource(const Napi::CallbackInfo& info) {
  auto s = session(info.Env(), "addKernelSource");
  if (info.Length() != 1 || !info[0].IsString())
    throw Napi::TypeError::New(info.Env(), "addKernelSource: expected Metal source code as a string");
  try {
    s->device->addKernelSource(info[0].As<Napi::String>());
  } catch (const DeviceError& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
  return info.Env().Undefined();
}

}  // namespace md::addon
