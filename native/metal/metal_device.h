// metal_device.h: the Metal device, as plain C++ sees it. The
// implementation (metal_device.mm) is the only file that sees
// Objective-C; elsewhere metal_device_stub.cpp links in its place and
// explains why there is no Metal.
#pragma once
#include <memory>

#include "../core/device.h"

namespace md::metal {

// The system's default Metal device with the kernels of metal/ compiled
// from source. Throws DeviceError with the reason when there is none
// (not macOS, no Apple GPU, a kernel that does not compile: the compiler's
// message is in the error).
std::unique_ptr<Device> createMetalDevice();

}  // namespace md::metal
