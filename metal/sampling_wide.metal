// sampling_wide.metal: md_sample_f16's step for one row, spread over the
// whole GPU. md_sample_f16 gives a row one threadgroup, so one of the 8 to
// 40 GPU cores reads all of it; here the passes over the row run on G
// threadgroups (G = threadgroups_per_grid, any number), and only the small
// steps between them on one:
//
//   1 prepare (G)  the edited copy's slices (sanitised, masked) and zeroed
//                  marks, when there are edits; the histogram zeroed, when
//                  top-k or top-p is on
//   2 edit (1)     bias and penalties on the copy (sparse: list lengths)
//   3 count (G)    each slice's top key and first index -> partials; its
//                  keys into the histogram (device atomics: integer counts)
//   4 filter (1)   the row's top from the partials; greedy, or tau from the
//                  histogram and the noise floor (md_noise_floor_key)
//   5 noise (G)    each slice's best z + T * g over keys >= the floor
//   6 pick (1)     the best of the partials -> tokens[0]
//
// Every dispatch binds the same buffers: md_sample_f16's 0-8 (one row) and
//   9  partials  G md_wide_partial, one per threadgroup of 3 and 5
//   10 state     one md_wide_state, from 3 and 4 to 5 and 6
// The host runs 3 and 5 with the same G (each records it for the next step).
//
// The token is md_sample_f16's, bit for bit, for any G and any threads per
// threadgroup: the passes share md_sampling_steps.h, slices only change
// which thread visits which token, and what crosses threadgroups is
// integers or maxima with the lowest index among ties.
#include "md_sampling_steps.h"

#define MD_WIDE_BUFFERS                                                                                        \
  device const half *logits [[buffer(0)]], constant md_sampling_params &params [[buffer(1)]],                 \
      device const uint *history [[buffer(2)]], device const md_bias_entry *bias [[buffer(3)]],               \
      device half *edited [[buffer(4)]], device atomic_uint *histogram [[buffer(5)]],                         \
      device uint *tokens [[buffer(6)]], device atomic_uint *marks [[buffer(7)]],                             \
      device const uint *mask [[buffer(8)]], device md_wide_partial *partials [[buffer(9)]],                  \
      device md_wide_state *state [[buffer(10)]]

// The row the passes after step 2 read: the edited copy when there are edits.
inline device const half* md_wide_row(device const half* logits, device half* edited, md_edit_plan plan) {
  return plan.any ? edited : logits;
}

kernel void md_sample_wide_prepare_f16(MD_WIDE_BUFFERS, MD_THREAD_IDS) {
  const md_edit_plan plan = md_edit_plan_of(params, 0);
  if (plan.any)
    md_copy_sanitised(logits, edited, marks, mask, plan.masked,
                      md_slice_range(params.vocab_size, group, grid_groups, tid, threads));
  if (md_needs_histogram(params))
    md_zero_bins(histogram, MD_HALF_KEY_NEG_INF, MD_HALF_KEY_MAX_FINITE, group * threads + tid, grid_groups * threads);
}

kernel void md_sample_wide_edit_f16(MD_WIDE_BUFFERS, MD_THREAD_IDS) {
  const md_edit_plan plan = md_edit_plan_of(params, 0);
  if (plan.any) md_apply_sparse_edits(edited, marks, params, history, plan, bias, tid, threads);
}

kernel void md_sample_wide_count_f16(MD_WIDE_BUFFERS, MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  device const half* row = md_wide_row(logits, edited, md_edit_plan_of(params, 0));
  const md_token_range slice = md_slice_range(params.vocab_size, group, grid_groups, tid, threads);
  const md_best<int> mine = md_range_top_key(row, slice);
  const md_best<int> top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH,
                                               MD_KEY_NONE, best_keys, best_indices);
  if (tid == 0) {
    partials[group].top_key = top.value;
    partials[group].top_index = top.index;
    if (group == 0) state->groups = grid_groups;
  }
  if (md_needs_histogram(params)) md_count_keys(row, slice, MD_HALF_KEY_NEG_INF, histogram);
}

kernel void md_sample_wide_filter_f16(MD_WIDE_BUFFERS, MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, count_scan, MD_SCAN_SLOTS);
  MD_THREADGROUP_ARRAY(float, masses, MD_MASS_SLOTS);
  MD_THREADGROUP_ARRAY(int, thresholds, 2);
  // Step 3: the row's top, the first index among ties (slices are in token order).
  const uint slices = state->groups;
  md_best<int> mine;
  mine.value = MD_KEY_NONE;
  mine.index = MD_NO_TOKEN;
  for (uint g = tid; g < slices; g += threads) {
    if (partials[g].top_key > mine.value) {
      mine.value = partials[g].top_key;
      mine.index = partials[g].top_index;
    }
  }
  const md_best<int> top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH,
                                               MD_KEY_NONE, best_keys, best_indices);
  // Step 4, or step 5 and step 6's floor.
  const bool greedy = top.value == MD_HALF_KEY_NEG_INF || params.temperature == 0.0f;
  int floor_key = MD_HALF_KEY_NEG_INF;
  if (!greedy) {  // uniform: every thread has the same `top`
    const md_filter_plan filters = md_filter_plan_of(params, top.value);
    const int tau = md_filter_tau(params, filters, top.value, histogram, tid, threads, lane, simd_index, count_scan,
                                  masses, thresholds);
    floor_key = md_noise_floor_key(params.temperature, md_noise_key(params.seed, params.position), top.value,
                                   top.index, tau);
  }
  if (tid == 0) {
    state->floor_key = floor_key;
    state->top_index = top.value == MD_HALF_KEY_NEG_INF ? MD_NO_TOKEN : top.index;
    state->greedy = greedy ? 1u : 0u;
  }
}

kernel void md_sample_wide_noise_f16(MD_WIDE_BUFFERS, MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, best_scores, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  if (tid == 0 && group == 0) state->groups = grid_groups;  // for the pick
  if (state->greedy != 0u) return;  // uniform
  device const half* row = md_wide_row(logits, edited, md_edit_plan_of(params, 0));
  const md_best<float> mine =
      md_range_noise_best(row, md_slice_range(params.vocab_size, group, grid_groups, tid, threads), state->floor_key,
                          params.temperature, md_noise_key(params.seed, params.position));
  const md_best<float> best = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH,
                                                  -INFINITY, best_scores, best_indices);
  if (tid == 0) {
    partials[group].score = best.value;
    partials[group].score_index = best.index;
  }
}

kernel void md_sample_wide_pick_f16(MD_WIDE_BUFFERS, MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, best_scores, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  if (state->greedy != 0u) {  // uniform
    if (tid == 0) tokens[0] = state->top_index;
    return;
  }
  md_best<float> mine;
  mine.value = -INFINITY;
  mine.index = MD_NO_TOKEN;
  for (uint g = tid; g < state->groups; g += threads) {
    if (partials[g].score > mine.value) {
      mine.value = partials[g].score;
      mine.index = partials[g].score_index;
    }
  }
  const md_best<float> best = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH,
                                                  -INFINITY, best_scores, best_indices);
  if (tid == 0) tokens[0] = best.index;
}
