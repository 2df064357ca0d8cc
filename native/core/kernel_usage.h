// kernel_usage.h: which kernels this process has dispatched, on which kind
// of device. The test suite reads it (addon.dispatchedKernels) to prove
// that every kernel of a device's library ran on that device somewhere in
// the suite (scripts/check-kernel-coverage.mjs): a kernel no test
// dispatches is a kernel a Mac would run unproven.
#pragma once
#include <string>
#include <vector>

namespace md {

// Records one dispatch of `kernel` on a device of `deviceKind` ("metal",
// "emulated"). Thread-safe; cheap after the first time for a pair.
void noteDispatchedKernel(const char* deviceKind, const std::string& kernel);

// "kind:kernel" for every pair recorded so far, sorted.
std::vector<std::string> dispatchedKernels();

}  // namespace md
