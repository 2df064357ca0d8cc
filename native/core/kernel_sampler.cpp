// kernel_sampler.cpp: staging, encoding and reading back one sampling step.
#include "kernel_sampler.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "sampling_launches.h"

namespace md {

const char* checkKernelInputs(const LogitsRow& row, const SamplingInputs& in) {
  if (row.format == LogitsFormat::Float16) return nullptr;
  const md_sampling_params& p = in.params;
  if (!md_plain_greedy(p.temperature, p.bias_count, p.history_count, p.history_window, p.repeat_penalty,
                       p.frequency_penalty, p.presence_penalty))
    return "logits: the GPU sampling kernel reads float16 logits; float32 logits run only greedily (temperature 0) "
           "without token bias or penalties";
  return nullptr;
}

// The device buffers of one sampling step, grown as needed and reused.
struct KernelSampler::Staging {
  std::shared_ptr<Buffer> logits, history, bias, edited, histogram, tokens, marks, mask, partials, state;

  std::shared_ptr<Buffer>& of(SamplingBuffer b) {
    switch (b) {
      case SamplingBuffer::Logits: return logits;
      case SamplingBuffer::History: return history;
      case SamplingBuffer::Bias: return bias;
      case SamplingBuffer::Edited: return edited;
      case SamplingBuffer::Histogram: return histogram;
      case SamplingBuffer::Tokens: return tokens;
      case SamplingBuffer::Marks: return marks;
      case SamplingBuffer::Mask: return mask;
      case SamplingBuffer::Partials: return partials;
      case SamplingBuffer::State: return state;
    }
    throw std::logic_error("KernelSampler: unknown buffer");
  }
};

// Idle Staging sets, shared with the completions of steps in flight (a
// completion holds its set until it gives it back).
class KernelSampler::StagingPool {
 public:
  std::shared_ptr<Staging> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.empty()) return std::make_shared<Staging>();
    auto staging = std::move(idle_.back());
    idle_.pop_back();
    return staging;
  }
  void give(std::shared_ptr<Staging> staging) {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(staging));
  }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<Staging>> idle_;
};

namespace {

Buffer& ensure(Device& device, std::shared_ptr<Buffer>& buffer, size_t bytes) {
  bytes = std::max<size_t>(bytes, 4);
  if (!buffer || buffer->length() < bytes) buffer = device.newBuffer(bytes);
  return *buffer;
}

std::vector<uint32_t> tokensOf(Buffer& tokens, uint32_t rows) {
  const auto* out = static_cast<const uint32_t*>(tokens.contents());
  return std::vector<uint32_t>(out, out + rows);
}

}  // namespace

KernelSampler::KernelSampler(Device& device, uint32_t threadsPerThreadgroup, RowLaunch rowLaunch)
    : device_(device), threads_(threadsPerThreadgroup), rowLaunch_(rowLaunch), pool_(std::make_shared<StagingPool>()) {}

KernelSampler::~KernelSampler() = default;

// One thread per token up to 1024 (or the pipeline's maximum): below
// 1024 tokens the extra threads would have nothing to read.
uint32_t KernelSampler::threadsFor(const Pipeline& pipeline, uint32_t vocab) const {
  uint32_t limit = std::min<uint32_t>(1024, pipeline.maxThreadsPerThreadgroup()) / 32 * 32;
  if (limit == 0) throw DeviceError(pipeline.name() + ": the pipeline allows fewer than 32 threads per threadgroup");
  if (threads_) return std::min(threads_, limit);
  return std::min(limit, std::max<uint32_t>(32, (vocab + 31) / 32 * 32));
}

std::unique_ptr<CommandBuffer> KernelSampler::encode(Staging& staging, const LogitsRow& row, uint32_t rows,
                                                     const SamplingInputs& in) {
  const md_sampling_params& p = in.params;
  const bool half = row.format == LogitsFormat::Float16;
  const size_t rowBytes = size_t(row.size) * (half ? 2 : 4);

  Buffer& logits = ensure(device_, staging.logits, rowBytes * rows);
  std::memcpy(logits.contents(), row.data, rowBytes * rows);
  ensure(device_, staging.tokens, size_t(rows) * 4);
  const bool masked = (p.flags & MD_FLAG_TOKEN_MASK) != 0;
  const size_t maskBytes = size_t(md_mask_words(row.size)) * 4 * rows;
  Buffer& mask = ensure(device_, staging.mask, masked ? maskBytes : 4);
  if (masked) std::memcpy(mask.contents(), in.mask, maskBytes);

  SamplingPlan plan;
  plan.vocab = row.size;
  plan.rows = rows;
  plan.half = half;
  plan.sample = half;  // float32 rows are greedy (checkKernelInputs)
  plan.wide = rows == 1 && rowLaunch_.wide;
  plan.groups = rowLaunch_.threadgroups;
  const SamplingWork work = samplingWork(p, false);
  plan.edits = work.edits;
  plan.histogram = work.histogram;
  plan.masked = work.masked;
  if (half) {
    // Row r reads history_count + r tokens (the drafts before it).
    const size_t historyTokens = size_t(p.history_count) + rows - 1;
    if (historyTokens > 0 && in.history == nullptr)
      throw DeviceError("history: " + std::to_string(rows) + " rows need history_count + rows - 1 tokens of history");
    Buffer& history = ensure(device_, staging.history, historyTokens * 4);
    if (historyTokens) std::memcpy(history.contents(), in.history, historyTokens * 4);
    Buffer& bias = ensure(device_, staging.bias, size_t(p.bias_count) * sizeof(md_bias_entry));
    auto* entries = static_cast<md_bias_entry*>(bias.contents());
    for (uint32_t i = 0; i < p.bias_count; ++i) entries[i] = {in.biasTokens[i], in.biasValues[i]};
    ensure(device_, staging.edited, rowBytes * rows);
    ensure(device_, staging.histogram, size_t(rows) * MD_HALF_KEY_BINS * 4);
    ensure(device_, staging.marks, size_t(row.size) * 4 * rows);
  }
  if (plan.wide) {
    const uint32_t groups = plan.groups ? plan.groups : md_wide_groups(row.size);
    ensure(device_, staging.partials, size_t(groups) * sizeof(md_wide_partial));
    ensure(device_, staging.state, sizeof(md_wide_state));
  }
  const md_argmax_params args{row.size, p.flags & MD_FLAG_TOKEN_MASK};
  auto commands = device_.newCommandBuffer();
  for (const SamplingLaunch& launch : samplingLaunches(plan)) {
    const Pipeline& pipeline = device_.pipeline(launch.kernel);
    commands->setPipeline(pipeline);
    for (const auto& [index, buffer] : launch.buffers) commands->setBuffer(index, *staging.of(buffer), 0);
    if (plan.sample)
      commands->setBytes(launch.paramsIndex, &p, sizeof p);
    else
      commands->setBytes(launch.paramsIndex, &args, sizeof args);
    commands->labelNextDispatch(launch.label);
    commands->dispatch(launch.threadgroups, threadsFor(pipeline, launch.tokensPerThreadgroup));
  }
  return commands;
}

std::vector<uint32_t> KernelSampler::sample(const LogitsRow& row, uint32_t rows, const SamplingInputs& in) {
  if (rows == 0) return {};
  std::shared_ptr<Staging> staging = pool_->take();
  auto commands = encode(*staging, row, rows, in);
  commands->commit();
  commands->wait();
  std::vector<uint32_t> tokens = tokensOf(*staging->tokens, rows);
  pool_->give(std::move(staging));
  return tokens;
}

void KernelSampler::sampleAsync(const LogitsRow& row, uint32_t rows, const SamplingInputs& in, Done done) {
  if (rows == 0) {
    done({}, "");
    return;
  }
  std::shared_ptr<Staging> staging = pool_->take();
  auto commands = encode(*staging, row, rows, in);
  // The completion holds the staging buffers and the pool, not the sampler.
  commands->commit([pool = pool_, staging, rows, done = std::move(done)](const std::string& error) mutable {
    std::vector<uint32_t> tokens;
    if (error.empty()) tokens = tokensOf(*staging->tokens, rows);
    pool->give(std::move(staging));
    done(std::move(tokens), error);
  });
}

}  // namespace md
