// sampling_launches.h: the kernel launches of one sampling step, the one
// list: KernelSampler replays it on a Device (kernel_sampler.cpp), and the
// addon hands it to the dispatch tables (lib/gpu/sampling-command.ts),
// which bind the buffers it names and add the chain's patches. Which
// kernels run, with which buffers, on how many threadgroups, and which
// steps of the wide kernels have work for the params: decided here only.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "md_sampling.h"

namespace md {

// The buffers a sampling launch binds, by role.
enum class SamplingBuffer : uint8_t { Logits, History, Bias, Edited, Histogram, Tokens, Marks, Mask, Partials, State };
const char* samplingBufferName(SamplingBuffer b);  // "logits", "history", ...

// What a launch does with the step's token: writes it (the pick; a chain
// moves its output to slot p + 1), reads the step's position and history
// (a wide step before the pick), or neither (the argmax's slices).
enum class LaunchRole : uint8_t { None, Step, Pick };

struct SamplingLaunch {
  const char* kernel;
  const char* label;
  std::vector<std::pair<uint32_t, SamplingBuffer>> buffers;  // binding index, buffer
  uint32_t paramsIndex = 1;  // where the params go inline: md_sampling_params, or md_argmax_params for md_argmax_*
  uint32_t threadgroups = 1;
  uint32_t tokensPerThreadgroup = 0;  // threads: one per token, up to the pipeline's limit
  LaunchRole role = LaunchRole::None;
};

struct SamplingPlan {
  uint32_t vocab = 0;
  uint32_t rows = 1;    // rows in one dispatch (one threadgroup each); a wide launch takes one row
  bool half = true;     // float16 logits; float32 ones have the argmax kernels only
  bool sample = false;  // the sampling kernels; false: the argmax kernels
  bool wide = false;    // one row across `groups` threadgroups
  uint32_t groups = 0;  // the wide kernels' row passes: 0 for md_wide_groups(vocab)
  // Which wide sampling steps have work (samplingWork()); the kernels would
  // decide the same from the params, so a step left in does nothing.
  bool edits = false, histogram = false, masked = false;
};

// Whether a step with these params edits the row (a bias, or penalties over
// history) and needs the histogram (a filter). historyGrows: the params are
// a chain's, whose history count is patched in per step (nonzero after the
// prompt), so penalties over a window count.
struct SamplingWork {
  bool edits, histogram, masked;
};
SamplingWork samplingWork(const md_sampling_params& p, bool historyGrows);

// The launches of `plan`, in order. Throws std::invalid_argument for a plan
// no kernel runs (float32 logits with the sampling kernels, a wide launch
// of several rows, a vocabulary of 0).
std::vector<SamplingLaunch> samplingLaunches(const SamplingPlan& plan);

}  // namespace md
