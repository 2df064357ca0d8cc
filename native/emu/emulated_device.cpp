// emulated_device.cpp: buffers, pipelines and command buffers on the CPU.
#include "emulated_device.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <thread>

namespace md::emu {
namespace {

class EmulatedBuffer : public Buffer {
 public:
  // Exactly `length` bytes, so AddressSanitizer sees a kernel that reads
  // past the end of a buffer.
  explicit EmulatedBuffer(size_t length) : bytes_(new unsigned char[length ? length : 1]), length_(length) {}
  void* contents() override { return bytes_.get(); }
  size_t length() const override { return length_; }

 private:
  std::unique_ptr<unsigned char[]> bytes_;
  size_t length_;
};

class EmulatedPipeline : public Pipeline {
 public:
  explicit EmulatedPipeline(const EmulatedKernel& kernel) : kernel_(kernel), name_(kernel.name) {}
  const std::string& name() const override { return name_; }
  uint32_t maxThreadsPerThreadgroup() const override { return 1024; }
  const EmulatedKernel& kernel() const { return kernel_; }

 private:
  const EmulatedKernel& kernel_;
  std::string name_;
};

}  // namespace

// One dispatch as recorded: what each argument slot points at.
struct EmulatedDevice::Dispatch {
  const EmulatedKernel* kernel = nullptr;
  struct Slot {
    enum Kind : uint8_t { Unbound, BufferSlot, Bytes, ThreadgroupMemory } kind = Unbound;
    Buffer* buffer = nullptr;
    size_t offset = 0;
    std::vector<unsigned char> bytes;  // setBytes' copy
    size_t threadgroupLength = 0;
  };
  std::vector<Slot> slots;  // buffers, then threadgroup memory, as the kernel's parameters
  uint32_t groups = 0;
  uint32_t threads = 0;
};

class EmulatedCommandBuffer : public CommandBuffer {
 public:
  explicit EmulatedCommandBuffer(EmulatedDevice& device) : device_(device) {}
  ~EmulatedCommandBuffer() override {
    if (done_.valid()) done_.wait();
  }

  void setPipeline(const Pipeline& pipeline) override {
    requireRecording("setPipeline");
    kernel_ = &static_cast<const EmulatedPipeline&>(pipeline).kernel();
  }
  void setBuffer(uint32_t index, Buffer& buffer, size_t offset) override {
    requireRecording("setBuffer");
    if (offset > buffer.length())
      throw DeviceError("setBuffer(" + std::to_string(index) + "): offset " + std::to_string(offset) +
                        " is past the end of a " + std::to_string(buffer.length()) + "-byte buffer");
    Slot& s = buffers(index);
    s = Slot{};
    s.kind = Slot::BufferSlot;
    s.buffer = &buffer;
    s.offset = offset;
  }
  void setBytes(uint32_t index, const void* data, size_t length) override {
    requireRecording("setBytes");
    if (length > 4096) throw DeviceError("setBytes(" + std::to_string(index) + "): more than 4096 bytes");
    Slot& s = buffers(index);
    s = Slot{};
    s.kind = Slot::Bytes;
    s.bytes.assign(static_cast<const unsigned char*>(data), static_cast<const unsigned char*>(data) + length);
  }
  void setThreadgroupMemory(uint32_t index, size_t length) override {
    requireRecording("setThreadgroupMemory");
    if (index >= kMaxKernelArguments) throw DeviceError("setThreadgroupMemory: index out of range");
    if (threadgroupMemory_.size() <= index) threadgroupMemory_.resize(index + 1, 0);
    threadgroupMemory_[index] = length;
  }

  void dispatch(uint32_t groups, uint32_t threads) override {
    requireRecording("dispatch");
    if (!kernel_) throw DeviceError("dispatch: no pipeline set");
    if (threads == 0 || threads % kSimdWidth != 0 || threads > 1024)
      throw DeviceError(std::string(kernel_->name) + ": threads per threadgroup must be a multiple of 32 from 32 to 1024, not " +
                        std::to_string(threads));
    EmulatedDevice::Dispatch d;
    d.kernel = kernel_;
    d.groups = groups;
    d.threads = threads;
    d.slots = bufferSlots_;
    for (size_t length : threadgroupMemory_) {
      Slot s;
      s.kind = Slot::ThreadgroupMemory;
      s.threadgroupLength = length;
      d.slots.push_back(std::move(s));
    }
    if (d.slots.size() < kernel_->arguments)
      throw DeviceError(std::string(kernel_->name) + ": takes " + std::to_string(kernel_->arguments) +
                        " buffers and threadgroup allocations, but " + std::to_string(d.slots.size()) + " were bound");
    for (uint32_t i = 0; i < kernel_->arguments; ++i)
      if (d.slots[i].kind == Slot::Unbound)
        throw DeviceError(std::string(kernel_->name) + ": buffer " + std::to_string(i) + " is not bound");
    dispatches_.push_back(std::move(d));
  }

  void commit() override {
    requireRecording("commit");
    committed_ = true;
    // Command buffers run one at a time in commit order, as on a GPU queue.
    std::lock_guard<std::mutex> lock(device_.queueMutex_);
    std::shared_future<void> previous = device_.lastCommitted_;
    done_ = std::async(std::launch::async, [this, previous] {
      if (previous.valid()) previous.wait();
      try {
        for (const auto& d : dispatches_) device_.run(d);
      } catch (const std::exception& e) {
        device_.firstError_.record(e.what());
      }
    }).share();
    device_.lastCommitted_ = done_;
  }

  void wait() override {
    if (!committed_) throw DeviceError("wait: the command buffer was not committed");
    done_.wait();
    device_.firstError_.raise();
  }

 private:
  using Slot = EmulatedDevice::Dispatch::Slot;

  void requireRecording(const char* what) {
    if (committed_) throw DeviceError(std::string(what) + ": the command buffer was already committed");
  }
  Slot& buffers(uint32_t index) {
    if (index >= kMaxKernelArguments) throw DeviceError("buffer index " + std::to_string(index) + " out of range");
    if (bufferSlots_.size() <= index) bufferSlots_.resize(index + 1);
    return bufferSlots_[index];
  }

  EmulatedDevice& device_;
  const EmulatedKernel* kernel_ = nullptr;
  std::vector<Slot> bufferSlots_;
  std::vector<size_t> threadgroupMemory_;
  std::vector<EmulatedDevice::Dispatch> dispatches_;
  bool committed_ = false;
  std::shared_future<void> done_;
};

EmulatedDevice::EmulatedDevice(const EmulatedKernel* kernels, size_t kernelCount, unsigned workers)
    : kernels_(kernels), kernelCount_(kernelCount) {
  if (!kernels_) kernels_ = emulatedKernels(&kernelCount_);
  workers_ = workers ? workers : std::max(1u, std::thread::hardware_concurrency());
  try {
    order_ = fiberOrderFromEnvironment();
  } catch (const std::invalid_argument& e) {
    throw DeviceError(e.what());
  }
}

EmulatedDevice::~EmulatedDevice() {
  // Queued work uses the runners and the error slot: let it finish first.
  std::shared_future<void> last;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    last = lastCommitted_;
  }
  if (last.valid()) last.wait();
}

std::string EmulatedDevice::name() const {
  return std::string("emulated (CPU fibers, ") + fiberOrderName(order_) + " order)";
}

std::shared_ptr<Buffer> EmulatedDevice::newBuffer(size_t length) { return std::make_shared<EmulatedBuffer>(length); }

const Pipeline& EmulatedDevice::pipeline(const std::string& name) {
  std::lock_guard<std::mutex> lock(pipelinesMutex_);
  auto it = pipelines_.find(name);
  if (it != pipelines_.end()) return *it->second;
  for (size_t i = 0; i < kernelCount_; ++i) {
    if (name == kernels_[i].name) return *(pipelines_[name] = std::make_unique<EmulatedPipeline>(kernels_[i]));
  }
  throw DeviceError("no kernel named '" + name + "' (emulated device)");
}

std::unique_ptr<CommandBuffer> EmulatedDevice::newCommandBuffer() {
  firstError_.raise();
  return std::make_unique<EmulatedCommandBuffer>(*this);
}

std::vector<std::string> EmulatedDevice::kernelNames() {
  std::vector<std::string> names;
  for (size_t i = 0; i < kernelCount_; ++i) names.push_back(kernels_[i].name);
  std::sort(names.begin(), names.end());
  return names;
}

void EmulatedDevice::addKernelSource(const std::string&) {
  throw DeviceError(
      "addKernelSource: the emulated device runs only the kernels compiled into the addon (metal/*.metal, listed by "
      "kernelNames); kernels from source need the Metal device");
}

void EmulatedDevice::run(const Dispatch& d) {
  using Slot = Dispatch::Slot;
  const unsigned workers = std::max(1u, std::min<unsigned>(workers_, d.groups));
  while (runners_.size() < workers)
    runners_.push_back(std::make_unique<ThreadgroupRunner>(order_, 0x9E3779B9u * (runners_.size() + 1)));

  std::atomic<uint32_t> next{0};
  std::atomic<bool> failed{false};
  std::string failure;
  std::mutex failureMutex;
  auto work = [&](unsigned w) {
    // Each worker binds its own threadgroup memory.
    BoundArguments bound{};
    std::vector<std::unique_ptr<unsigned char[]>> threadgroupMemory;
    for (size_t i = 0; i < d.slots.size() && i < kMaxKernelArguments; ++i) {
      const Slot& s = d.slots[i];
      if (s.kind == Slot::BufferSlot) bound.slots[i] = static_cast<unsigned char*>(s.buffer->contents()) + s.offset;
      if (s.kind == Slot::Bytes) bound.slots[i] = const_cast<unsigned char*>(s.bytes.data());
      if (s.kind == Slot::ThreadgroupMemory) {
        threadgroupMemory.emplace_back(new unsigned char[s.threadgroupLength ? s.threadgroupLength : 1]);
        bound.slots[i] = threadgroupMemory.back().get();
      }
    }
    for (uint32_t g; !failed && (g = next.fetch_add(1)) < d.groups;) {
      try {
        runners_[w]->run(d.kernel->invoke, &bound, g, d.threads);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(failureMutex);
        if (!failed.exchange(true)) failure = std::string(d.kernel->name) + ": " + e.what();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned w = 1; w < workers; ++w) helpers.emplace_back(work, w);
  work(0);
  for (auto& t : helpers) t.join();
  if (failed) throw KernelFault(failure);
}

}  // namespace md::emu
