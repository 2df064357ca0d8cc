// attention.metal: the attention of one token: RoPE on its Q and K heads,
// K and V into the F16 cache at its position, and each query head's
// softmax-weighted sum of the cached values. The CPU twins are ops.h's
// ropeAngles/applyRope and Transformer::attention (the tests compare).
#include "md_kernel.h"
#include "md_transformer.h"

// One thread per (head, rotated pair). The angle is the CPU's, operation
// for operation: position times theta_scale i times (ggml's recurrence),
// divided by the pair's factor, times freq_scale.
kernel void md_rope_f32(device float* x [[buffer(0)]],
                        device const float* factors [[buffer(1)]],
                        constant md_rope_params& params [[buffer(2)]],
                        MD_THREAD_IDS) {
  const uint pairs = params.rope_dims / 2;
  const uint k = group * threads + tid;
  if (k >= params.heads * pairs) return;
  const uint h = k / pairs, i = k % pairs;
  float theta = float(params.position);
  for (uint j = 0; j < i; ++j) theta *= params.theta_scale;
  const float factor = params.has_factors != 0 ? factors[i] : 1.0f;
  const float angle = params.freq_scale * (theta / factor);
  const float c = cos(angle), s = sin(angle);
  device float* head = x + ulong(h) * params.head_dim;
  const uint a = params.mode == 0 ? 2 * i : i, b = params.mode == 0 ? 2 * i + 1 : i + pairs;
  const float x0 = head[a], x1 = head[b];
  head[a] = x0 * c - x1 * s;
  head[b] = x0 * s + x1 * c;
}

// One thread per value: the token's K and V rows, rounded to float16, into
// row `position` of the caches.
kernel void md_kv_store_f16(device const float* k [[buffer(0)]],
                            device const float* v [[buffer(1)]],
                            constant md_kv_store_params& params [[buffer(2)]],
                            device half* keys [[buffer(3)]],
                            device half* values [[buffer(4)]],
                            MD_THREAD_IDS) {
  const uint i = group * threads + tid;
  if (i >= params.kv_dim) return;
  const ulong at = ulong(params.position) * params.kv_dim + i;
  keys[at] = half(k[i]);
  values[at] = half(v[i]);
}

// One threadgroup per query head. Thread t scores positions t, t + threads,
// ... (each reads a whole K row of head_dim halves), then the max and the
// sum of the exponentials go through the threadgroup in a fixed order, and
// thread t sums dims t, t + threads, ... of the values. As llama.cpp does
// with an F16 cache (and the CPU twin), the query and the softmax weights
// are rounded to float16 before their products with K and V. One
// threadgroup per head reads the whole context: splitting long contexts
// over threadgroups is the next step (bench/README.md's model).
kernel void md_attention_f16(device const float* q [[buffer(0)]],
                             device const half* keys [[buffer(1)]],
                             device const half* values [[buffer(2)]],
                             constant md_attention_params& params [[buffer(3)]],
                             device float* scores [[buffer(4)]],
                             device float* out [[buffer(5)]],
                             MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, scratch, MD_SCAN_SLOTS);
  const uint h = group;
  if (h >= params.heads) return;
  const uint kv_dim = params.kv_heads * params.head_dim;
  const uint g = h / (params.heads / params.kv_heads);
  device const float* query = q + ulong(h) * params.head_dim;
  device float* s = scores + ulong(h) * params.context;
  const uint length = params.kv_length;

  float local_max = -INFINITY;
  for (uint t = tid; t < length; t += threads) {
    device const half* key = keys + ulong(t) * kv_dim + ulong(g) * params.head_dim;
    float dot = 0.0f;
    for (uint d = 0; d < params.head_dim; ++d) dot += float(half(query[d])) * float(key[d]);
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
  for (uint t = tid; t < length; t += threads) {
    const float e = exp(s[t] - top);
    s[t] = e;
    local_sum += e;
  }
  float total = 0.0f;
  md_threadgroup_exclusive_sum(local_sum, lane, simd_index, threads / MD_SIMD_WIDTH, total, scratch);
  threadgroup_barrier(mem_flags::mem_device);  // every weight written before any thread sums them
  const float inverse = 1.0f / total;

  for (uint d = tid; d < params.head_dim; d += threads) {
    float acc = 0.0f;
    for (uint t = 0; t < length; ++t) {
      const float p = float(half(s[t] * inverse));
      acc += p * float(values[ulong(t) * kv_dim + ulong(g) * params.head_dim + d]);
    }
    out[ulong(h) * params.head_dim + d] = acc;
  }
}
