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
// fails while running records its error on the device; the first such
// error is kept and thrown by the next wait() (or newCommandBuffer()), then
// cleared, so one failure is reported once, where the caller synchronises.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace md {

class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Memory both the CPU and the GPU address (MTLStorageModeShared).
class Buffer {
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

// Records dispatches; commit() submits them, wait() blocks until they ran.
class CommandBuffer {
 public:
  virtual ~CommandBuffer() = default;
  virtual void setPipeline(const Pipeline& pipeline) = 0;
  virtual void setBuffer(uint32_t index, Buffer& buffer, size_t offset) = 0;
  // Copies `length` bytes (at most 4096) into the command buffer.
  virtual void setBytes(uint32_t index, const void* data, size_t length) = 0;
  virtual void setThreadgroupMemory(uint32_t index, size_t length) = 0;
  // A 1-D grid of `threadgroups` groups of `threadsPerThreadgroup` threads.
  virtual void dispatch(uint32_t threadgroups, uint32_t threadsPerThreadgroup) = 0;
  virtual void commit() = 0;
  // Blocks until the work ran; throws the device's first pending error.
  virtual void wait() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual std::shared_ptr<Buffer> newBuffer(size_t length) = 0;
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
  void record(const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (message_.empty()) message_ = message;
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
};

}  // namespace md
