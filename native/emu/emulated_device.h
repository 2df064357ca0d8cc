// emulated_device.h: md::Device on the CPU. Runs the .metal kernels
// compiled as C++ (kernels.cpp), every threadgroup as fibers
// (ThreadgroupRunner), threadgroups in parallel on OS threads. Slow and
// exact: for CI, and for debugging kernels where a GPU would only hang.
//
// It keeps Metal's contract (device.h) so that what the addon does with it
// is what it does with Metal: one queue thread runs committed command
// buffers in commit order and calls their completions; a committed command
// buffer keeps its buffers and the queue alive until it completed, so the
// device may be destroyed with work in flight (the work still runs).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <map>
#include <vector>

#include "../core/device.h"
#include "kernel_binding.h"
#include "threadgroup_runner.h"

namespace md::emu {

class EmulatedDevice : public Device {
 public:
  // `kernels` defaults to every kernel in metal/; tests pass their own.
  // The fiber order comes from MD_EMU_FIBER_ORDER (DeviceError if invalid);
  // `workers` = 0 uses one OS thread per core.
  explicit EmulatedDevice(const EmulatedKernel* kernels = nullptr, size_t kernelCount = 0, unsigned workers = 0);
  // Does not wait for work in flight: the queue thread finishes it, then ends.
  ~EmulatedDevice() override;

  std::string name() const override;
  std::shared_ptr<Buffer> newBuffer(size_t length) override;
  std::shared_ptr<Buffer> wrapMemory(const void* data, size_t length, std::shared_ptr<const void> owner) override;
  const Pipeline& pipeline(const std::string& name) override;
  std::unique_ptr<CommandBuffer> newCommandBuffer() override;
  std::vector<std::string> kernelNames() override;
  void addKernelSource(const std::string& source) override;

  class Queue;  // emulated_queue.h

 private:
  const EmulatedKernel* kernels_;
  size_t kernelCount_;
  FiberOrder order_;
  SimdSumOrder sumOrder_;
  std::mutex pipelinesMutex_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  std::shared_ptr<Queue> queue_;
};

}  // namespace md::emu
