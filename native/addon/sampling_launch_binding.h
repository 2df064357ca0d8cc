// sampling_launch_binding.h: the launches of a sampling step for the
// dispatch tables (native/core/sampling_launches.h):
//   samplingLaunches({ vocab, rows, logits: 'f16' | 'f32', pick: 'argmax' | 'sample', wide, params? })
//     -> [{ kernel, label, buffers: [{ index, buffer }], paramsIndex, threadgroups, tokensPerThreadgroup, role }]
// params: a chain's md_sampling_params bytes (packSamplingParams), from
// which the wide kernels' steps with work are chosen.
#pragma once
#include <napi.h>

namespace md::addon {

Napi::Value SamplingLaunches(const Napi::CallbackInfo& info);

}  // namespace md::addon
