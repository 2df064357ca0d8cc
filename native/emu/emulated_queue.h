// emulated_queue.h: the emulated device's command queue. One thread runs
// committed command buffers in commit order, as a Metal queue does, then
// reports each one's outcome (device.h: CompletionReport).
#pragma once
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../core/device.h"
#include "emulated_device.h"
#include "kernel_binding.h"
#include "threadgroup_runner.h"

namespace md::emu {

// One dispatch as recorded: what each argument slot points at. Buffers are
// shared, so a command buffer keeps them alive until it ran, as Metal does.
struct EmulatedDispatch {
  struct Slot {
    enum Kind : uint8_t { Unbound, BufferSlot, Bytes, ThreadgroupMemory } kind = Unbound;
    std::shared_ptr<Buffer> buffer;
    size_t offset = 0;
    std::vector<unsigned char> bytes;  // setBytes' copy
    size_t threadgroupLength = 0;
  };
  const EmulatedKernel* kernel = nullptr;
  std::string label;        // labelNextDispatch's, for errors ("" for none)
  std::vector<Slot> slots;  // buffers, then threadgroup memory, as the kernel's parameters
  uint32_t groups = 0;
  uint32_t threads = 0;
};

// A committed command buffer, shared by its CommandBuffer object and the
// queue: either may go first.
struct EmulatedSubmission {
  std::vector<EmulatedDispatch> dispatches;
  Completion onCompleted;
  std::shared_ptr<CompletionReport> report;

  // Set by the queue when the work ran and its completion returned.
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::string error;

  // Blocks until done; returns the error ("" if none).
  std::string waitUntilDone();
};

class EmulatedDevice::Queue : public std::enable_shared_from_this<Queue> {
 public:
  Queue(FiberOrder order, SimdSumOrder sumOrder, unsigned workers);
  // Gives its threadgroup runners back to the process's pool.
  ~Queue();
  // Starts the thread; it holds the queue until shutdown() and an empty queue.
  void start();
  // Queues `work`; throws DeviceError after shutdown().
  void submit(std::shared_ptr<EmulatedSubmission> work);
  // The thread finishes what is queued, then ends; waited for only when it
  // is idle (the device's destructor never blocks on work in flight).
  void shutdown();
  const std::shared_ptr<FirstError>& errors() const { return errors_; }

 private:
  void loop();
  // Runs one dispatch; throws KernelFault.
  void run(const EmulatedDispatch& dispatch);

  const FiberOrder order_;
  const SimdSumOrder sumOrder_;
  const unsigned workers_;
  std::shared_ptr<FirstError> errors_ = std::make_shared<FirstError>();
  std::vector<std::unique_ptr<ThreadgroupRunner>> runners_;  // the queue thread's only; borrowed from a pool
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<EmulatedSubmission>> pending_;
  bool closing_ = false;
  bool running_ = false;  // a command buffer is being run
  std::thread thread_;
};

}  // namespace md::emu
