// kernel_sampler.cpp: staging, encoding and reading back one sampling step.
#include "kernel_sampler.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

namespace md {

const char* checkKernelInputs(const LogitsRow& row, const SamplingInputs& in) {
  if (row.format == LogitsFormat::Float16) return nullptr;
  const md_sampling_params& p = in.params;
  if (!md_plain_greedy(p.temperature, p.bias_count, p.history_count, p.history_window, p.repeat_penalty, p.frequency_penalty,
                       p.presence_penalty))
    return "logits: the GPU sampling kernel reads float16 logits; float32 logits run only greedily (temperature 0) "
           "without token bias or penalties";
  return nullptr;
}

// The device buffers of one sampling step, grown as needed and reused.
struct KernelSampler::Staging {
  std::shared_ptr<Buffer> logits, history, bias, edited, histogram, tokens, marks, mask, partials, state;
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

// md_sample_f16's buffers 0-8, which the wide kernels bind too.
template <class Staging>
void bindSamplingBuffers(CommandBuffer& commands, Staging& staging, const md_sampling_params& p) {
  commands.setBuffer(0, *staging.logits, 0);
  commands.setBytes(1, &p, sizeof p);
  commands.setBuffer(2, *staging.history, 0);
  commands.setBuffer(3, *staging.bias, 0);
  commands.setBuffer(4, *staging.edited, 0);
  commands.setBuffer(5, *staging.histogram, 0);
  commands.setBuffer(6, *staging.tokens, 0);
  commands.setBuffer(7, *staging.marks, 0);
  commands.setBuffer(8, *staging.mask, 0);
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
  Buffer& tokens = ensure(device_, staging.tokens, size_t(rows) * 4);
  const bool masked = (p.flags & MD_FLAG_TOKEN_MASK) != 0;
  const size_t maskBytes = size_t(md_mask_words(row.size)) * 4 * rows;
  Buffer& mask = ensure(device_, staging.mask, masked ? maskBytes : 4);
  if (masked) std::memcpy(mask.contents(), in.mask, maskBytes);

  auto commands = device_.newCommandBuffer();
  if (!half && rows == 1 && rowLaunch_.wide) {
    // One row over the GPU: argmax.metal's slices, then its pick.
    const uint32_t groups = rowLaunch_.threadgroups ? rowLaunch_.threadgroups : md_wide_groups(row.size);
    Buffer& partials = ensure(device_, staging.partials, size_t(groups) * sizeof(md_wide_partial));
    Buffer& state = ensure(device_, staging.state, sizeof(md_wide_state));
    md_argmax_params args{row.size, p.flags & MD_FLAG_TOKEN_MASK};
    const struct {
      const char* kernel;
      bool slices;
    } steps[] = {{"md_argmax_slices_f32", true}, {"md_argmax_pick_f32", false}};
    for (const auto& [kernel, slices] : steps) {
      const Pipeline& pipeline = device_.pipeline(kernel);
      commands->setPipeline(pipeline);
      commands->setBuffer(0, logits, 0);
      commands->setBytes(1, &args, sizeof args);
      commands->setBuffer(2, tokens, 0);
      commands->setBuffer(3, mask, 0);
      commands->setBuffer(4, partials, 0);
      commands->setBuffer(5, state, 0);
      commands->dispatch(slices ? groups : 1, threadsFor(pipeline, slices ? (row.size + groups - 1) / groups : groups));
    }
  } else if (!half) {
    const Pipeline& argmax = device_.pipeline("md_argmax_f32");
    md_argmax_params args{row.size, p.flags & MD_FLAG_TOKEN_MASK};
    commands->setPipeline(argmax);
    commands->setBuffer(0, logits, 0);
    commands->setBytes(1, &args, sizeof args);
    commands->setBuffer(2, tokens, 0);
    commands->setBuffer(3, mask, 0);
    commands->dispatch(rows, threadsFor(argmax, row.size));
  } else {
    const Pipeline& sampler = device_.pipeline("md_sample_f16");
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
    if (rows == 1 && rowLaunch_.wide) {
      encodeWide(*commands, staging, row, in);
    } else {
      commands->setPipeline(sampler);
      bindSamplingBuffers(*commands, staging, p);
      commands->dispatch(rows, threadsFor(sampler, row.size));
    }
  }
  return commands;
}

// The dispatches of sampling_wide.metal (four to six): the row passes on
// `groups` threadgroups, the steps between them on one.
void KernelSampler::encodeWide(CommandBuffer& commands, Staging& staging, const LogitsRow& row,
                               const SamplingInputs& in) {
  const uint32_t groups = rowLaunch_.threadgroups ? rowLaunch_.threadgroups : md_wide_groups(row.size);
  Buffer& partials = ensure(device_, staging.partials, size_t(groups) * sizeof(md_wide_partial));
  Buffer& state = ensure(device_, staging.state, sizeof(md_wide_state));
  const struct {
    const char* kernel;
    bool rowPass;
  } steps[] = {{"md_sample_wide_prepare_f16", true}, {"md_sample_wide_edit_f16", false},
               {"md_sample_wide_count_f16", true},   {"md_sample_wide_filter_f16", false},
               {"md_sample_wide_noise_f16", true},   {"md_sample_wide_pick_f16", false}};
  // Steps with nothing to do for these params are left out, as the tables
  // leave them out (lib/gpu/sampling-command.ts); the kernels would decide
  // the same from the params.
  const md_sampling_params& p = in.params;
  const bool edits = md_bias_or_penalties(p.bias_count, p.history_count, p.history_window, p.repeat_penalty,
                                          p.frequency_penalty, p.presence_penalty);
  const bool histogram = md_filters_need_histogram(p.temperature, p.top_k, p.top_p, p.vocab_size);
  const bool masked = (p.flags & MD_FLAG_TOKEN_MASK) != 0;
  for (const auto& step : steps) {
    const std::string kernel = step.kernel;
    if (kernel == "md_sample_wide_edit_f16" && !edits) continue;
    if (kernel == "md_sample_wide_prepare_f16" && !edits && !masked && !histogram) continue;
    const Pipeline& pipeline = device_.pipeline(step.kernel);
    commands.setPipeline(pipeline);
    bindSamplingBuffers(commands, staging, in.params);
    commands.setBuffer(9, partials, 0);
    commands.setBuffer(10, state, 0);
    // A slice of a row has vocab / groups tokens: threads for that many.
    const uint32_t tokens = step.rowPass ? (row.size + groups - 1) / groups : row.size;
    commands.dispatch(step.rowPass ? groups : 1, threadsFor(pipeline, tokens));
  }
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
