// emulated_kernels.h: running one kernel on the shared emulated device in
// a kernel test: float buffers in and out, a dispatch with its params.
#pragma once
#include <cstring>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "dispatch_table.h"
#include "emulated_device.h"

namespace md::testing {

inline md::emu::EmulatedDevice& device() {
  static md::emu::EmulatedDevice d;
  return d;
}

template <class T>
std::shared_ptr<md::Buffer> typedBuffer(const std::vector<T>& values) {
  auto b = device().newBuffer(values.size() * sizeof(T));
  std::memcpy(b->contents(), values.data(), values.size() * sizeof(T));
  return b;
}
inline std::shared_ptr<md::Buffer> buffer(const std::vector<float>& values) { return typedBuffer(values); }

template <class T = float>
std::vector<T> contents(md::Buffer& b, size_t n) {
  std::vector<T> out(n);
  std::memcpy(out.data(), b.contents(), n * sizeof(T));
  return out;
}

inline std::vector<float> normals(size_t n, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

// Runs `kernel` with `buffers` and `params` at [[buffer(paramsIndex)]].
template <class Params>
void runWith(const char* kernel, std::vector<std::pair<uint32_t, md::Buffer*>> buffers, uint32_t paramsIndex,
             const Params& params, uint32_t groups, uint32_t threads) {
  auto cb = device().newCommandBuffer();
  cb->setPipeline(device().pipeline(kernel));
  for (auto& [index, b] : buffers) cb->setBuffer(index, *b, 0);
  cb->setBytes(paramsIndex, &params, sizeof params);
  cb->dispatch(groups, threads);
  cb->commit();
  cb->wait();
}

// A command of `kernel` with buffers {index, buffer} and params at
// [[buffer(paramsIndex)]], for a contract to check.
template <class Params>
md::DispatchCmd command(const char* kernel, std::vector<std::pair<uint32_t, md::Buffer*>> buffers, uint32_t paramsIndex,
                        const Params& params) {
  md::DispatchCmd cmd;
  cmd.pipeline = &device().pipeline(kernel);
  for (auto& [index, b] : buffers) cmd.buffers[cmd.bufferCount++] = md::BufferBinding{b, 0, index};
  std::memcpy(cmd.params, &params, sizeof params);
  cmd.paramsSize = sizeof params;
  cmd.paramsIndex = paramsIndex;
  return cmd;
}

}  // namespace md::testing
