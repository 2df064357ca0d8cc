// sampling.metal: one sampling step of docs/sampling.md on float16 logits.
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
// summed in an order fixed by the keys (md_sampling_steps.h), so every run,
// every launch shape and every GPU gives the same bits. Scores stay
// float32. The steps live in md_sampling_steps.h, shared with the form
// that spreads one row over many threadgroups (sampling_wide.metal).
#include "md_sampling_steps.h"

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
                                     threadgroup float* masses, threadgroup int* thresholds) {
  const uint vocab = params.vocab_size;
  const md_token_range all = md_row_range(vocab, tid, threads);
  device atomic_uint* bins = histogram + ulong(group) * MD_HALF_KEY_BINS;

  // Steps 1-2, on a copy only when there is something to edit.
  const md_edit_plan plan = md_edit_plan_of(params, group);
  md_filtered_row out;
  out.row = logits + ulong(group) * vocab;
  if (plan.any) {
    device half* edited_row = edited + ulong(group) * vocab;
    device atomic_uint* row_marks = marks + ulong(group) * vocab;
    md_copy_sanitised(out.row, edited_row, row_marks, mask + ulong(group) * md_mask_words(vocab), plan.masked, all);
    threadgroup_barrier(mem_flags::mem_device);
    md_apply_sparse_edits(edited_row, row_marks, params, history, plan, bias, tid, threads);
    out.row = edited_row;
  }

  // Step 3: all -inf. Step 4: greedy.
  md_best<int> mine = md_range_top_key(out.row, all);
  out.top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH, MD_KEY_NONE,
                                best_keys, best_indices);
  out.tau = MD_HALF_KEY_NEG_INF;
  out.greedy = out.top.value == MD_HALF_KEY_NEG_INF || params.temperature == 0.0f;
  if (out.greedy) return out;  // uniform: every thread has the same `top`

  // Step 5: the filters, as one threshold key tau.
  const md_filter_plan filters = md_filter_plan_of(params, out.top.value);
  if (filters.top_k || filters.top_p) {
    md_zero_bins(bins, filters.count_low, out.top.value, tid, threads);
    threadgroup_barrier(mem_flags::mem_device);
    md_count_keys(out.row, all, filters.count_low, bins);
    threadgroup_barrier(mem_flags::mem_device);
  }
  out.tau = md_filter_tau(params, filters, out.top.value, bins, tid, threads, lane, simd_index, count_scan, masses,
                          thresholds);
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
  MD_THREADGROUP_ARRAY(float, masses, MD_MASS_SLOTS);
  MD_THREADGROUP_ARRAY(int, thresholds, 2);

  const md_filtered_row filtered = md_filter_row(logits, params, history, bias, edited, histogram, marks, mask, group,
                                                 tid, threads, lane, simd_index, best_keys, best_indices, count_scan,
                                                 masses, thresholds);
  const md_best<int> top = filtered.top;
  if (filtered.greedy) {
    if (tid == 0) tokens[group] = top.value == MD_HALF_KEY_NEG_INF ? MD_NO_TOKEN : top.index;
    return;  // uniform: every thread has the same `top`
  }
  // Step 6: argmax of z + T * g over the keys the filters and the noise
  // bound leave.
  const uint noise_key = md_noise_key(params.seed, params.position + group);
  const int floor_key = md_noise_floor_key(params.temperature, noise_key, top.value, top.index, filtered.tau);
  const md_best<float> mine = md_range_noise_best(filtered.row, md_row_range(params.vocab_size, tid, threads), floor_key,
                                                  params.temperature, noise_key);
  md_best<float> best = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH, -INFINITY,
                                            best_scores, best_indices);
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
  MD_THREADGROUP_ARRAY(float, masses, MD_MASS_SLOTS);
  MD_THREADGROUP_ARRAY(int, thresholds, 2);

  const uint vocab = params.vocab_size;
  const uint draft = drafts[group];
  const md_filtered_row filtered = md_filter_row(logits, params, history, bias, edited, histogram, marks, mask, group,
                                                 tid, threads, lane, simd_index, best_keys, best_indices, count_scan,
                                                 masses, thresholds);
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
