// kernel_usage.h: which kernels this process has dispatched, on which kind
// of device. The test suite reads it (addon.dispatchedKernels) to prove
// that every kernel of a device's library ran on that device somewhere in
// the suite (scripts/check-kernel-coverage.mjs): a kernel no test
// dispatches is a kernel a Mac would run unproven.
#pragma once
#include <atomic>
#include <string>
#include <vector>

namespace md {

// Records one dispatch of `kernel` on a device of `deviceKind` ("metal",
// "emulated"). Thread-safe; cheap after the first time for a pair.
void noteDispatchedKernel(const char* deviceKind, const std::string& kernel);

// One pipeline's entry in that record, made on its first dispatch only: a
// dispatch after that costs one relaxed atomic load (no string, no lock),
// so the record stays on in a release build's encode loop.
class KernelUsageNote {
 public:
  KernelUsageNote(const char* deviceKind, std::string kernel) : deviceKind_(deviceKind), kernel_(std::move(kernel)) {}
  void dispatched() {
    if (!noted_.load(std::memory_order_relaxed)) {
      noteDispatchedKernel(deviceKind_, kernel_);
      noted_.store(true, std::memory_order_relaxed);
    }
  }

 private:
  const char* deviceKind_;  // a string literal
  std::string kernel_;
  std::atomic<bool> noted_{false};
};

// "kind:kernel" for every pair recorded so far, sorted.
std::vector<std::string> dispatchedKernels();

}  // namespace md
