// device_open.h: how a device is opened, on the calling thread (new
// Device(kind)) or off it (openDevice(kind) -> Promise<Device>). Opening is
// the slow part of a device's life on a Mac: Metal compiles the kernel
// library from source (seconds), then each pipeline. Both happen here, with
// the start-up probes, so a device handed to JavaScript compiles nothing
// more on the event loop.
#pragma once
#include <napi.h>

#include <memory>
#include <string>

#include "../core/device.h"

namespace md::addon {

// A device of `kind` ('metal' or 'emulated') that passed the probes, with
// every pipeline of its library made. Throws DeviceError saying why not.
std::unique_ptr<Device> openCheckedDevice(const std::string& kind);

// The kind argument of new Device(kind) and openDevice(kind), checked.
std::string deviceKindArgument(const Napi::CallbackInfo& info, const char* method);

// A device opened by openDevice, on its way to the Device constructor (as
// a Napi::External).
struct OpenedDevice {
  std::unique_ptr<Device> device;
};

// openDevice(kind) -> Promise<Device>: the same device as new Device(kind),
// opened on a thread of its own.
Napi::Value OpenDevice(const Napi::CallbackInfo& info);

}  // namespace md::addon
