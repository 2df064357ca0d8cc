// simd_layout_probe.cpp: the start-up probe of a device's thread numbering.
#include "simd_layout_probe.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace md {

void requireSimdLayout(Device& device) {
  constexpr uint32_t kMostThreads = 1024;  // the kernels' largest threadgroup
  const Pipeline& probe = device.pipeline("md_simd_layout_probe");
  const uint32_t threads = std::min(kMostThreads, probe.maxThreadsPerThreadgroup()) / 32 * 32;
  if (threads == 0)
    throw DeviceError(device.name() + " allows " + std::to_string(probe.maxThreadsPerThreadgroup()) +
                      " threads per threadgroup for md_simd_layout_probe; the kernels need at least 32");
  auto output = device.newBuffer(kMostThreads * sizeof(uint32_t));
  std::memset(output->contents(), 0xFF, kMostThreads * sizeof(uint32_t));  // no thread's number until written
  auto commands = device.newCommandBuffer();
  commands->setPipeline(probe);
  commands->setBuffer(0, *output, 0);
  commands->dispatch(1, threads);
  commands->commit();
  commands->wait();
  std::vector<uint32_t> got(threads);
  std::memcpy(got.data(), output->contents(), threads * sizeof(uint32_t));
  for (uint32_t tid = 0; tid < threads; ++tid) {
    if (got[tid] == tid) continue;
    throw DeviceError(device.name() + " numbers its SIMD groups otherwise than the kernels assume: thread " +
                      std::to_string(tid) + " of " + std::to_string(threads) + " is lane " +
                      std::to_string(got[tid] % 32) + " of SIMD group " + std::to_string(got[tid] / 32) +
                      " (expected lane " + std::to_string(tid % 32) + " of SIMD group " + std::to_string(tid / 32) +
                      "), so its reductions would mix threads up; it is not used");
  }
}

}  // namespace md
