// emulated_device.h: md::Device on the CPU. Runs the .metal kernels
// compiled as C++ (kernels.cpp), every threadgroup as fibers
// (ThreadgroupRunner), threadgroups in parallel on OS threads. Slow and
// exact: for CI, and for debugging kernels where a GPU would only hang.
#pragma once
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../core/device.h"
#include "kernel_binding.h"
#include "threadgroup_runner.h"

namespace md::emu {

class EmulatedCommandBuffer;

class EmulatedDevice : public Device {
 public:
  // `kernels` defaults to every kernel in metal/; tests pass their own.
  // The fiber order comes from MD_EMU_FIBER_ORDER (DeviceError if invalid);
  // `workers` = 0 uses one OS thread per core.
  explicit EmulatedDevice(const EmulatedKernel* kernels = nullptr, size_t kernelCount = 0, unsigned workers = 0);
  ~EmulatedDevice() override;

  std::string name() const override;
  std::shared_ptr<Buffer> newBuffer(size_t length) override;
  const Pipeline& pipeline(const std::string& name) override;
  std::unique_ptr<CommandBuffer> newCommandBuffer() override;
  std::vector<std::string> kernelNames() override;
  void addKernelSource(const std::string& source) override;

 private:
  friend class EmulatedCommandBuffer;
  struct Dispatch;
  // Runs one recorded dispatch; throws KernelFault.
  void run(const Dispatch& dispatch);

  const EmulatedKernel* kernels_;
  size_t kernelCount_;
  unsigned workers_;
  FiberOrder order_;
  std::mutex pipelinesMutex_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  std::mutex queueMutex_;
  std::shared_future<void> lastCommitted_;  // each command buffer waits for the one before
  std::vector<std::unique_ptr<ThreadgroupRunner>> runners_;
  FirstError firstError_;
};

}  // namespace md::emu
