// kernel_sampler.h: one sampling step on a Device, with the kernels of
// metal/ (md_sample_f16, md_argmax_f16, md_argmax_f32). The GPU twin of
// CpuSampler: same inputs, same tokens.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "cpu_sampler.h"
#include "device.h"

namespace md {

// Why these inputs cannot run on the kernels (nullptr when they can): the
// sampling kernel reads float16 rows; float32 rows have the argmax kernel
// only, so they can be sampled greedily without bias or penalties.
const char* checkKernelInputs(const LogitsRow& row, const SamplingInputs& in);

class KernelSampler {
 public:
  // threadsPerThreadgroup: 0 for one thread per token up to 1024 or the
  // pipeline's maximum if lower (a multiple of 32); tests pass other counts.
  explicit KernelSampler(Device& device, uint32_t threadsPerThreadgroup = 0);

  // Samples `rows` rows of `row.size` logits each, stored one after the
  // other at row.data: row r at position + r with history_count + r tokens
  // of in.history (which must hold history_count + rows - 1). One token per
  // row, MD_NO_TOKEN where every logit is -inf. The inputs must have passed
  // checkSamplingInputs and checkKernelInputs. Thread-safe; throws
  // DeviceError.
  std::vector<uint32_t> sample(const LogitsRow& row, uint32_t rows, const SamplingInputs& in);

 private:
  Buffer& ensure(std::shared_ptr<Buffer>& buffer, size_t bytes);
  uint32_t threadsFor(const Pipeline& pipeline, uint32_t vocab) const;

  Device& device_;
  uint32_t threads_;
  std::mutex mutex_;
  std::shared_ptr<Buffer> logits_, history_, bias_, edited_, histogram_, tokens_;
};

}  // namespace md
