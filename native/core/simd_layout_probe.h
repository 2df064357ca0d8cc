// simd_layout_probe.h: the second check every device passes before it is
// handed out. The kernels' reductions take a thread's SIMD group and lane
// to be tid / 32 and tid % 32 (md_kernel.h's reductions store a SIMD
// group's result at simd_index, the sampling scans give lane l the values
// of thread simd_index * 32 + l). Metal documents SIMD groups as runs of
// consecutive threads, but a device or driver that numbered them otherwise
// would mix up rows silently; it is refused instead.
#pragma once
#include "device.h"

namespace md {

// Runs md_simd_layout_probe (metal/probes.metal) on the largest threadgroup
// the pipeline allows (up to the kernels' 1024) and throws DeviceError
// naming the first thread whose simd_index * 32 + lane is not its tid.
void requireSimdLayout(Device& device);

}  // namespace md
