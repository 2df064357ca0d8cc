// sampling.metal: one sampling step of SAMPLING-SPEC.md on float16 logits.
// One threadgroup per row; a dispatch of R threadgroups is the batched form
// (speculative verification): row r samples at position + r with
// history_count + r tokens of history.
//
// Buffers, per row r:
//   0 logits     R x V halves, read only
//   1 params     md_sampling_params
//   2 history    token ids, oldest first
//   3 bias       md_bias_entry x bias_count
//   4 edited     R x V halves of scratch: the row after bias and penalties
//   5 histogram  R x MD_HALF_KEY_BINS uints of scratch
//   6 tokens     R uints out: the token, or MD_NO_TOKEN if all is -inf
//   7 marks      R x V uints of scratch: per token, which bias entry is its
//                first, then how often it is in the penalty window
//   8 mask       with MD_FLAG_TOKEN_MASK: R x ceil(V / 32) words, the tokens
//                each row allows (a grammar's); unbound otherwise
//
// The kernel writes the token itself rather than float32 scores for an
// argmax kernel to pick from: the threadgroup already holds the row, so the
// final argmax is one more reduction, where a scores buffer would cost 4V
// bytes written and read again and one more dispatch per token.
//
// Exactness: top-k and top-p are found on a histogram with one bin per
// float16 value (65536 patterns, 63488 sanitised keys), so thresholds are
// exact values of the row with ties counted, never a bisection on floats or
// a window below the max. Top-p's masses are count x weight per value,
// summed in a fixed order (md_threadgroup_exclusive_sum), so every run and
// every GPU gives the same bits. Scores stay float32.
#include "md_kernel.h"

// Step 0 for one stored value.
inline half md_sanitised(half h) {
  return as_type<half>(ushort(md_half_bits_of_key(md_key_of(h))));
}

// Steps 1-2 into `edited`: a sanitised copy of the row (-inf where the
// mask, when there is one, refuses the token), then the bias, then
// the penalties, each applied once per distinct token. Linear in the bias
// list and the window: `marks` (one uint per token, zeroed here) records
// which bias entry of a token comes first and how often a token is in the
// window, where a scan of the list per entry would be quadratic.
inline void md_apply_edits(device const half* input, device half* edited, device atomic_uint* marks,
                           constant md_sampling_params& params, device const uint* history, uint history_start,
                           uint history_end, bool penalties, device const md_bias_entry* bias,
                           device const uint* mask, bool masked, uint tid, uint threads) {
  const uint vocab = params.vocab_size;
  for (uint i = tid; i < vocab; i += threads) {
    edited[i] = masked && !md_mask_allows(mask[i >> 5], i) ? half(-INFINITY) : md_sanitised(input[i]);
    atomic_store_explicit(&marks[i], 0u, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_device);
  // A token listed twice keeps its first bias: the lowest entry j claims
  // it (the largest ~j), and only that entry's thread writes the logit.
  for (uint j = tid; j < params.bias_count; j += threads) {
    uint t = bias[j].token;
    if (t < vocab) atomic_fetch_max_explicit(&marks[t], ~j, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_device);
  for (uint j = tid; j < params.bias_count; j += threads) {
    uint t = bias[j].token;
    if (t < vocab && atomic_load_explicit(&marks[t], memory_order_relaxed) == ~j)
      edited[t] = md_round_half(float(edited[t]) + bias[j].value);
  }
  threadgroup_barrier(mem_flags::mem_device);
  if (!penalties) return;
  for (uint j = tid; j < params.bias_count; j += threads) {
    uint t = bias[j].token;
    if (t < vocab) atomic_store_explicit(&marks[t], 0u, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_device);
  // Count each token of the window; then one thread per distinct token takes
  // the whole count (the exchange leaves 0 for the others) and applies it.
  for (uint j = history_start + tid; j < history_end; j += threads) {
    uint t = history[j];
    if (t < vocab) atomic_fetch_add_explicit(&marks[t], 1u, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_device);
  const float r = params.repeat_penalty;
  for (uint j = history_start + tid; j < history_end; j += threads) {
    uint t = history[j];
    if (t >= vocab) continue;
    const uint count = atomic_exchange_explicit(&marks[t], 0u, memory_order_relaxed);
    if (count == 0u) continue;  // another thread of the same token took it
    float z = float(edited[t]);
    float y = r == 1.0f ? z : (z > 0.0f ? z / r : z * r);
    float offset = float(count) * params.frequency_penalty + params.presence_penalty;
    edited[t] = md_round_half(y - offset);
  }
  threadgroup_barrier(mem_flags::mem_device);
}

// Bins [low, high] of the row's key histogram, counted. Keys index the
// bins from MD_HALF_KEY_NEG_INF.
inline void md_count_keys(device const half* row, uint vocab, int low, int high, device atomic_uint* bins,
                          uint tid, uint threads) {
  for (int k = low + int(tid); k <= high; k += int(threads))
    atomic_store_explicit(&bins[k - MD_HALF_KEY_NEG_INF], 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_device);
  for (uint i = tid; i < vocab; i += threads) {
    int k = md_key_of(row[i]);
    if (k >= low) atomic_fetch_add_explicit(&bins[k - MD_HALF_KEY_NEG_INF], 1u, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_device);
}

// The bins [low, high] are split into one run per thread, the highest run
// to thread 0, so "from the top" is thread order.
struct md_bin_run {
  int top;   // first (highest) key of this thread's run
  uint length;
};

inline md_bin_run md_bin_run_of(int low, int high, uint tid, uint threads) {
  uint span = uint(high - low) + 1;
  md_bin_run run;
  run.length = (span + threads - 1) / threads;
  run.top = high - int(tid * run.length);
  return run;
}

inline uint md_bin_count(device atomic_uint* bins, int key) {
  return atomic_load_explicit(&bins[key - MD_HALF_KEY_NEG_INF], memory_order_relaxed);
}

// top-k: the largest key such that at least k tokens have keys >= it, the
// k-th largest value counted with ties. MD_HALF_KEY_NEG_INF when fewer than
// k tokens have keys >= low.
inline int md_top_k_key(device atomic_uint* bins, int low, int high, uint k, uint tid, uint threads, uint lane,
                        uint simd_index, threadgroup uint* scan, threadgroup int* result) {
  md_bin_run run = md_bin_run_of(low, high, tid, threads);
  uint count = 0;
  for (uint b = 0; b < run.length; ++b) {
    int key = run.top - int(b);
    if (key < low) break;
    count += md_bin_count(bins, key);
  }
  if (tid == 0) result[0] = MD_HALF_KEY_NEG_INF;
  uint total;
  uint before = md_threadgroup_exclusive_sum(count, lane, simd_index, threads / MD_SIMD_WIDTH, total, scan);
  if (before < k && before + count >= k) {  // integer sums: exactly one thread
    uint seen = before;
    for (uint b = 0; b < run.length; ++b) {
      int key = run.top - int(b);
      seen += md_bin_count(bins, key);
      if (seen >= k) {
        result[0] = key;
        break;
      }
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return result[0];
}

// top-p over S_k = keys >= floor_key: the largest key v such that the mass
// of keys >= v reaches p times the mass of S_k. A value's mass is its count
// times its weight exp((z - m) / Tf).
inline int md_top_p_key(device atomic_uint* bins, int floor_key, int high, float max_value, float filter_t,
                        float p, uint tid, uint threads, uint lane, uint simd_index, threadgroup float* scan,
                        threadgroup int* best_keys, threadgroup uint* best_indices, threadgroup int* result) {
  const uint simdgroups = threads / MD_SIMD_WIDTH;
  md_bin_run run = md_bin_run_of(floor_key, high, tid, threads);
  float mass = 0.0f;
  for (uint b = 0; b < run.length; ++b) {
    int key = run.top - int(b);
    if (key < floor_key) break;
    uint count = md_bin_count(bins, key);
    if (count != 0) mass += float(count) * md_exp((md_half_key_value(key) - max_value) / filter_t);
  }
  if (tid == 0) result[1] = floor_key;  // rounding kept every run short of p * W: all of S_k survives
  float total;
  float before = md_threadgroup_exclusive_sum(mass, lane, simd_index, simdgroups, total, scan);
  const float target = p * total;
  // Float prefixes need not be monotone to the last bit: the first thread
  // whose run reaches the target is chosen by a reduction.
  int reaches = before + mass >= target ? 1 : 0;
  md_best<int> first = md_threadgroup_best(reaches, tid, lane, simd_index, simdgroups, 0, best_keys, best_indices);
  if (first.value == 1 && first.index == tid) {
    float seen = before;
    int lowest = run.top;
    for (uint b = 0; b < run.length; ++b) {
      int key = run.top - int(b);
      if (key < floor_key) break;
      uint count = md_bin_count(bins, key);
      if (count == 0) continue;
      lowest = key;
      seen += float(count) * md_exp((md_half_key_value(key) - max_value) / filter_t);
      if (seen >= target) break;
    }
    result[1] = lowest;  // where the walk stopped, or its last value
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return result[1];
}

// Steps 0-5 of row `group`: the row the later steps read (the edited
// copy, or the input when there is nothing to edit), its top key and
// index, and the filters' threshold key tau. `greedy`: the row is all -inf
// or the temperature is 0, and tau is not computed.
struct md_filtered_row {
  device const half* row;
  md_best<int> top;
  int tau;
  bool greedy;
};

inline md_filtered_row md_filter_row(device const half* logits, constant md_sampling_params& params,
                                     device const uint* history, device const md_bias_entry* bias, device half* edited,
                                     device atomic_uint* histogram, device atomic_uint* marks,
                                     device const uint* mask, uint group, uint tid,
                                     uint threads, uint lane, uint simd_index, threadgroup int* best_keys,
                                     threadgroup uint* best_indices, threadgroup uint* count_scan,
                                     threadgroup float* mass_scan, threadgroup int* thresholds) {
  const uint vocab = params.vocab_size;
  const uint simdgroups = threads / MD_SIMD_WIDTH;
  device const half* input = logits + ulong(group) * vocab;
  device half* edited_row = edited + ulong(group) * vocab;
  device atomic_uint* bins = histogram + ulong(group) * MD_HALF_KEY_BINS;

  // Steps 1-2, on a copy only when there is something to edit.
  const uint history_end = params.history_count + group;
  const uint history_start = history_end > params.history_window ? history_end - params.history_window : 0;
  const bool penalties = history_end > history_start &&
                         md_penalties_on(params.repeat_penalty, params.frequency_penalty, params.presence_penalty);
  const bool masked = (params.flags & MD_FLAG_TOKEN_MASK) != 0u;
  md_filtered_row out;
  out.row = input;
  if (penalties || params.bias_count > 0 || masked) {
    md_apply_edits(input, edited_row, marks + ulong(group) * vocab, params, history, history_start, history_end,
                   penalties, bias, mask + ulong(group) * md_mask_words(vocab), masked, tid, threads);
    out.row = edited_row;
  }

  // Step 3: all -inf. Step 4: greedy.
  md_best<int> mine = md_thread_top_key(out.row, vocab, tid, threads);
  out.top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, simdgroups, MD_KEY_NONE, best_keys,
                                best_indices);
  out.tau = MD_HALF_KEY_NEG_INF;
  out.greedy = out.top.value == MD_HALF_KEY_NEG_INF || params.temperature == 0.0f;
  if (out.greedy) return out;  // uniform: every thread has the same `top`

  // Step 5: the filters, as one threshold key tau.
  const float filter_t = (params.flags & MD_FLAG_UNIT_FILTER_TEMPERATURE) != 0u ? 1.0f : params.temperature;
  const float max_value = md_half_key_value(out.top.value);
  int min_p_key = MD_HALF_KEY_NEG_INF;
  if (params.min_p > 0.0f) {
    float shift = filter_t * md_log_any(params.min_p);
    min_p_key = md_half_key_at_least(max_value + shift);
  }
  out.tau = min_p_key;
  const bool top_k = params.top_k > 0u && params.top_k < vocab;
  const bool top_p = params.top_p < 1.0f;
  if (top_k || top_p) {
    // Top-k alone needs only the keys min-p keeps; top-p weighs all of S_k.
    const int low = top_p ? MD_HALF_KEY_NEG_INF : min_p_key;
    md_count_keys(out.row, vocab, low, out.top.value, bins, tid, threads);
    int k_key = MD_HALF_KEY_NEG_INF;
    if (top_k) k_key = md_top_k_key(bins, low, out.top.value, params.top_k, tid, threads, lane, simd_index, count_scan,
                                    thresholds);
    out.tau = max(out.tau, k_key);
    if (top_p) {
      int p_key = md_top_p_key(bins, k_key, out.top.value, max_value, filter_t, params.top_p, tid, threads, lane,
                               simd_index, mass_scan, best_keys, best_indices, thresholds);
      out.tau = max(out.tau, p_key);
    }
  }
  return out;
}

kernel void md_sample_f16(device const half* logits [[buffer(0)]],
                          constant md_sampling_params& params [[buffer(1)]],
                          device const uint* history [[buffer(2)]],
                          device const md_bias_entry* bias [[buffer(3)]],
                          device half* edited [[buffer(4)]],
                          device atomic_uint* histogram [[buffer(5)]],
                          device uint* tokens [[buffer(6)]],
                          device atomic_uint* marks [[buffer(7)]],
                          device const uint* mask [[buffer(8)]],
                          MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(float, best_scores, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, count_scan, MD_SCAN_SLOTS);
  MD_THREADGROUP_ARRAY(float, mass_scan, MD_SCAN_SLOTS);
  MD_THREADGROUP_ARRAY(int, thresholds, 2);

  const uint vocab = params.vocab_size;
  const uint simdgroups = threads / MD_SIMD_WIDTH;
  const md_filtered_row filtered = md_filter_row(logits, params, history, bias, edited, histogram, marks, mask, group,
                                                 tid, threads, lane, simd_index, best_keys, best_indices, count_scan,
                                                 mass_scan, thresholds);
  const md_best<int> top = filtered.top;
  device const half* row = filtered.row;
  if (filtered.greedy) {
    if (tid == 0) tokens[group] = top.value == MD_HALF_KEY_NEG_INF ? MD_NO_TOKEN : top.index;
    return;  // uniform: every thread has the same `top`
  }
  const float temperature = params.temperature;
  const float max_value = md_half_key_value(top.value);
  const int tau = filtered.tau;

  // Step 6: argmax of z + T * g over keys >= tau. g <= MD_GUMBEL_MAX, so a
  // token below (the argmax's score - T * MD_GUMBEL_MAX), less a few ulps
  // for rounding, cannot win and needs no noise: an exact shortcut.
  const uint noise_key = md_noise_key(params.seed, params.position + group);
  const float max_noise = temperature * MD_GUMBEL_MAX;
  const float argmax_scaled = temperature * md_token_noise(noise_key, top.index);
  const float argmax_score = max_value + argmax_scaled;
  float limit = argmax_score - max_noise;
  limit -= (fabs(argmax_score) + max_noise) * 9.5367431640625e-7f;  // 2^-20
  const int window = isinf(limit) || isnan(limit) ? MD_HALF_KEY_NEG_INF : md_half_key_at_least(limit);
  const int floor_key = max(window, tau);
  float score = -INFINITY;
  uint index = MD_NO_TOKEN;
  for (uint i = tid; i < vocab; i += threads) {
    int k = md_key_of(row[i]);
    if (k < floor_key) continue;
    float scaled = temperature * md_token_noise(noise_key, i);
    float s = md_half_key_value(k) + scaled;
    if (s > score) {
      score = s;
      index = i;
    }
  }
  md_best<float> best = md_threadgroup_best(score, index, lane, simd_index, simdgroups, -INFINITY, best_scores,
                                            best_indices);
  if (tid == 0) tokens[group] = best.index;
}

// Speculative rejection sampling's gather: for each row (one threadgroup
// per row, as md_sample_f16's batched form), the probability md_sample_f16
// gives the row's draft token, drafts[group]: exp((z_x - m) / T) over the
// sum of exp((z - m) / T) for the tokens the filters keep, z and the kept
// set being md_sample_f16's (steps 0-5); at temperature 0, 1 for the
// argmax and 0 otherwise; 0 for a token filtered out or a row all -inf.
// The CPU twin is the TypeScript samplingDistribution (lib/js/js-sampler.ts),
// in double precision: the tests compare them.
kernel void md_draft_probability_f16(device const half* logits [[buffer(0)]],
                                     constant md_sampling_params& params [[buffer(1)]],
                                     device const uint* history [[buffer(2)]],
                                     device const md_bias_entry* bias [[buffer(3)]],
                                     device half* edited [[buffer(4)]],
                                     device atomic_uint* histogram [[buffer(5)]],
                                     device const uint* drafts [[buffer(6)]],
                                     device atomic_uint* marks [[buffer(7)]],
                                     device float* probabilities [[buffer(8)]],
                                     device const uint* mask [[buffer(9)]],
                                     MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, count_scan, MD_SCAN_SLOTS);
  MD_THREADGROUP_ARRAY(float, mass_scan, MD_SCAN_SLOTS);
  MD_THREADGROUP_ARRAY(int, thresholds, 2);

  const uint vocab = params.vocab_size;
  const uint draft = drafts[group];
  const md_filtered_row filtered = md_filter_row(logits, params, history, bias, edited, histogram, marks, mask, group,
                                                 tid, threads, lane, simd_index, best_keys, best_indices, count_scan,
                                                 mass_scan, thresholds);
  if (filtered.greedy) {
    const bool chosen = filtered.top.value != MD_HALF_KEY_NEG_INF && filtered.top.index == draft;
    if (tid == 0) probabilities[group] = chosen ? 1.0f : 0.0f;
    return;  // uniform: every thread has the same `filtered`
  }
  const float max_value = md_half_key_value(filtered.top.value);
  float mass = 0.0f;
  for (uint i = tid; i < vocab; i += threads) {
    const int k = md_key_of(filtered.row[i]);
    if (k >= filtered.tau) mass += md_exp((md_half_key_value(k) - max_value) / params.temperature);
  }
  float total;
  md_threadgroup_exclusive_sum(mass, lane, simd_index, threads / MD_SIMD_WIDTH, total, mass_scan);
  if (tid == 0) {
    const int k = draft < vocab ? md_key_of(filtered.row[draft]) : MD_HALF_KEY_NEG_INF;
    probabilities[group] = k >= filtered.tau && k != MD_HALF_KEY_NEG_INF ? md_exp((md_half_key_value(k) - max_value) / params.temperature) / total : 0.0f;
  }
}
