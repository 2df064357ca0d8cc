// attention.metal: the attention of one token (decode) or a batch of
// consecutive tokens (prefill): RoPE on their Q and K heads, K and V into
// the F16 cache at their positions, and each query head's softmax-weighted
// sum of the cached values, causal. The CPU twins are ops.h's
// ropeAngles/applyRope and Transformer::attention (the tests compare).
#include "md_kernel.h"
#include "md_transformer.h"

// One thread per (token, head, rotated pair), the Q heads' pairs then the
// K heads'. The angle is the CPU's, operation for operation: position
// times theta_scale i times (ggml's recurrence), divided by the pair's
// factor, times freq_scale.
kernel void md_rope_f32(device float* x [[buffer(0)]],
                        device const float* factors [[buffer(1)]],
                        constant md_rope_params& params [[buffer(2)]],
                        device float* k [[buffer(3)]],
                        MD_THREAD_IDS) {
  const uint pairs = params.rope_dims / 2;
  const uint index = group * threads + tid;
  const uint q_pairs = params.count * params.heads * pairs;
  if (index >= q_pairs + params.count * params.k_heads * pairs) return;
  const bool is_k = index >= q_pairs;
  const uint item = is_k ? index - q_pairs : index, heads = is_k ? params.k_heads : params.heads;
  const uint token = item / (heads * pairs), h = (item / pairs) % heads, i = item % pairs;
  float theta = float(params.position + token);
  for (uint j = 0; j < i; ++j) theta *= params.theta_scale;
  const float factor = params.has_factors != 0 ? factors[i] : 1.0f;
  const float angle = params.freq_scale * (theta / factor);
  const float c = cos(angle), s = sin(angle);
  device float* head = (is_k ? k : x) + (ulong(token) * heads + h) * params.head_dim;
  const uint a = params.mode == 0 ? 2 * i : i, b = params.mode == 0 ? 2 * i + 1 : i + pairs;
  const float x0 = head[a], x1 = head[b];
  head[a] = x0 * c - x1 * s;
  head[b] = x0 * s + x1 * c;
}

// One thread per value: the tokens' K and V rows, rounded to float16, into
// rows position .. position + count - 1 of the caches.
kernel void md_kv_store_f16(device const float* k [[buffer(0)]],
                            device const float* v [[buffer(1)]],
                            constant md_kv_store_params& params [[buffer(2)]],
                            device half* keys [[buffer(3)]],
                            device half* values [[buffer(4)]],
                            MD_THREAD_IDS) {
  const uint i = group * threads + tid;
  if (i >= params.kv_dim * params.count) return;
  const ulong at = ulong(params.position) * params.kv_dim + i;
  keys[at] = half(k[i]);
  values[at] = half(v[i]);
}

// One threadgroup per (query, head, split): split j of the query's
// kv_length + i positions is the j-th of `splits` near-equal ranges, so
// every threadgroup has work at every length. Thread t scores positions
// t, t + threads, ... of its range (each score reads a whole K row of
// head_dim halves: consecutive threads read consecutive rows), then the
// max and the sum of the exponentials go through the threadgroup in a
// fixed order, and thread t sums dims t, t + threads, ... of the values
// (consecutive threads read consecutive halves of a V row). As llama.cpp
// does with an F16 cache (and the CPU twin), the query and the softmax
// weights are rounded to float16 before their products with K and V.
//
// With one split the threadgroup normalises and writes `out`. With more
// (long contexts: one head's whole context is too much for one of the
// GPU's cores), it writes its max m, its sum l of exp(s - m) and its
// unnormalised output (weights exp(s - m) rounded to float16) to
// `partials`, and md_attention_merge_f32 combines the splits.
kernel void md_attention_f16(device const float* q [[buffer(0)]],
                             device const half* keys [[buffer(1)]],
                             device const half* values [[buffer(2)]],
                             constant md_attention_params& params [[buffer(3)]],
                             device float* scores [[buffer(4)]],
                             device float* out [[buffer(5)]],
                             device float* partials [[buffer(6)]],
                             MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, scratch, MD_SCAN_SLOTS);
  const uint split = group % params.splits, h = (group / params.splits) % params.heads;
  const uint query = group / (params.splits * params.heads);
  if (query >= params.count) return;
  const uint kv_dim = params.kv_heads * params.head_dim;
  const uint g = h / (params.heads / params.kv_heads);
  const ulong row = ulong(query) * params.heads + h;  // (query, head)
  device const float* query_head = q + row * params.head_dim;
  device float* s = scores + row * params.context;
  const uint length = params.kv_length + query;
  const uint chunk = (length + params.splits - 1) / params.splits;
  const uint begin = min(length, split * chunk), end = min(length, begin + chunk);

  float local_max = -INFINITY;
  for (uint t = begin + tid; t < end; t += threads) {
    device const half* key = keys + ulong(t) * kv_dim + ulong(g) * params.head_dim;
    float dot = 0.0f;
    for (uint d = 0; d < params.head_dim; ++d) dot += float(half(query_head[d])) * float(key[d]);
    dot *= params.scale;
    s[t] = dot;
    local_max = max(local_max, dot);
  }
  const float simd_best = simd_max(local_max);
  if (lane == 0) scratch[simd_index] = simd_best;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float top = -INFINITY;
  for (uint i = 0; i < threads / MD_SIMD_WIDTH; ++i) top = max(top, scratch[i]);
  threadgroup_barrier(mem_flags::mem_threadgroup);

  float local_sum = 0.0f;
  for (uint t = begin + tid; t < end; t += threads) {
    const float e = exp(s[t] - top);
    s[t] = e;
    local_sum += e;
  }
  float total = 0.0f;
  md_threadgroup_exclusive_sum(local_sum, lane, simd_index, threads / MD_SIMD_WIDTH, total, scratch);
  threadgroup_barrier(mem_flags::mem_device);  // every weight written before any thread sums them

  const bool whole = params.splits == 1;
  const float inverse = whole ? 1.0f / total : 1.0f;
  device float* partial = partials + (row * params.splits + split) * MD_ATTENTION_PARTIAL_FLOATS(params.head_dim);
  for (uint d = tid; d < params.head_dim; d += threads) {
    float acc = 0.0f;
    for (uint t = begin; t < end; ++t) {
      const float p = float(half(s[t] * inverse));
      acc += p * float(values[ulong(t) * kv_dim + ulong(g) * params.head_dim + d]);
    }
    if (whole) out[row * params.head_dim + d] = acc;
    else partial[2 + d] = acc;
  }
  if (!whole && tid == 0) {
    partial[0] = top;  // -inf for an empty split, whose weight below is 0
    partial[1] = total;
  }
}

// One thread per (query, head, dim): the splits' partial outputs rescaled
// to the largest max and added in split order, over their rescaled sums.
kernel void md_attention_merge_f32(device const float* partials [[buffer(0)]],
                                   constant md_attention_params& params [[buffer(1)]],
                                   device float* out [[buffer(2)]],
                                   MD_THREAD_IDS) {
  const uint i = group * threads + tid;
  if (i >= params.count * params.heads * params.head_dim) return;
  const uint row = i / params.head_dim, d = i % params.head_dim;
  const uint stride = MD_ATTENTION_PARTIAL_FLOATS(params.head_dim);
  device const float* first = partials + ulong(row) * params.splits * stride;
  float top = -INFINITY;
  for (uint j = 0; j < params.splits; ++j) top = max(top, first[j * stride]);
  float total = 0.0f, acc = 0.0f;
  for (uint j = 0; j < params.splits; ++j) {
    device const float* partial = first + j * stride;
    const float weight = partial[0] == -INFINITY ? 0.0f : exp(partial[0] - top);
    total += weight * partial[1];
    acc += weight * partial[2 + d];
  }
  out[i] = acc / total;
}
