// attention.metal: the attention of one token (decode) or a batch of
// consecutive tokens (prefill): RoPE on their Q and K heads, K and V into
// the KV cache at their positions, and each query head's softmax-weighted
// sum of the cached values, causal. The cache is F16 (the default), F32 or
// Q8_0, as llama.cpp's cache types: one store and one attention kernel
// each. The CPU twins are ops.h's ropeAngles/applyRope and
// Transformer::attention (the tests compare).
#include "md_kernel.h"
#include "md_block_values.h"
#include "md_transformer.h"

// ---- the cache's types ---------------------------------------------------
// Value i of a cache row, the row found from its first value's index
// (kv_dim and head_dim are whole Q8_0 blocks for that cache).
inline device const half* md_cache_at(device const half* cache, ulong first) { return cache + first; }
inline device const float* md_cache_at(device const float* cache, ulong first) { return cache + first; }
inline device const md_block_q8_0* md_cache_at(device const md_block_q8_0* cache, ulong first) { return cache + first / MD_QK; }
inline float md_cache_value(device const half* row, uint i) { return float(row[i]); }
inline float md_cache_value(device const float* row, uint i) { return row[i]; }
inline float md_cache_value(device const md_block_q8_0* row, uint i) { return md_block_value(row + i / MD_QK, i % MD_QK); }
// With an F16 cache the query and the softmax weights are rounded to
// float16 before their products with K and V, as llama.cpp does; the F32
// and Q8_0 caches keep them float32.
inline float md_cache_operand(device const half*, float x) { return float(half(x)); }
inline float md_cache_operand(device const float*, float x) { return x; }
inline float md_cache_operand(device const md_block_q8_0*, float x) { return x; }

// Query heads one threadgroup serves in one pass over its KV head's
// positions (a larger group takes more passes): each K and V value is
// loaded once per pass and used by all of them.
#define MD_ATTENTION_GROUP 8u

// The dots of `count` (at most MD_ATTENTION_GROUP) query heads, consecutive
// in `queries`, with one cached key row, times nothing yet (the scale comes
// after): F16 and F32 value by value; Q8_0 as the CPU's dot (and
// llama.cpp's): the query quantized to Q8_0 blocks like the key, integer
// products summed per block, times both blocks' scales. Each key value is
// loaded once for all the heads; each head's dot takes the steps it takes
// alone, in the same order.
template <typename Cache>
inline void md_cache_scores(device const Cache* key, device const float* queries, uint head_dim, uint count,
                            thread float* dots) {
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) dots[i] = 0.0f;
  for (uint d = 0; d < head_dim; ++d) {
    const float k = md_cache_value(key, d);
    for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
      if (i < count) dots[i] += md_cache_operand(key, queries[i * head_dim + d]) * k;
    }
  }
}
inline void md_cache_scores(device const md_block_q8_0* key, device const float* queries, uint head_dim, uint count,
                            thread float* dots) {
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) dots[i] = 0.0f;
  for (uint b = 0; b < head_dim / MD_QK; ++b) {
    float amax[MD_ATTENTION_GROUP], id[MD_ATTENTION_GROUP];
    int products[MD_ATTENTION_GROUP];
    for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
      amax[i] = 0.0f;
      products[i] = 0;
      if (i < count) {
        device const float* x = queries + i * head_dim + b * MD_QK;
        for (uint j = 0; j < MD_QK; ++j) amax[i] = max(amax[i], fabs(x[j]));
      }
      id[i] = amax[i] != 0.0f ? 127.0f / amax[i] : 0.0f;
    }
    for (uint j = 0; j < MD_QK; ++j) {
      const int k = int(key[b].qs[j]);
      for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
        if (i < count) products[i] += k * int(rint(queries[i * head_dim + b * MD_QK + j] * id[i]));
      }
    }
    const float scale = float(as_type<half>(key[b].d));
    for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
      if (i < count) dots[i] += float(products[i]) * (scale * float(half(amax[i] / 127.0f)));
    }
  }
}

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

// One thread per value: the tokens' K and V rows, rounded to float16 (or
// as they are: F32), into rows position .. position + count - 1 of the caches.
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

kernel void md_kv_store_f32(device const float* k [[buffer(0)]],
                            device const float* v [[buffer(1)]],
                            constant md_kv_store_params& params [[buffer(2)]],
                            device float* keys [[buffer(3)]],
                            device float* values [[buffer(4)]],
                            MD_THREAD_IDS) {
  const uint i = group * threads + tid;
  if (i >= params.kv_dim * params.count) return;
  const ulong at = ulong(params.position) * params.kv_dim + i;
  keys[at] = k[i];
  values[at] = v[i];
}

// One block of 32 values as the CPU's quantizeActivations makes it: d =
// max |x| / 127 (as float16), q = nearest(x * 127 / max |x|), ties to even.
inline void md_quantize_q8_0(device const float* x, device md_block_q8_0* out) {
  float amax = 0.0f;
  for (uint j = 0; j < MD_QK; ++j) amax = max(amax, fabs(x[j]));
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  out->d = as_type<md_u16>(half(amax / 127.0f));
  for (uint j = 0; j < MD_QK; ++j) out->qs[j] = md_i8(rint(x[j] * id));
}

// One thread per block of 32 values: Q8_0 K and V blocks.
kernel void md_kv_store_q8_0(device const float* k [[buffer(0)]],
                             device const float* v [[buffer(1)]],
                             constant md_kv_store_params& params [[buffer(2)]],
                             device md_block_q8_0* keys [[buffer(3)]],
                             device md_block_q8_0* values [[buffer(4)]],
                             MD_THREAD_IDS) {
  const uint b = group * threads + tid;
  if (b >= params.kv_dim / MD_QK * params.count) return;
  const ulong at = ulong(params.position) * (params.kv_dim / MD_QK) + b;
  md_quantize_q8_0(k + ulong(b) * MD_QK, keys + at);
  md_quantize_q8_0(v + ulong(b) * MD_QK, values + at);
}

// One threadgroup per (query, KV head, split), for every query head of the
// KV head's group (MD_ATTENTION_GROUP of them per pass): each K and V value
// is loaded once per pass, not once per query head. Split j of the query's
// kv_length + i positions is the j-th of `splits` near-equal ranges, so
// every threadgroup has work at every length. Thread t scores positions
// t, t + threads, ... of its range for every head of the pass (each reads
// a whole K row of the KV head: consecutive threads read consecutive
// rows), then each head's max and sum of the exponentials go through the
// threadgroup in a fixed order, and thread t sums dims t, t + threads, ...
// of the values for every head (consecutive threads read consecutive
// values of a V row). The query and the weights meet K and V as
// md_cache_scores and md_cache_operand say for the cache's type, as the
// CPU twin does; each head's sums take the steps they took when each head
// had its own threadgroup, so the bits are those.
//
// With one split the threadgroup normalises and writes `out`. With more
// (long contexts: one head's whole context is too much for one of the
// GPU's cores), it writes each head's max m, its sum l of exp(s - m) and
// its unnormalised output (weights exp(s - m), as the cache type takes
// them) to `partials`, and md_attention_merge_f32 combines the splits.
template <typename Cache>
inline void md_attention(device const float* q, device const Cache* keys, device const Cache* values,
                         constant md_attention_params& params, device float* scores, device float* out,
                         device float* partials, uint group, uint tid, uint threads, uint lane, uint simd_index,
                         threadgroup float* scratch) {
  const uint split = group % params.splits, g = (group / params.splits) % params.kv_heads;
  const uint query = group / (params.splits * params.kv_heads);
  if (query >= params.count) return;
  const uint kv_dim = params.kv_heads * params.head_dim;
  const uint group_heads = params.heads / params.kv_heads;
  const uint length = params.kv_length + query;
  const uint chunk = (length + params.splits - 1) / params.splits;
  const uint begin = min(length, split * chunk), end = min(length, begin + chunk);
  const bool whole = params.splits == 1;

  for (uint pass = 0; pass < group_heads; pass += MD_ATTENTION_GROUP) {
    const uint count = min(group_heads - pass, MD_ATTENTION_GROUP);
    const ulong first_row = ulong(query) * params.heads + g * group_heads + pass;  // (query, head) of the first head
    device const float* queries = q + first_row * params.head_dim;

    float local_max[MD_ATTENTION_GROUP];
    for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) local_max[i] = -INFINITY;
    for (uint t = begin + tid; t < end; t += threads) {
      float dots[MD_ATTENTION_GROUP];
      md_cache_scores(md_cache_at(keys, ulong(t) * kv_dim + ulong(g) * params.head_dim), queries, params.head_dim,
                      count, dots);
      for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
        if (i < count) {
          const float dot = dots[i] * params.scale;
          scores[(first_row + i) * params.context + t] = dot;
          local_max[i] = max(local_max[i], dot);
        }
      }
    }
    float top[MD_ATTENTION_GROUP], total[MD_ATTENTION_GROUP];
    for (uint i = 0; i < count; ++i) {
      device float* s = scores + (first_row + i) * params.context;
      const float simd_best = simd_max(local_max[i]);
      if (lane == 0) scratch[simd_index] = simd_best;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      top[i] = -INFINITY;
      for (uint k = 0; k < threads / MD_SIMD_WIDTH; ++k) top[i] = max(top[i], scratch[k]);
      threadgroup_barrier(mem_flags::mem_threadgroup);

      float local_sum = 0.0f;
      for (uint t = begin + tid; t < end; t += threads) {
        const float e = exp(s[t] - top[i]);
        s[t] = e;
        local_sum += e;
      }
      md_threadgroup_exclusive_sum(local_sum, lane, simd_index, threads / MD_SIMD_WIDTH, total[i], scratch);
    }
    threadgroup_barrier(mem_flags::mem_device);  // every weight written before any thread sums them

    float inverse[MD_ATTENTION_GROUP];
    for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) inverse[i] = whole && i < count ? 1.0f / total[i] : 1.0f;
    for (uint d = tid; d < params.head_dim; d += threads) {
      float acc[MD_ATTENTION_GROUP];
      for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) acc[i] = 0.0f;
      for (uint t = begin; t < end; ++t) {
        const float v = md_cache_value(md_cache_at(values, ulong(t) * kv_dim + ulong(g) * params.head_dim), d);
        for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
          if (i < count) {
            const float p = md_cache_operand(values, scores[(first_row + i) * params.context + t] * inverse[i]);
            acc[i] += p * v;
          }
        }
      }
      for (uint i = 0; i < count; ++i) {
        const ulong row = first_row + i;
        if (whole) out[row * params.head_dim + d] = acc[i];
        else partials[(row * params.splits + split) * MD_ATTENTION_PARTIAL_FLOATS(params.head_dim) + 2 + d] = acc[i];
      }
    }
    if (!whole && tid == 0) {
      for (uint i = 0; i < count; ++i) {
        device float* partial = partials + ((first_row + i) * params.splits + split) * MD_ATTENTION_PARTIAL_FLOATS(params.head_dim);
        partial[0] = top[i];  // -inf for an empty split, whose weight below is 0
        partial[1] = total[i];
      }
    }
    // The next pass reuses the scratch: every thread is past this pass's reductions.
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

#define MD_ATTENTION_BUFFERS(Cache)                                                                                \
  device const float *q [[buffer(0)]], device const Cache *keys [[buffer(1)]],                                      \
      device const Cache *values [[buffer(2)]], constant md_attention_params &params [[buffer(3)]],                 \
      device float *scores [[buffer(4)]], device float *out [[buffer(5)]], device float *partials [[buffer(6)]]

kernel void md_attention_f16(MD_ATTENTION_BUFFERS(half), MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, scratch, MD_SCAN_SLOTS);
  md_attention(q, keys, values, params, scores, out, partials, group, tid, threads, lane, simd_index, scratch);
}

kernel void md_attention_f32(MD_ATTENTION_BUFFERS(float), MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, scratch, MD_SCAN_SLOTS);
  md_attention(q, keys, values, params, scores, out, partials, group, tid, threads, lane, simd_index, scratch);
}

kernel void md_attention_q8_0(MD_ATTENTION_BUFFERS(md_block_q8_0), MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, scratch, MD_SCAN_SLOTS);
  md_attention(q, keys, values, params, scores, out, partials, group, tid, threads, lane, simd_index, scratch);
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
