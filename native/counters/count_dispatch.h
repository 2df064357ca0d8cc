// count_dispatch.h: one dispatch on a counting emulated device, with its
// buffers watched, and what it did to memory.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "access_recorder.h"
#include "device.h"

namespace md::counters {

struct CountedBinding {
  uint32_t index;
  Buffer* buffer;
  uint64_t offset = 0;
};

// Runs `kernel` once (`groups` x `threads`) with `bindings` and `params` at
// [[buffer(paramsIndex)]]; returns its counts, with the buffers in the order
// they are first bound (a buffer bound twice is counted once).
AccessCounts countDispatch(Device& device, const std::string& kernel, const std::vector<CountedBinding>& bindings,
                           uint32_t paramsIndex, const void* params, size_t paramsBytes, uint32_t groups,
                           uint32_t threads);

// A matrix kernel's counts (y = W x, Y = X W^T): the whole dispatch, and W's,
// x's and y's shares, bound in that order.
struct MatrixCounts {
  AccessCounts all;
  BufferCounts weights, x, y;
  uint64_t weightBytes = 0;  // the matrix's size
};
MatrixCounts matrixCounts(AccessCounts all, uint64_t weightBytes);

}  // namespace md::counters
