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
// A cache row, found from its first value's index (kv_dim and head_dim
// are whole Q8_0 blocks for that cache).
inline device const half* md_cache_at(device const half* cache, ulong first) { return cache + first; }
inline device const float* md_cache_at(device const float* cache, ulong first) { return cache + first; }
inline device const md_block_q8_0* md_cache_at(device const md_block_q8_0* cache, ulong first) { return cache + first / MD_QK; }
// With an F16 cache the query is rounded to float16 before its products
// with K, as llama.cpp does; the F32 and Q8_0 caches keep it float32. The
// softmax weights stay float32 for every cache: llama.cpp's CPU rounds the
// normalised weights to float16, which an online softmax never holds
// (rounding its unnormalised weights instead would copy nothing llama.cpp
// does and add an error of the same size).
inline float md_query_operand(device const half*, float x) { return float(half(x)); }
inline float md_query_operand(device const float*, float x) { return x; }
inline float md_query_operand(device const md_block_q8_0*, float x) { return x; }

// A lane holds up to MD_ATTENTION_LANE_VALUES values of a cached row (and
// of each query head and output): head_dim is at most 32 times that. The
// kernel is compiled for SLOTS of 2, 4 and 8 values per lane and runs the
// smallest that holds the head: its loops have constant bounds and its
// arrays constant indices, so they can live in registers (a slot past the
// head holds 0 and adds 0).
#define MD_ATTENTION_LANE_VALUES (MD_ATTENTION_MAX_HEAD_DIM / MD_SIMD_WIDTH)

// ---- a cached row across the lanes of a SIMD group --------------------------
// The SIMD group reads a row together, each load instruction one
// contiguous run of it: F16 as 32-bit words (two values each) at words
// lane, lane + 32, ... when head_dim is even (every row then starts on a
// word), else value by value as F32; F32 values lane, lane + 32, ...;
// Q8_0 value lane of each block (its bytes, and the block's scale, which
// every lane reads). Slot i of a lane holds the row's value md_lane_dim(i).
inline bool md_lane_words(uint head_dim) { return (head_dim & 1u) == 0; }
inline uint md_lane_dim(device const half*, uint head_dim, uint lane, uint i) {
  return md_lane_words(head_dim) ? 2u * (lane + MD_SIMD_WIDTH * (i / 2u)) + (i & 1u) : lane + MD_SIMD_WIDTH * i;
}
inline uint md_lane_dim(device const float*, uint, uint lane, uint i) { return lane + MD_SIMD_WIDTH * i; }
inline uint md_lane_dim(device const md_block_q8_0*, uint, uint lane, uint i) { return lane + MD_SIMD_WIDTH * i; }
// The slots a row of head_dim values fills (the last may be partial: its
// lanes past head_dim hold 0).
inline uint md_lane_slots(device const half*, uint head_dim) {
  return md_lane_words(head_dim) ? 2u * ((head_dim / 2u + MD_SIMD_WIDTH - 1u) / MD_SIMD_WIDTH)
                                 : (head_dim + MD_SIMD_WIDTH - 1u) / MD_SIMD_WIDTH;
}
inline uint md_lane_slots(device const float*, uint head_dim) { return (head_dim + MD_SIMD_WIDTH - 1u) / MD_SIMD_WIDTH; }
inline uint md_lane_slots(device const md_block_q8_0*, uint head_dim) { return head_dim / MD_QK; }

// Values lane, lane + 32, ... of a row of scalars (F32, and F16 heads of
// odd length).
template <uint SLOTS, typename Scalar>
inline void md_lane_scalars(device const Scalar* row, uint head_dim, uint lane, thread float* v) {
  for (uint i = 0; i < SLOTS; ++i) {
    const uint d = lane + MD_SIMD_WIDTH * i;
    v[i] = d < head_dim ? float(row[d]) : 0.0f;
  }
}
template <uint SLOTS>
inline void md_lane_values(device const half* row, uint head_dim, uint lane, thread float* v) {
  if (!md_lane_words(head_dim)) return md_lane_scalars<SLOTS>(row, head_dim, lane, v);
  device const uint* words = (device const uint*)row;
  for (uint i = 0; i < SLOTS; i += 2) {
    const uint w = lane + MD_SIMD_WIDTH * (i / 2u);
    const uint bits = 2u * w < head_dim ? words[w] : 0u;
    v[i] = float(as_type<half>(md_u16(bits & 0xffffu)));
    v[i + 1] = float(as_type<half>(md_u16(bits >> 16)));
  }
}
template <uint SLOTS>
inline void md_lane_values(device const float* row, uint head_dim, uint lane, thread float* v) {
  md_lane_scalars<SLOTS>(row, head_dim, lane, v);
}
template <uint SLOTS>
inline void md_lane_values(device const md_block_q8_0* row, uint head_dim, uint lane, thread float* v) {
  for (uint b = 0; b < SLOTS; ++b) v[b] = b * MD_QK < head_dim ? md_block_value(row + b, lane) : 0.0f;
}

// ---- the query heads of a pass, in the lanes -----------------------------------
// Each lane keeps the query values of its slots, as the cache type takes
// them: F16 rounded to float16 (as llama.cpp), F32 as they are, and for
// Q8_0 the query quantized to Q8_0 blocks like the key (the CPU's dot and
// llama.cpp's): the integer values and each block's scale.
template <typename Cache, uint SLOTS>
struct md_lane_query {
  float values[MD_ATTENTION_GROUP][SLOTS];
};
template <uint SLOTS>
struct md_lane_query<md_block_q8_0, SLOTS> {
  int quants[MD_ATTENTION_GROUP][SLOTS];
  float scales[MD_ATTENTION_GROUP][SLOTS];
};

template <typename Cache, uint SLOTS>
inline void md_load_query(device const Cache* cache, device const float* queries, uint head_dim, uint count,
                          uint lane, thread md_lane_query<Cache, SLOTS>& q) {
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
    for (uint s = 0; s < SLOTS; ++s) {
      const uint d = md_lane_dim(cache, head_dim, lane, s);
      q.values[i][s] = i < count && d < head_dim ? md_query_operand(cache, queries[i * head_dim + d]) : 0.0f;
    }
  }
}
// Q8_0: d = max |x| / 127 (as float16) and q = nearest(x * 127 / max |x|)
// per block, the CPU's quantizeActivations; the max over the lanes is exact.
template <uint SLOTS>
inline void md_load_query(device const md_block_q8_0*, device const float* queries, uint head_dim, uint count,
                          uint lane, thread md_lane_query<md_block_q8_0, SLOTS>& q) {
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
    for (uint b = 0; b < SLOTS; ++b) {
      q.quants[i][b] = 0;
      q.scales[i][b] = 0.0f;
      if (i < count && b * MD_QK < head_dim) {  // the same for every lane
        const float x = queries[i * head_dim + b * MD_QK + lane];
        const float amax = simd_max(fabs(x));
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        q.quants[i][b] = int(rint(x * id));
        q.scales[i][b] = float(half(amax / 127.0f));
      }
    }
  }
}

// The dots of the pass's query heads with one cached key row, before the
// scale: each lane's products summed over its slots with explicit fma(),
// then over the lanes.
// Q8_0 sums integer products per block (exact in any order), times both
// blocks' scales, block by block (the CPU's dot).
template <typename Cache, uint SLOTS>
inline void md_key_dots(device const Cache* key, thread const md_lane_query<Cache, SLOTS>& q, uint head_dim,
                        uint count, uint lane, thread float* dots) {
  float k[SLOTS];
  md_lane_values<SLOTS>(key, head_dim, lane, k);
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
    float partial = 0.0f;
    for (uint s = 0; s < SLOTS; ++s) partial = fma(q.values[i][s], k[s], partial);
    dots[i] = i < count ? simd_sum(partial) : 0.0f;  // count is the same for every lane
  }
}
template <uint SLOTS>
inline void md_key_dots(device const md_block_q8_0* key, thread const md_lane_query<md_block_q8_0, SLOTS>& q,
                        uint head_dim, uint count, uint lane, thread float* dots) {
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) dots[i] = 0.0f;
  for (uint b = 0; b < SLOTS; ++b) {
    if (b * MD_QK >= head_dim) continue;  // the same for every lane
    const int k = int(key[b].qs[lane]);
    const float scale = float(as_type<half>(key[b].d));
    for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
      if (i < count) dots[i] += float(simd_sum(k * q.quants[i][b])) * (scale * q.scales[i][b]);
    }
  }
}

// A SIMD group's running softmax for the pass's query heads: the max score
// m, the sum l of exp(score - m) and the output sum, the lane's slots.
template <uint SLOTS>
struct md_online_softmax {
  float top[MD_ATTENTION_GROUP], total[MD_ATTENTION_GROUP], acc[MD_ATTENTION_GROUP][SLOTS];
};
template <uint SLOTS>
inline void md_start_softmax(thread md_online_softmax<SLOTS>& state) {
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
    state.top[i] = -INFINITY;
    state.total[i] = 0.0f;
    for (uint s = 0; s < SLOTS; ++s) state.acc[i][s] = 0.0f;
  }
}

// Position p of a block: its scores against its key row, into lane p's
// `mine` (the other lanes keep theirs).
template <typename Cache, uint SLOTS>
inline void md_score_position(device const Cache* key, thread const md_lane_query<Cache, SLOTS>& q, float scale,
                              uint head_dim, uint count, uint lane, uint p, thread float* mine) {
  float dots[MD_ATTENTION_GROUP];
  md_key_dots(key, q, head_dim, count, lane, dots);
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) mine[i] = lane == p ? dots[i] * scale : mine[i];
}

// The block's step of the softmax, lane p for position p: the running max
// m takes the block's, the sum l and the output are rescaled once, and
// `weights` gets each lane's exp(score - m) (0 past the block's positions).
template <uint SLOTS>
inline void md_softmax_block(thread const float* mine, uint count, thread md_online_softmax<SLOTS>& state,
                             thread float* weights) {
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
    weights[i] = 0.0f;
    if (i >= count) continue;  // the same for every lane
    const float grown = max(state.top[i], simd_max(mine[i]));
    const float rescale = exp(state.top[i] - grown);  // 0 at the first block (top -inf)
    weights[i] = exp(mine[i] - grown);
    state.top[i] = grown;
    state.total[i] = fma(state.total[i], rescale, simd_sum(weights[i]));
    for (uint s = 0; s < SLOTS; ++s) state.acc[i][s] *= rescale;
  }
}

// Position p of a block: its value row times its weight (lane p's, shuffled
// to all) into the output slots.
template <typename Cache, uint SLOTS>
inline void md_add_value(device const Cache* value, thread const float* weights, uint head_dim, uint count, uint lane,
                         uint p, thread md_online_softmax<SLOTS>& state) {
  float v[SLOTS];
  md_lane_values<SLOTS>(value, head_dim, lane, v);
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
    if (i >= count) continue;
    const float w = simd_shuffle(weights[i], p);
    for (uint s = 0; s < SLOTS; ++s) state.acc[i][s] = fma(w, v[s], state.acc[i][s]);
  }
}

// One step of the online softmax over up to MD_ATTENTION_BLOCK of the SIMD
// group's positions (position p at key_rows + p * row_stride, the same
// offset into value_rows) for the pass's `count` query heads, as
// llama.cpp's flash_attn_ext_vec does it per block of the cache:
// - the scores: the 32 lanes read each key row together and each head's dot
//   is a SIMD-group sum; lane p keeps position p's score;
// - the softmax, lane-parallel: the block's max joins the running max m
//   once per block (one rescale of the sum l and the output per block, not
//   per position), and lane p takes its position's weight exp(score - m);
//   the weights' SIMD-group sum joins l;
// - the values: each value row read together, its weight shuffled from its
//   lane to all, added into the output slots.
// Each key and value row is still read once. native/counters/alu_probes.cpp
// counts the arithmetic of each of the three steps.
template <typename Cache, uint SLOTS>
inline void md_attend_block(device const Cache* key_rows, device const Cache* value_rows, ulong row_stride,
                            uint positions, thread const md_lane_query<Cache, SLOTS>& q, float scale, uint head_dim,
                            uint count, uint lane, thread md_online_softmax<SLOTS>& state) {
  float mine[MD_ATTENTION_GROUP];
  for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) mine[i] = -INFINITY;  // a lane past the block's positions weighs 0
  for (uint p = 0; p < MD_ATTENTION_BLOCK; ++p) {
    if (p >= positions) break;  // the same for every lane
    md_score_position(md_cache_at(key_rows, p * row_stride), q, scale, head_dim, count, lane, p, mine);
  }
  float weights[MD_ATTENTION_GROUP];
  md_softmax_block(mine, count, state, weights);
  for (uint p = 0; p < MD_ATTENTION_BLOCK; ++p) {
    if (p >= positions) break;  // the same for every lane
    md_add_value(md_cache_at(value_rows, p * row_stride), weights, head_dim, count, lane, p, state);
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
  const float c = cos(angle) * params.attn_factor, s = sin(angle) * params.attn_factor;  // LongRoPE's factor; 1 otherwise
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
// KV head's group (MD_ATTENTION_GROUP of them per pass): each K and V row
// is loaded once per pass, not once per query head. Split j of the
// query's kv_length + i positions is the j-th of `splits` near-equal
// ranges, so every threadgroup has work at every length.
//
// SIMD group s takes positions begin + s, begin + s + S, ... (S SIMD
// groups) as llama.cpp's flash_attn_ext_vec and MLX's sdpa_vector do: the
// 32 lanes load a K row together (whole lines), each head's score is a
// SIMD-group sum, and the softmax runs online in registers (a running max
// m, the sum l of exp(score - m), the output rescaled when m grows) a block
// of 32 positions at a time (md_attend_block), the float32 weights
// exp(score - m) meeting V.
// Then the S groups' (m, l, output) combine through threadgroup memory in
// group order: a fixed order, so a query gets the same bits in a batch as
// alone.
//
// With one split the threadgroup divides by l and writes `out`. With more
// (long contexts: one head's whole context is too much for one of the
// GPU's cores), it writes each head's max m, its sum l and its
// unnormalised output to `partials`, and md_attention_merge_f32 combines
// the splits.
template <typename Cache, uint SLOTS>
inline void md_attention(device const float* q, device const Cache* keys, device const Cache* values,
                         constant md_attention_params& params, device float* out, device float* partials, uint group,
                         uint tid, uint threads, uint lane, uint simd_index, threadgroup float* stats,
                         threadgroup float* outputs) {
  const uint split = group % params.splits, g = (group / params.splits) % params.kv_heads;
  const uint query = group / (params.splits * params.kv_heads);
  if (query >= params.count) return;
  const uint head_dim = params.head_dim, kv_dim = params.kv_heads * head_dim;
  const uint group_heads = params.heads / params.kv_heads, simd_groups = threads / MD_SIMD_WIDTH;
  // Positions first .. length - 1: the last `window` of them on a windowed layer.
  const uint length = params.kv_length + query;
  const uint first = params.window != 0 && length > params.window ? length - params.window : 0u;
  const uint chunk = (length - first + params.splits - 1) / params.splits;
  const uint begin = min(length, first + split * chunk), end = min(length, begin + chunk);
  const bool whole = params.splits == 1;

  for (uint pass = 0; pass < group_heads; pass += MD_ATTENTION_GROUP) {
    const uint count = min(group_heads - pass, MD_ATTENTION_GROUP);
    const ulong first_row = ulong(query) * params.heads + g * group_heads + pass;  // (query, head) of the first head
    md_lane_query<Cache, SLOTS> lane_query;
    md_load_query(keys, q + first_row * head_dim, head_dim, count, lane, lane_query);

    md_online_softmax<SLOTS> state;
    md_start_softmax(state);
    // This SIMD group's positions begin + simd_index, + simd_groups, ..., a block of 32 at a time.
    const ulong row_stride = ulong(simd_groups) * kv_dim;
    for (uint t = begin + simd_index; t < end; t += MD_ATTENTION_BLOCK * simd_groups) {
      const ulong at = ulong(t) * kv_dim + ulong(g) * head_dim;
      const uint positions = min(MD_ATTENTION_BLOCK, (end - t + simd_groups - 1) / simd_groups);
      md_attend_block(md_cache_at(keys, at), md_cache_at(values, at), row_stride, positions, lane_query, params.scale,
                      head_dim, count, lane, state);
    }

    // The SIMD groups' results, one head at a time, in group order.
    for (uint i = 0; i < MD_ATTENTION_GROUP; ++i) {
      if (i >= count) break;  // the same for every thread
      if (lane == 0) {
        stats[2 * simd_index] = state.top[i];
        stats[2 * simd_index + 1] = state.total[i];
      }
      for (uint s = 0; s < SLOTS; ++s) {
        const uint d = md_lane_dim(keys, head_dim, lane, s);
        if (d < head_dim) outputs[simd_index * head_dim + d] = state.acc[i][s];
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      float best = -INFINITY;
      for (uint k = 0; k < simd_groups; ++k) best = max(best, stats[2 * k]);
      float weights[MD_ATTENTION_MAX_THREADS / MD_SIMD_WIDTH], sum = 0.0f;
      for (uint k = 0; k < simd_groups; ++k) {
        weights[k] = stats[2 * k] == -INFINITY ? 0.0f : exp(stats[2 * k] - best);  // a group without positions adds 0
        sum += weights[k] * stats[2 * k + 1];
      }
      const ulong row = first_row + i;
      device float* partial = partials + (row * params.splits + split) * MD_ATTENTION_PARTIAL_FLOATS(head_dim);
      for (uint d = tid; d < head_dim; d += threads) {
        float value = 0.0f;
        for (uint k = 0; k < simd_groups; ++k) value += weights[k] * outputs[k * head_dim + d];
        if (whole) out[row * head_dim + d] = value / sum;
        else partial[2 + d] = value;
      }
      if (!whole && tid == 0) {
        partial[0] = best;  // -inf for an empty split, whose weight in the merge is 0
        partial[1] = sum;
      }
      // The next head reuses the threadgroup memory: every thread is past this one's reads.
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
}

// The smallest SLOTS that holds the head (the same for every thread).
template <typename Cache>
inline void md_attention_any(device const float* q, device const Cache* keys, device const Cache* values,
                             constant md_attention_params& params, device float* out, device float* partials,
                             uint group, uint tid, uint threads, uint lane, uint simd_index, threadgroup float* stats,
                             threadgroup float* outputs) {
  const uint slots = md_lane_slots(keys, params.head_dim);
  if (slots <= 2)
    md_attention<Cache, 2>(q, keys, values, params, out, partials, group, tid, threads, lane, simd_index, stats,
                           outputs);
  else if (slots <= 4)
    md_attention<Cache, 4>(q, keys, values, params, out, partials, group, tid, threads, lane, simd_index, stats,
                           outputs);
  else
    md_attention<Cache, MD_ATTENTION_LANE_VALUES>(q, keys, values, params, out, partials, group, tid, threads, lane,
                                                  simd_index, stats, outputs);
}

#define MD_ATTENTION_BUFFERS(Cache)                                                                                \
  device const float *q [[buffer(0)]], device const Cache *keys [[buffer(1)]],                                      \
      device const Cache *values [[buffer(2)]], constant md_attention_params &params [[buffer(3)]],                 \
      device float *out [[buffer(4)]], device float *partials [[buffer(5)]]

// Each SIMD group's max and sum, and its output for one head.
#define MD_ATTENTION_SCRATCH                                                           \
  MD_THREADGROUP_ARRAY(float, stats, 2u * (MD_ATTENTION_MAX_THREADS / MD_SIMD_WIDTH)); \
  MD_THREADGROUP_ARRAY(float, outputs, (MD_ATTENTION_MAX_THREADS / MD_SIMD_WIDTH) * MD_ATTENTION_MAX_HEAD_DIM)

kernel void md_attention_f16(MD_ATTENTION_BUFFERS(half), MD_THREAD_IDS) {
  MD_ATTENTION_SCRATCH;
  md_attention_any(q, keys, values, params, out, partials, group, tid, threads, lane, simd_index, stats, outputs);
}

kernel void md_attention_f32(MD_ATTENTION_BUFFERS(float), MD_THREAD_IDS) {
  MD_ATTENTION_SCRATCH;
  md_attention_any(q, keys, values, params, out, partials, group, tid, threads, lane, simd_index, stats, outputs);
}

kernel void md_attention_q8_0(MD_ATTENTION_BUFFERS(md_block_q8_0), MD_THREAD_IDS) {
  MD_ATTENTION_SCRATCH;
  md_attention_any(q, keys, values, params, out, partials, group, tid, threads, lane, simd_index, stats, outputs);
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
