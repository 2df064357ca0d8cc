// argmax.metal: greedy decoding. One threadgroup per row, many rows per
// dispatch; the token (lowest index among ties) goes to tokens[row], or
// MD_NO_TOKEN when the whole row is -inf. NaN counts as -inf and +inf as
// the largest finite value (docs/sampling.md step 0). A chain binds `tokens`
// at an offset so that each step writes the next slot. With
// MD_FLAG_TOKEN_MASK, `mask` (ceil(vocab_size / 32) words per row) refuses
// tokens: they count as -inf.
#include "md_sampling_steps.h"

kernel void md_argmax_f16(device const half* logits [[buffer(0)]],
                          constant md_argmax_params& params [[buffer(1)]],
                          device uint* tokens [[buffer(2)]],
                          device const uint* mask [[buffer(3)]],
                          MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  const uint vocab = params.vocab_size;
  device const half* row = logits + ulong(group) * vocab;
  md_best<int> mine = (params.flags & MD_FLAG_TOKEN_MASK) != 0u
                          ? md_range_top_allowed_key(row, mask + ulong(group) * md_mask_words(vocab), md_row_range(vocab, tid, threads))
                          : md_range_top_key(row, md_row_range(vocab, tid, threads));
  md_best<int> top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH,
                                         MD_KEY_NONE, best_keys, best_indices);
  if (tid == 0) tokens[group] = top.value == MD_HALF_KEY_NEG_INF ? MD_NO_TOKEN : top.index;
}

kernel void md_argmax_f32(device const float* logits [[buffer(0)]],
                          constant md_argmax_params& params [[buffer(1)]],
                          device uint* tokens [[buffer(2)]],
                          device const uint* mask [[buffer(3)]],
                          MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  const uint vocab = params.vocab_size;
  device const float* row = logits + ulong(group) * vocab;
  md_best<int> mine = (params.flags & MD_FLAG_TOKEN_MASK) != 0u
                          ? md_range_top_allowed_key(row, mask + ulong(group) * md_mask_words(vocab), md_row_range(vocab, tid, threads))
                          : md_range_top_key(row, md_row_range(vocab, tid, threads));
  md_best<int> top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH,
                                         MD_KEY_NONE, best_keys, best_indices);
  if (tid == 0) tokens[group] = top.value == MD_FLOAT_KEY_NEG_INF ? MD_NO_TOKEN : top.index;
}

// One row over the whole GPU, as sampling_wide.metal spreads the sampling
// step: md_argmax_slices_* on G threadgroups (threadgroups_per_grid), each
// slice's top key and first token to partials[group]; md_argmax_pick_* on
// one threadgroup, the best of them (lowest index among ties) to tokens[0]
// (MD_NO_TOKEN when all is -inf). The token is md_argmax_*'s for any G.
// Buffers: md_argmax_*'s 0-3, and
//   4 partials  G md_wide_partial
//   5 state     one md_wide_state (groups: G, from the slices to the pick)
template <typename T>
inline void md_argmax_slice(device const T* row, constant md_argmax_params& params, device const uint* mask,
                            device md_wide_partial* partials, device md_wide_state* state, uint tid, uint group,
                            uint grid_groups, uint threads, uint lane, uint simd_index, threadgroup int* best_keys,
                            threadgroup uint* best_indices) {
  const md_token_range slice = md_slice_range(params.vocab_size, group, grid_groups, tid, threads);
  const md_best<int> mine = (params.flags & MD_FLAG_TOKEN_MASK) != 0u ? md_range_top_allowed_key(row, mask, slice)
                                                                       : md_range_top_key(row, slice);
  const md_best<int> top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH,
                                               MD_KEY_NONE, best_keys, best_indices);
  if (tid == 0) {
    partials[group].top_key = top.value;
    partials[group].top_index = top.index;
    if (group == 0) state->groups = grid_groups;
  }
}

inline void md_argmax_pick(device const md_wide_partial* partials, device const md_wide_state* state, int neg_inf,
                           device uint* tokens, uint tid, uint threads, uint lane, uint simd_index,
                           threadgroup int* best_keys, threadgroup uint* best_indices) {
  md_best<int> mine;
  mine.value = MD_KEY_NONE;
  mine.index = MD_NO_TOKEN;
  for (uint g = tid; g < state->groups; g += threads) {
    if (partials[g].top_key > mine.value) {
      mine.value = partials[g].top_key;
      mine.index = partials[g].top_index;
    }
  }
  const md_best<int> top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH,
                                               MD_KEY_NONE, best_keys, best_indices);
  if (tid == 0) tokens[0] = top.value == neg_inf ? MD_NO_TOKEN : top.index;
}

#define MD_ARGMAX_WIDE_BUFFERS(T)                                                                          \
  device const T *logits [[buffer(0)]], constant md_argmax_params &params [[buffer(1)]],                 \
      device uint *tokens [[buffer(2)]], device const uint *mask [[buffer(3)]],                           \
      device md_wide_partial *partials [[buffer(4)]], device md_wide_state *state [[buffer(5)]]

kernel void md_argmax_slices_f16(MD_ARGMAX_WIDE_BUFFERS(half), MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  md_argmax_slice(logits, params, mask, partials, state, tid, group, grid_groups, threads, lane, simd_index, best_keys,
                  best_indices);
}

kernel void md_argmax_slices_f32(MD_ARGMAX_WIDE_BUFFERS(float), MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  md_argmax_slice(logits, params, mask, partials, state, tid, group, grid_groups, threads, lane, simd_index, best_keys,
                  best_indices);
}

kernel void md_argmax_pick_f16(MD_ARGMAX_WIDE_BUFFERS(half), MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  md_argmax_pick(partials, state, MD_HALF_KEY_NEG_INF, tokens, tid, threads, lane, simd_index, best_keys, best_indices);
}

kernel void md_argmax_pick_f32(MD_ARGMAX_WIDE_BUFFERS(float), MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  md_argmax_pick(partials, state, MD_FLOAT_KEY_NEG_INF, tokens, tid, threads, lane, simd_index, best_keys, best_indices);
}
