// metal_device_stub.cpp: stands in for metal_device.mm where there is no
// Metal, so every platform links and asking for Metal is a clear error.
#include "metal_device.h"

namespace md::metal {

std::unique_ptr<Device> createMetalDevice() {
#if defined(__linux__)
  const char* platform = "Linux";
#elif defined(_WIN32)
  const char* platform = "Windows";
#else
  const char* platform = "this platform";
#endif
  throw DeviceError(std::string("Metal needs macOS on Apple silicon; this addon was built for ") + platform +
                    ", without the Metal device");
}

}  // namespace md::metal
