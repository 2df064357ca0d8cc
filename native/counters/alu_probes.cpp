// alu_probes.cpp: the per-lane steps of the matrix-vector kernels and of
// the decode attention as functions of their own, for scripts/count-alu.mjs to compile to LLVM IR
// (check-metal's address-space mode: Metal's half as __fp16, so a float16
// conversion is one instruction) and count the arithmetic of. Never
// linked: the functions exist to be counted. Each is the kernels' own code
// (md_matvec_rows.h, md_block_values.h), called as the kernels call it.
#include "md_kernel.h"
#include "md_matvec_rows.h"
#include "attention.metal"

extern "C" {

// A quantized part's dot, read from the stage: one lane, one part.
#define MD_PROBE_DOT(suffix)                                                                            \
  float md_probe_dot_##suffix(threadgroup const md_block_##suffix* b, uint part, thread const float* x, \
                              md_x_sums xs) {                                                           \
    return md_block_dot<md_threadgroup_space>(b, part, x, xs);                                          \
  }
MD_PROBE_DOT(q8_0)
MD_PROBE_DOT(q4_0)
MD_PROBE_DOT(q4_1)
MD_PROBE_DOT(q5_0)
MD_PROBE_DOT(q4_k)
MD_PROBE_DOT(q5_k)
MD_PROBE_DOT(q6_k)
MD_PROBE_DOT(q5_1)
MD_PROBE_DOT(iq4_nl)
MD_PROBE_DOT(q2_k)
MD_PROBE_DOT(q3_k)
MD_PROBE_DOT(iq4_xs)
#undef MD_PROBE_DOT

// A float part of a full window: read from the stage, transposed, dotted.
#define MD_PROBE_FLOAT_PART(suffix)                                                                          \
  float md_probe_dot_##suffix(device const md_block_##suffix* w, threadgroup const md_u8* window, uint lane, \
                              thread const float* x) {                                                       \
    float wr[MD_QK];                                                                                         \
    md_staged_float_part(w, window, lane, wr);                                                               \
    return md_part_dot(wr, x);                                                                               \
  }
MD_PROBE_FLOAT_PART(f32)
MD_PROBE_FLOAT_PART(f16)
MD_PROBE_FLOAT_PART(bf16)
#undef MD_PROBE_FLOAT_PART

// One line of a window staged, one lane's word: a line inside the row, and
// one at either end of it.
void md_probe_stage_whole_line(device const uint* words, ulong first, uint lane, threadgroup uint* to) {
  md_stage_whole_line(words, first, lane, to);
}
void md_probe_stage_line(device const uint* words, device const md_u16* halves, ulong line, uint phase,
                         ulong first_word, ulong last_word, ulong matrix_end, uint lane, threadgroup uint* to) {
  md_stage_line(words, halves, line, phase, first_word, last_word, matrix_end, lane, to);
}

// x's full window for one token: loaded coalesced, transposed.
void md_probe_window_x(device const float* xt, uint base, uint lane, thread float* xr) {
  md_full_window_x(xt, base, lane, xr);
}

// The half sums of x's part the quantized dots fold their offsets into.
md_x_sums md_probe_half_sums(thread const float* xr) { return md_half_sums(xr); }

// The attention's steps (F16 cache) for a pass of `heads` query heads of
// head_dim 32 x slots (the kernel's SLOTS: 2 for a head of 64, 4 for 128,
// 8 for 256), one head and eight, so that the cost per head and the rest
// are both known: a position's scores and its value row (each once per
// cached position), and the softmax (once per block of MD_ATTENTION_BLOCK
// positions). Flattened: the head count folds, as it does in the kernel,
// where it is the same for every lane.
#define MD_PROBE_ATTEND(slots, heads)                                                                                  \
  __attribute__((flatten)) void md_probe_score_f16_s##slots##_h##heads(                                                \
      device const half* key, thread const md_lane_query<half, slots>& q, uint lane, uint p, thread float* mine) {     \
    md_score_position<half, slots>(key, q, 0.125f, 32u * slots, heads, lane, p, mine);                                 \
  }                                                                                                                    \
  __attribute__((flatten)) void md_probe_softmax_s##slots##_h##heads(                                                  \
      thread const float* mine, thread md_online_softmax<slots>& state, thread float* weights) {                       \
    md_softmax_block<slots>(mine, heads, state, weights);                                                              \
  }                                                                                                                    \
  __attribute__((flatten)) void md_probe_value_f16_s##slots##_h##heads(device const half* value,                       \
                                                                       thread const float* weights, uint lane, uint p, \
                                                                       thread md_online_softmax<slots>& state) {       \
    md_add_value<half, slots>(value, weights, 32u * slots, heads, lane, p, state);                                     \
  }
MD_PROBE_ATTEND(2, 1)
MD_PROBE_ATTEND(2, 8)
MD_PROBE_ATTEND(4, 1)
MD_PROBE_ATTEND(4, 8)
MD_PROBE_ATTEND(8, 1)
MD_PROBE_ATTEND(8, 8)
#undef MD_PROBE_ATTEND

}  // extern "C"
