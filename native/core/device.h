// device.h: the GPU as the rest of native/ sees it, with no Metal and no
// N-API in sight. Two implementations: native/metal (Objective-C++, the
// real GPU) and native/emu (the same kernels on CPU fibers).
//
// The shape follows Metal's: shared-storage buffers the CPU reads and
// writes directly, pipelines looked up by kernel name (each device caches
// them, so the name is the cache key), and command buffers that record
// dispatches and run asynchronously after commit().
//
// Errors: anything that fails synchronously (an unknown kernel, a compile
// error, a bad dispatch) throws DeviceError at once. A command buffer that
// fails while running reports its error once: to its completion callback
// if it has one, else at its wait(), else (nobody asked) the device keeps
// the first such error and throws it at the next newCommandBuffer() or
// wait(), as MLX does with asynchronous GPU errors.
//
// Lifetimes: a committed command buffer keeps what it uses alive until it
// completed (the buffers it binds, the device's queue and error slot), so
// dropping it, its buffers or the device with work in flight is safe; the
// completion still runs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace md {

class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Metal's rules for threadgroup memory: a length given to
// setThreadgroupMemory is a multiple of 16 bytes, and Apple GPUs give a
// threadgroup 32 KB in all.
constexpr size_t kThreadgroupMemoryAlignment = 16;
constexpr size_t kMaxThreadgroupMemory = 32768;

// Why `length` cannot be a threadgroup memory length, or "".
inline std::string threadgroupMemoryProblem(size_t length) {
  if (length % kThreadgroupMemoryAlignment == 0 && length <= kMaxThreadgroupMemory) return "";
  return "threadgroup memory of " + std::to_string(length) + " bytes: Metal takes a multiple of " +
         std::to_string(kThreadgroupMemoryAlignment) + " bytes, at most " + std::to_string(kMaxThreadgroupMemory);
}

// The OS page: what Metal's newBufferWithBytesNoCopy aligns to (16 KB on
// Apple silicon, 4 KB on Linux and Intel Macs).
inline size_t osPageSize() { return size_t(sysconf(_SC_PAGESIZE)); }

// Ranges of a mapped file are wrapped from a multiple of this, the largest
// page of the platforms: the same ranges on Linux as on a Mac, so the tests
// here run the offsets a Mac runs.
constexpr uint64_t kWrapGranularity = 16384;

// Why `data` cannot be wrapped without a copy, or "".
inline std::string wrapMemoryProblem(const void* data, size_t length, size_t pageSize) {
  if (length == 0) return "wrapMemory: the length is 0";
  if (reinterpret_cast<uintptr_t>(data) % pageSize != 0)
    return "wrapMemory: the memory is not aligned to the " + std::to_string(pageSize) +
           "-byte page (Metal's newBufferWithBytesNoCopy needs it)";
  return "";
}

// Memory both the CPU and the GPU address (MTLStorageModeShared). Always
// owned by a shared_ptr (Device::newBuffer), which command buffers share
// while they run.
class Buffer : public std::enable_shared_from_this<Buffer> {
 public:
  virtual ~Buffer() = default;
  virtual void* contents() = 0;
  virtual size_t length() const = 0;
};

// A compiled kernel.
class Pipeline {
 public:
  virtual ~Pipeline() = default;
  virtual const std::string& name() const = 0;
  // The most threads one threadgroup of this kernel may have.
  virtual uint32_t maxThreadsPerThreadgroup() const = 0;
};

// Called once, on a device thread, when a committed command buffer has
// finished: with its error message, or an empty string on success. It
// must not throw, and should return quickly (it holds up the next
// completion).
using Completion = std::function<void(const std::string& error)>;

// Records dispatches; commit() submits them, wait() blocks until they ran.
class CommandBuffer {
 public:
  virtual ~CommandBuffer() = default;
  virtual void setPipeline(const Pipeline& pipeline) = 0;
  virtual void setBuffer(uint32_t index, Buffer& buffer, size_t offset) = 0;
  // Copies `length` bytes (at most 4096) into the command buffer.
  virtual void setBytes(uint32_t index, const void* data, size_t length) = 0;
  virtual void setThreadgroupMemory(uint32_t index, size_t length) = 0;
  // Names the next dispatch (a table command's label, a sampling launch's):
  // an error in it names the label with the kernel. Until then, and for a
  // dispatch no label precedes, errors name the kernel alone.
  virtual void labelNextDispatch(const std::string& label) = 0;
  // A 1-D grid of `threadgroups` groups of `threadsPerThreadgroup` threads.
  virtual void dispatch(uint32_t threadgroups, uint32_t threadsPerThreadgroup) = 0;
  // Submits the work; `onCompleted` (optional) hears how it ended. Every
  // implementation takes the same default.
  virtual void commit(Completion onCompleted = {}) = 0;
  // Blocks until the work ran. Throws this command buffer's error, else an
  // earlier one the device kept.
  virtual void wait() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  // `length` bytes, zeroed.
  virtual std::shared_ptr<Buffer> newBuffer(size_t length) = 0;
  // `length` bytes of memory the caller has, seen by the GPU without a
  // copy (Metal's newBufferWithBytesNoCopy): `data` must be aligned to the
  // OS page (DeviceError otherwise, on every device, so that a misaligned
  // range fails here as on a Mac), and `owner` is kept until the buffer is
  // freed. Read-only memory (a mapped file) is only for kernels that read.
  virtual std::shared_ptr<Buffer> wrapMemory(const void* data, size_t length, std::shared_ptr<const void> owner) = 0;
  // The pipeline of kernel `name`, compiled on first use and cached.
  virtual const Pipeline& pipeline(const std::string& name) = 0;
  virtual std::unique_ptr<CommandBuffer> newCommandBuffer() = 0;
  // Every name pipeline() accepts, sorted.
  virtual std::vector<std::string> kernelNames() = 0;
  // Compiles Metal source and adds its kernels, for users' own forward
  // passes. Only a device that compiles Metal can: the emulated device runs
  // the kernels compiled into the addon and throws DeviceError.
  virtual void addKernelSource(const std::string& source) = 0;
};

// The first error of any command buffer of one device, kept until someone
// synchronises (MLX does the same with asynchronous GPU errors).
class FirstError {
 public:
  // Keeps `message` unless an error is kept already; `source` names who
  // recorded it, for forget().
  void record(const std::string& message, const void* source = nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (message_.empty()) {
      message_ = message;
      source_ = source;
    }
  }
  // Drops the kept error if `source` recorded it: it was reported already.
  void forget(const void* source) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!message_.empty() && source_ == source) message_.clear();
  }
  // Throws DeviceError with the kept message, if any, and forgets it.
  void raise() {
    std::string message;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      message.swap(message_);
    }
    if (!message.empty()) throw DeviceError(message);
  }

 private:
  std::mutex mutex_;
  std::string message_;
  const void* source_ = nullptr;
};

// How a command buffer's error is reported exactly once, shared by the
// command buffer and its completion handler (which may run before or after
// wait() returns, on Metal).
class CompletionReport {
 public:
  explicit CompletionReport(std::shared_ptr<FirstError> deviceErrors) : deviceErrors_(std::move(deviceErrors)) {}

  // On the device thread, once the work ended: to `onCompleted` if given;
  // else an error wait() has not reported yet is kept by the device.
  void complete(const std::string& error, const Completion& onCompleted) {
    if (onCompleted) {
      onCompleted(error);
      return;
    }
    if (error.empty()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!reported_) deviceErrors_->record(error, this);
  }

  // In wait(), once the work ended, with the command buffer's own error:
  // throws it (and the device forgets it), else the device's kept one.
  void raiseAtWait(const std::string& ownError) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reported_ = true;
    }
    if (!ownError.empty()) {
      deviceErrors_->forget(this);
      throw DeviceError(ownError);
    }
    deviceErrors_->raise();
  }

 private:
  std::shared_ptr<FirstError> deviceErrors_;
  std::mutex mutex_;
  bool reported_ = false;
};

}  // namespace md
