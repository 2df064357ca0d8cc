// count_dispatch.cpp
#include "count_dispatch.h"

#include <algorithm>

namespace md::counters {

AccessCounts countDispatch(Device& device, const std::string& kernel, const std::vector<CountedBinding>& bindings,
                           uint32_t paramsIndex, const void* params, size_t paramsBytes, uint32_t groups,
                           uint32_t threads) {
  forgetDeviceMemory();
  std::vector<const Buffer*> watched;  // each buffer once, however many bindings share it
  for (const CountedBinding& b : bindings) {
    if (std::find(watched.begin(), watched.end(), b.buffer) != watched.end()) continue;
    watched.push_back(b.buffer);
    watchDeviceMemory(b.buffer->contents(), b.buffer->length());
  }
  auto commands = device.newCommandBuffer();
  commands->setPipeline(device.pipeline(kernel));
  for (const CountedBinding& b : bindings) commands->setBuffer(b.index, *b.buffer, b.offset);
  if (params) commands->setBytes(paramsIndex, params, paramsBytes);
  commands->dispatch(groups, threads);
  startCounting();
  commands->commit();
  commands->wait();
  AccessCounts counts = stopCounting();
  forgetDeviceMemory();
  return counts;
}

MatrixCounts matrixCounts(AccessCounts all, uint64_t weightBytes) {
  MatrixCounts m;
  m.weights = all.buffers.at(0);
  m.x = all.buffers.at(1);
  m.y = all.buffers.at(2);
  m.all = std::move(all);
  m.weightBytes = weightBytes;
  return m;
}

}  // namespace md::counters
