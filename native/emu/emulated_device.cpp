// emulated_device.cpp: buffers, pipelines and command buffers on the CPU.
#include "emulated_device.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <thread>

#include "../core/kernel_usage.h"
#include "emulated_queue.h"

namespace md::emu {
namespace {

class EmulatedBuffer : public Buffer {
 public:
  // Exactly `length` bytes, so AddressSanitizer sees a kernel that reads
  // past the end of a buffer. Zeroed, as Metal's new buffers are. Aligned
  // to more than a 128-byte memory line (Metal's are page-aligned), so the
  // access counters see the lines a GPU would.
  explicit EmulatedBuffer(size_t length)
      : bytes_(static_cast<unsigned char*>(::operator new[](length ? length : 1, std::align_val_t(kAlignment)))),
        length_(length) {
    std::memset(bytes_.get(), 0, length ? length : 1);
  }
  void* contents() override { return bytes_.get(); }
  size_t length() const override { return length_; }

 private:
  static constexpr size_t kAlignment = 256;
  struct AlignedDelete {
    void operator()(unsigned char* p) const { ::operator delete[](p, std::align_val_t(kAlignment)); }
  };
  std::unique_ptr<unsigned char, AlignedDelete> bytes_;
  size_t length_;
};

class EmulatedPipeline : public Pipeline {
 public:
  explicit EmulatedPipeline(const EmulatedKernel& kernel)
      : kernel_(kernel), name_(kernel.name), usage_("emulated", kernel.name) {}
  const std::string& name() const override { return name_; }
  uint32_t maxThreadsPerThreadgroup() const override { return 1024; }
  const EmulatedKernel& kernel() const { return kernel_; }
  void noteDispatch() const { usage_.dispatched(); }

 private:
  const EmulatedKernel& kernel_;
  std::string name_;
  mutable KernelUsageNote usage_;
};

}  // namespace

// Memory someone else owns (a mapped file), kept alive by `owner`.
class WrappedBuffer : public Buffer {
 public:
  WrappedBuffer(const void* data, size_t length, std::shared_ptr<const void> owner)
      : data_(const_cast<void*>(data)), length_(length), owner_(std::move(owner)) {}
  void* contents() override { return data_; }
  size_t length() const override { return length_; }

 private:
  void* data_;
  size_t length_;
  std::shared_ptr<const void> owner_;
};

class EmulatedCommandBuffer : public CommandBuffer {
 public:
  EmulatedCommandBuffer(std::shared_ptr<EmulatedDevice::Queue> queue)
      : queue_(std::move(queue)), work_(std::make_shared<EmulatedSubmission>()) {
    work_->report = std::make_shared<CompletionReport>(queue_->errors());
  }
  // Never waits: committed work runs on, holding what it needs.
  ~EmulatedCommandBuffer() override = default;

  void setPipeline(const Pipeline& pipeline) override {
    requireRecording("setPipeline");
    pipeline_ = &static_cast<const EmulatedPipeline&>(pipeline);
    kernel_ = &pipeline_->kernel();
  }
  void setBuffer(uint32_t index, Buffer& buffer, size_t offset) override {
    requireRecording("setBuffer");
    if (offset > buffer.length())
      throw DeviceError("setBuffer(" + std::to_string(index) + "): offset " + std::to_string(offset) +
                        " is past the end of a " + std::to_string(buffer.length()) + "-byte buffer");
    Slot& s = buffers(index);
    s = Slot{};
    s.kind = Slot::BufferSlot;
    s.buffer = buffer.shared_from_this();
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
    if (std::string problem = threadgroupMemoryProblem(length); !problem.empty())
      throw DeviceError("setThreadgroupMemory(" + std::to_string(index) + "): " + problem);
    if (threadgroupMemory_.size() <= index) threadgroupMemory_.resize(index + 1, 0);
    threadgroupMemory_[index] = length;
  }

  void labelNextDispatch(const std::string& label) override { nextLabel_ = label; }

  void dispatch(uint32_t groups, uint32_t threads) override {
    requireRecording("dispatch");
    if (!kernel_) throw DeviceError("dispatch: no pipeline set");
    if (threads == 0 || threads % kSimdWidth != 0 || threads > 1024)
      throw DeviceError(std::string(kernel_->name) +
                        ": threads per threadgroup must be a multiple of 32 from 32 to 1024, not " +
                        std::to_string(threads));
    pipeline_->noteDispatch();
    EmulatedDispatch d;
    d.kernel = kernel_;
    d.label = std::move(nextLabel_);
    nextLabel_.clear();
    d.groups = groups;
    d.threads = threads;
    d.slots = bufferSlots_;
    // Threadgroup memory goes to the kernel's threadgroup parameters only:
    // it must never stand in for a buffer that was not bound.
    if (threadgroupMemory_.size() != kernel_->threadgroupArguments)
      throw DeviceError(std::string(kernel_->name) + ": takes " + std::to_string(kernel_->threadgroupArguments) +
                        " threadgroup memory arguments, but " + std::to_string(threadgroupMemory_.size()) +
                        " were set");
    const uint32_t bufferArguments = kernel_->arguments - kernel_->threadgroupArguments;
    if (bufferSlots_.size() < bufferArguments)
      throw DeviceError(std::string(kernel_->name) + ": takes " + std::to_string(bufferArguments) + " buffers, but " +
                        std::to_string(bufferSlots_.size()) + " were bound");
    for (uint32_t i = 0; i < bufferArguments; ++i)
      if (d.slots[i].kind == Slot::Unbound)
        throw DeviceError(std::string(kernel_->name) + ": buffer " + std::to_string(i) + " is not bound");
    d.slots.resize(bufferArguments);  // extra bindings the kernel does not take
    for (size_t length : threadgroupMemory_) {
      Slot s;
      s.kind = Slot::ThreadgroupMemory;
      s.threadgroupLength = length;
      d.slots.push_back(std::move(s));
    }
    work_->dispatches.push_back(std::move(d));
  }

  void commit(Completion onCompleted = {}) override {
    requireRecording("commit");
    committed_ = true;
    bufferSlots_.clear();
    work_->onCompleted = std::move(onCompleted);
    queue_->submit(work_);
  }

  void wait() override {
    if (!committed_) throw DeviceError("wait: the command buffer was not committed");
    work_->report->raiseAtWait(work_->waitUntilDone());
  }

 private:
  using Slot = EmulatedDispatch::Slot;

  void requireRecording(const char* what) {
    if (committed_) throw DeviceError(std::string(what) + ": the command buffer was already committed");
  }
  Slot& buffers(uint32_t index) {
    if (index >= kMaxKernelArguments) throw DeviceError("buffer index " + std::to_string(index) + " out of range");
    if (bufferSlots_.size() <= index) bufferSlots_.resize(index + 1);
    return bufferSlots_[index];
  }

  std::shared_ptr<EmulatedDevice::Queue> queue_;
  std::shared_ptr<EmulatedSubmission> work_;
  const EmulatedPipeline* pipeline_ = nullptr;  // the last one set (the device owns it)
  const EmulatedKernel* kernel_ = nullptr;      // its kernel
  std::string nextLabel_;                       // for the next dispatch only
  std::vector<Slot> bufferSlots_;
  std::vector<size_t> threadgroupMemory_;
  bool committed_ = false;
};

EmulatedDevice::EmulatedDevice(const EmulatedKernel* kernels, size_t kernelCount, unsigned workers)
    : kernels_(kernels), kernelCount_(kernelCount) {
  if (!kernels_) kernels_ = emulatedKernels(&kernelCount_);
  try {
    order_ = fiberOrderFromEnvironment();
    sumOrder_ = simdSumOrderFromEnvironment();
  } catch (const std::invalid_argument& e) {
    throw DeviceError(e.what());
  }
  queue_ =
      std::make_shared<Queue>(order_, sumOrder_, workers ? workers : std::max(1u, std::thread::hardware_concurrency()));
  queue_->start();
}

EmulatedDevice::~EmulatedDevice() { queue_->shutdown(); }

std::string EmulatedDevice::name() const {
  return std::string("emulated (CPU fibers, ") + fiberOrderName(order_) + " order" +
         (sumOrder_ == SimdSumOrder::Butterfly ? ", butterfly sums)" : ")");
}

std::shared_ptr<Buffer> EmulatedDevice::newBuffer(size_t length) { return std::make_shared<EmulatedBuffer>(length); }

std::shared_ptr<Buffer> EmulatedDevice::wrapMemory(const void* data, size_t length, std::shared_ptr<const void> owner) {
  const std::string problem = wrapMemoryProblem(data, length, osPageSize());
  if (!problem.empty()) throw DeviceError(problem);
  return std::make_shared<WrappedBuffer>(data, length, std::move(owner));
}

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
  queue_->errors()->raise();
  return std::make_unique<EmulatedCommandBuffer>(queue_);
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

}  // namespace md::emu
