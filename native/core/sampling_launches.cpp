// sampling_launches.cpp
#include "sampling_launches.h"

#include <stdexcept>
#include <string>

namespace md {
namespace {

using B = SamplingBuffer;

// md_sample_f16's buffers 0-8 (params at 1), which the wide kernels bind too.
const std::vector<std::pair<uint32_t, SamplingBuffer>> kSampleBuffers = {
    {0, B::Logits},    {2, B::History}, {3, B::Bias},  {4, B::Edited},
    {5, B::Histogram}, {6, B::Tokens},  {7, B::Marks}, {8, B::Mask}};

}  // namespace

const char* samplingBufferName(SamplingBuffer b) {
  switch (b) {
    case B::Logits: return "logits";
    case B::History: return "history";
    case B::Bias: return "bias";
    case B::Edited: return "edited";
    case B::Histogram: return "histogram";
    case B::Tokens: return "tokens";
    case B::Marks: return "marks";
    case B::Mask: return "mask";
    case B::Partials: return "partials";
    case B::State: return "state";
  }
  return "?";
}

SamplingWork samplingWork(const md_sampling_params& p, bool historyGrows) {
  const uint32_t history = historyGrows ? 1u : p.history_count;
  return {md_bias_or_penalties(p.bias_count, history, p.history_window, p.repeat_penalty, p.frequency_penalty,
                               p.presence_penalty),
          md_filters_need_histogram(p.temperature, p.top_k, p.top_p, p.vocab_size),
          (p.flags & MD_FLAG_TOKEN_MASK) != 0};
}

std::vector<SamplingLaunch> samplingLaunches(const SamplingPlan& plan) {
  if (plan.vocab == 0) throw std::invalid_argument("vocab: must be positive, got 0");
  if (plan.rows == 0) throw std::invalid_argument("rows: must be positive, got 0");
  if (plan.sample && !plan.half) throw std::invalid_argument("logits: the sampling kernels read float16 logits");
  if (plan.wide && plan.rows != 1)
    throw std::invalid_argument("rows: a wide launch samples one row, got " + std::to_string(plan.rows));
  const uint32_t groups = plan.groups ? plan.groups : md_wide_groups(plan.vocab);
  const uint32_t sliceTokens = (plan.vocab + groups - 1) / groups;
  std::vector<SamplingLaunch> launches;
  if (!plan.sample) {
    const std::vector<std::pair<uint32_t, SamplingBuffer>> argmaxBuffers = {
        {0, B::Logits}, {2, B::Tokens}, {3, B::Mask}};
    if (plan.wide) {
      // One row over the GPU: argmax.metal's slices, then its pick.
      auto buffers = argmaxBuffers;
      buffers.push_back({4, B::Partials});
      buffers.push_back({5, B::State});
      launches.push_back({plan.half ? "md_argmax_slices_f16" : "md_argmax_slices_f32", "argmax: slices", buffers, 1,
                          groups, sliceTokens, LaunchRole::None});
      launches.push_back({plan.half ? "md_argmax_pick_f16" : "md_argmax_pick_f32", "argmax: pick", buffers, 1, 1,
                          groups, LaunchRole::Pick});
    } else {
      launches.push_back({plan.half ? "md_argmax_f16" : "md_argmax_f32", "argmax", argmaxBuffers, 1, plan.rows,
                          plan.vocab, LaunchRole::Pick});
    }
    return launches;
  }
  if (!plan.wide) {
    // The batched form: threadgroup r samples row r (at position + r over history_count + r tokens).
    launches.push_back({"md_sample_f16", "sample", kSampleBuffers, 1, plan.rows, plan.vocab, LaunchRole::Pick});
    return launches;
  }
  // sampling_wide.metal: the row passes on `groups` threadgroups, the steps
  // between them on one. Steps with nothing to do for these params are left
  // out: the edit step without bias or penalties, the prepare step without
  // edits, a mask or a histogram to zero.
  struct Step {
    const char* kernel;
    const char* label;
    bool rowPass;
  };
  const Step steps[] = {
      {"md_sample_wide_prepare_f16", "sample: prepare", true}, {"md_sample_wide_edit_f16", "sample: edit", false},
      {"md_sample_wide_count_f16", "sample: count", true},     {"md_sample_wide_filter_f16", "sample: filter", false},
      {"md_sample_wide_noise_f16", "sample: noise", true},     {"md_sample_wide_pick_f16", "sample: pick", false}};
  auto buffers = kSampleBuffers;
  buffers.push_back({9, B::Partials});
  buffers.push_back({10, B::State});
  for (const Step& step : steps) {
    const std::string kernel = step.kernel;
    if (kernel == "md_sample_wide_edit_f16" && !plan.edits) continue;
    if (kernel == "md_sample_wide_prepare_f16" && !plan.edits && !plan.masked && !plan.histogram) continue;
    const bool pick = kernel == "md_sample_wide_pick_f16";
    launches.push_back({step.kernel, step.label, buffers, 1, step.rowPass ? groups : 1u,
                        step.rowPass ? sliceTokens : plan.vocab, pick ? LaunchRole::Pick : LaunchRole::Step});
  }
  return launches;
}

}  // namespace md
