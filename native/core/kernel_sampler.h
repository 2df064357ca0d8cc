// kernel_sampler.h: one sampling step on a Device, with the kernels of
// metal/ (md_sample_f16, md_argmax_f16, md_argmax_f32). The GPU twin of
// CpuSampler: same inputs, same tokens.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cpu_sampler.h"
#include "device.h"

namespace md {

// Why these inputs cannot run on the kernels (nullptr when they can): the
// sampling kernel reads float16 rows; float32 rows have the argmax kernel
// only, so they can be sampled greedily without bias or penalties.
const char* checkKernelInputs(const LogitsRow& row, const SamplingInputs& in);

// How a single float16 row is sampled: by the wide kernels
// (sampling_wide.metal) over `threadgroups` threadgroups (0: md_wide_groups
// of the vocabulary), or by md_sample_f16's one threadgroup. Batches of
// rows always take md_sample_f16, one threadgroup per row. The token is the
// same either way; tests pass every shape.
struct RowLaunch {
  bool wide = true;
  uint32_t threadgroups = 0;
};

class KernelSampler {
 public:
  // threadsPerThreadgroup: 0 for one thread per token up to 1024 or the
  // pipeline's maximum if lower (a multiple of 32); tests pass other counts.
  explicit KernelSampler(Device& device, uint32_t threadsPerThreadgroup = 0, RowLaunch rowLaunch = {});
  ~KernelSampler();

  // Samples `rows` rows of `row.size` logits each, stored one after the
  // other at row.data: row r at position + r with history_count + r tokens
  // of in.history (which must hold history_count + rows - 1). One token per
  // row, MD_NO_TOKEN where every logit is -inf. The inputs must have passed
  // checkSamplingInputs and checkKernelInputs. Thread-safe; throws
  // DeviceError.
  std::vector<uint32_t> sample(const LogitsRow& row, uint32_t rows, const SamplingInputs& in);

  // The same without waiting: the inputs are copied to device buffers
  // before it returns, and `done` runs on a device thread when the kernels
  // finished, with the tokens or an error message (then no tokens). Throws
  // DeviceError for what fails before anything runs. The sampler may be
  // destroyed before `done` runs.
  using Done = std::function<void(std::vector<uint32_t> tokens, const std::string& error)>;
  void sampleAsync(const LogitsRow& row, uint32_t rows, const SamplingInputs& in, Done done);

 private:
  struct Staging;
  class StagingPool;
  // Copies the inputs into `staging` and records the kernels.
  std::unique_ptr<CommandBuffer> encode(Staging& staging, const LogitsRow& row, uint32_t rows,
                                        const SamplingInputs& in);
  uint32_t threadsFor(const Pipeline& pipeline, uint32_t vocab) const;

  Device& device_;
  uint32_t threads_;
  RowLaunch rowLaunch_;
  // One step's buffers each; a step in flight keeps its own, so steps
  // never wait for each other on the CPU.
  std::shared_ptr<StagingPool> pool_;
};

}  // namespace md
