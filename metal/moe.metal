// moe.metal: the router and the sum of a mixture-of-experts FFN
// (md_moe_params): the choice of experts per token, the pairs grouped by
// expert for the prefill's matrix-matrix kernels, and the weighted sum of
// the chosen experts' outputs. The expert FFNs themselves are the indexed
// matrix kernels (md_matvec_id_*, md_matmul_id_*). The CPU twin is
// native/core/transformer/moe_ffn.cpp (chooseExperts, moeFfn's sum); the
// tests compare them.
#include "md_kernel.h"
#include "md_transformer.h"

// One SIMD group per token: lane l holds experts l, l + 32, ... (at most 8).
// The softmax is the CPU's but for its sum's order (a SIMD sum here, a
// double there: the probabilities may differ in their last bits). Then the
// `used` best, one at a time, each the SIMD group's largest probability
// (ties to the lower expert, as the CPU's sort) taken out of the running;
// the weights are divided by their sum in the order chosen, clamped below
// at float16's smallest normal as llama.cpp clamps it.
kernel void md_moe_route_f32(device const float* logits [[buffer(0)]],
                             constant md_moe_params& params [[buffer(1)]],
                             device uint* ids [[buffer(2)]],
                             device float* weights [[buffer(3)]],
                             MD_THREAD_IDS) {
  const uint token = group * (threads / MD_SIMD_WIDTH) + simd_index;
  if (token >= params.count) return;  // the whole SIMD group: the reductions need every lane
  const uint per_lane = MD_MOE_MAX_EXPERTS / MD_SIMD_WIDTH;
  device const float* row = logits + ulong(token) * params.experts;
  float p[MD_MOE_MAX_EXPERTS / MD_SIMD_WIDTH];
  float top = row[0];
  for (uint i = 0; i < per_lane; ++i) {
    const uint e = lane + MD_SIMD_WIDTH * i;
    p[i] = e < params.experts ? row[e] : row[0];
    top = max(top, p[i]);
  }
  top = simd_max(top);
  float sum = 0.0f;
  for (uint i = 0; i < per_lane; ++i) {
    p[i] = exp(p[i] - top);
    if (lane + MD_SIMD_WIDTH * i < params.experts) sum += p[i];
  }
  const float inverse = 1.0f / simd_sum(sum);
  // A probability is at least 0; -1 marks no expert, or one already chosen.
  for (uint i = 0; i < per_lane; ++i) p[i] = lane + MD_SIMD_WIDTH * i < params.experts ? p[i] * inverse : -1.0f;

  device uint* token_ids = ids + ulong(token) * params.used;
  device float* token_weights = weights + ulong(token) * params.used;
  float chosen[MD_MOE_MAX_USED];
  float total = 0.0f;
  for (uint j = 0; j < params.used; ++j) {
    float best = -1.0f;
    uint best_expert = MD_NO_TOKEN;
    for (uint i = 0; i < per_lane; ++i) {
      if (p[i] > best) {  // strict: the lane's lower expert keeps a tie
        best = p[i];
        best_expert = lane + MD_SIMD_WIDTH * i;
      }
    }
    const md_best<float> pick = md_simd_best(best, best_expert);
    for (uint i = 0; i < per_lane; ++i)
      if (lane + MD_SIMD_WIDTH * i == pick.index) p[i] = -1.0f;
    chosen[j] = pick.value;
    total += pick.value;
    if (lane == 0) token_ids[j] = pick.index;
  }
  total = max(total, 6.103515625e-5f);
  if (lane == 0)
    for (uint j = 0; j < params.used; ++j) token_weights[j] = chosen[j] / total;
}

// One thread per expert: the pairs (t * used + j) that chose it, in order,
// into pairs[expert * count ..], and how many into counts[expert]. A token
// chooses an expert at most once, so at most `count`.
kernel void md_moe_group_u32(device const uint* ids [[buffer(0)]],
                             constant md_moe_params& params [[buffer(1)]],
                             device uint* counts [[buffer(2)]],
                             device uint* pairs [[buffer(3)]],
                             MD_THREAD_IDS) {
  const uint expert = group * threads + tid;
  if (expert >= params.experts) return;
  device uint* mine = pairs + ulong(expert) * params.count;
  const uint total = params.count * params.used;
  uint n = 0;
  for (uint pair = 0; pair < total && n < params.count; ++pair)
    if (ids[pair] == expert) mine[n++] = pair;
  counts[expert] = n;
}

// One thread per value of the tokens' rows: hidden += the sum over slots
// of weight x output, the first product alone and the rest added to it in
// slot order, as the CPU adds them.
kernel void md_moe_sum_f32(device const float* outputs [[buffer(0)]],
                           device const float* weights [[buffer(1)]],
                           constant md_moe_params& params [[buffer(2)]],
                           device float* hidden [[buffer(3)]],
                           MD_THREAD_IDS) {
  const ulong i = ulong(group) * threads + tid;
  if (i >= ulong(params.count) * params.dim) return;
  const ulong first = i / params.dim * params.used, value = i % params.dim;
  float sum = outputs[first * params.dim + value] * weights[first];
  for (uint j = 1; j < params.used; ++j) sum += outputs[(first + j) * params.dim + value] * weights[first + j];
  hidden[i] += sum;
}
