// exact_arithmetic.h: the check every device passes before it is handed
// out. Same token everywhere needs the kernels' float32 operations rounded
// one by one, as the CPU does them (metal/md_exact_float.h says why); a
// compiler that still fuses a * b + c would make a device that silently
// disagrees with the CPU, so such a device is refused instead.
#pragma once
#include "device.h"

namespace md {

// Runs md_fp_contract_probe (metal/probes.metal) on inputs where a fused
// multiply-add differs from two roundings. Throws DeviceError with the
// reason when the device fuses, or cannot run the probe.
void requireExactArithmetic(Device& device);

}  // namespace md
