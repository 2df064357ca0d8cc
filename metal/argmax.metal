// argmax.metal: greedy decoding. One threadgroup per row, many rows per
// dispatch; the token (lowest index among ties) goes to tokens[row], or
// MD_NO_TOKEN when the whole row is -inf. NaN counts as -inf and +inf as
// the largest finite value (SAMPLING-SPEC step 0). A chain binds `tokens`
// at an offset so that each step writes the next slot. With
// MD_FLAG_TOKEN_MASK, `mask` (ceil(vocab_size / 32) words per row) refuses
// tokens: they count as -inf.
#include "md_kernel.h"

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
                          ? md_thread_top_allowed_key(row, mask + ulong(group) * md_mask_words(vocab), vocab, tid, threads)
                          : md_thread_top_key(row, vocab, tid, threads);
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
                          ? md_thread_top_allowed_key(row, mask + ulong(group) * md_mask_words(vocab), vocab, tid, threads)
                          : md_thread_top_key(row, vocab, tid, threads);
  md_best<int> top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, threads / MD_SIMD_WIDTH,
                                         MD_KEY_NONE, best_keys, best_indices);
  if (tid == 0) tokens[group] = top.value == MD_FLOAT_KEY_NEG_INF ? MD_NO_TOKEN : top.index;
}
