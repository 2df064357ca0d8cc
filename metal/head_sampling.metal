// head_sampling.metal: FlashSampling on an Apple GPU. When the next token
// depends only on the logits, the temperature and the bias (greedy;
// temperature-only sampling, either with a bias), the LM head and the pick
// are one pass: each threadgroup computes its tiles of logits = W x with
// md_matvec_*'s arithmetic (md_matvec_rows.h, so every logit has the bits
// the unfused head stores), scores them as the sampler would and keeps one
// best per threadgroup; md_head_sample_pick reduces those. The logits row
// (V floats) is never written, then read, then converted to float16 and
// read again: W is read once and the token comes out.
//
// The token is the unfused path's, for any number of threadgroups and
// threads: a row's logit does not depend on which SIMD group computes it,
// and what crosses threads is maxima with the lowest index among ties.
//   flags 0: md_argmax_f32 over the logits md_matvec_* stores.
//   MD_HEAD_HALF: md_half_from_f32, then (MD_HEAD_BIAS) the bias as
//   md_sample_f16's edit step adds it, then md_sample_f16's step 4 or 6.
//
// Buffers (the host binds all of them to both kernels; the pick reads 2,
// 4, 5 and 6):
//   0 w         rows x cols in a GGUF type (md_blocks.h)
//   1 x         cols floats: the normed last hidden state
//   2 params    md_head_sampling_params
//   3 bias      rows floats (MD_HEAD_BIAS; any buffer otherwise)
//   4 partials  one md_wide_partial per threadgroup of md_head_sample_*
//   5 state     one md_wide_state (groups: from the tiles to the pick)
//   6 tokens    the token (the chain binds slot p + 1)
#include "md_matvec_rows.h"
#include "md_sampling_steps.h"

// The best token of this thread's rows so far: a key (argmax modes) or a
// score (sampled), the lowest index among ties as rows come in order.
struct md_head_best {
  int key;
  float score;
  uint index;
};

template <typename Block>
inline void md_head_sample(device const Block* w, device const float* x, constant md_head_sampling_params& params,
                           device const float* bias, device md_wide_partial* partials, device md_wide_state* state,
                           uint group, uint grid_groups, uint tid, uint threads, uint lane, uint simd_index,
                           threadgroup int* best_keys, threadgroup float* best_scores, threadgroup uint* best_indices,
                           threadgroup uint* stage) {
  const uint simdgroups = threads / MD_SIMD_WIDTH, rows = params.rows;
  const bool half_logits = (params.flags & MD_HEAD_HALF) != 0u, biased = (params.flags & MD_HEAD_BIAS) != 0u;
  const bool sampled = half_logits && params.temperature != 0.0f;
  const uint noise_key = md_noise_key(params.seed, params.position);
  md_head_best best;
  best.key = MD_KEY_NONE;
  best.score = -INFINITY;
  best.index = MD_NO_TOKEN;
  // SIMD group s of the grid takes MD_MATVEC_ROWS rows from s * MD_MATVEC_ROWS,
  // then those a grid of SIMD groups further on: uniform per SIMD group, as
  // simd_sum wants.
  for (uint s = group * simdgroups + simd_index; s * MD_MATVEC_ROWS < rows; s += grid_groups * simdgroups) {
    const uint first = s * MD_MATVEC_ROWS;
    float totals[MD_MATVEC_ROWS];
    md_matvec_rows<Block, 1>(w, params.line_phase, x, rows, params.cols, 1, first, lane, simd_index, stage, totals);
    for (uint r = 0; r < MD_MATVEC_ROWS && first + r < rows; ++r) {
      const uint token = first + r;
      int key;
      if (half_logits) {
        half z = half(totals[r]);  // md_half_from_f32's rounding
        if (biased) z = md_round_half(float(md_sanitised(z)) + bias[token]);
        key = md_key_of(z);
      } else {
        key = md_key_of(totals[r]);
      }
      if (sampled) {
        const float score = md_noise_score(key, params.temperature, noise_key, token);
        if (score > best.score) {
          best.score = score;
          best.index = token;
        }
      } else if (key > best.key) {
        best.key = key;
        best.index = token;
      }
    }
  }
  if (sampled) {
    const md_best<float> top = md_threadgroup_best(best.score, best.index, lane, simd_index, simdgroups, -INFINITY,
                                                   best_scores, best_indices);
    if (tid == 0) {
      partials[group].score = top.value;
      partials[group].score_index = top.index;
    }
  } else {
    const md_best<int> top = md_threadgroup_best(best.key, best.index, lane, simd_index, simdgroups, MD_KEY_NONE,
                                                 best_keys, best_indices);
    if (tid == 0) {
      partials[group].top_key = top.value;
      partials[group].top_index = top.index;
    }
  }
  if (tid == 0 && group == 0) state->groups = grid_groups;
}

#define MD_HEAD_SAMPLE_BUFFERS(Block)                                                                      \
  device const Block *w [[buffer(0)]], device const float *x [[buffer(1)]],                                \
      constant md_head_sampling_params &params [[buffer(2)]], device const float *bias [[buffer(3)]],      \
      device md_wide_partial *partials [[buffer(4)]], device md_wide_state *state [[buffer(5)]]

// STAGE: MD_MATVEC_STAGE(block, values) or MD_MATVEC_STAGE(md_block_None, MD_QK) (md_matvec_rows.h).
#define MD_HEAD_SAMPLE_BODY(STAGE)                                                                          \
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);                                                    \
  MD_THREADGROUP_ARRAY(float, best_scores, MD_REDUCE_SLOTS);                                                \
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);                                                \
  STAGE;                                                                                                    \
  md_head_sample(w, x, params, bias, partials, state, group, grid_groups, tid, threads, lane, simd_index,    \
                 best_keys, best_scores, best_indices, stage)

kernel void md_head_sample_f32(MD_HEAD_SAMPLE_BUFFERS(md_block_f32), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_f32, MD_QK));
}
kernel void md_head_sample_f16(MD_HEAD_SAMPLE_BUFFERS(md_block_f16), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_f16, MD_QK));
}
kernel void md_head_sample_bf16(MD_HEAD_SAMPLE_BUFFERS(md_block_bf16), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_bf16, MD_QK));
}
kernel void md_head_sample_q8_0(MD_HEAD_SAMPLE_BUFFERS(md_block_q8_0), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_q8_0, MD_QK));
}
kernel void md_head_sample_q4_0(MD_HEAD_SAMPLE_BUFFERS(md_block_q4_0), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_q4_0, MD_QK));
}
kernel void md_head_sample_q4_1(MD_HEAD_SAMPLE_BUFFERS(md_block_q4_1), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_q4_1, MD_QK));
}
kernel void md_head_sample_q5_0(MD_HEAD_SAMPLE_BUFFERS(md_block_q5_0), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_q5_0, MD_QK));
}
kernel void md_head_sample_q4_k(MD_HEAD_SAMPLE_BUFFERS(md_block_q4_k), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_q4_k, MD_QK_K));
}
kernel void md_head_sample_q5_k(MD_HEAD_SAMPLE_BUFFERS(md_block_q5_k), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_q5_k, MD_QK_K));
}
kernel void md_head_sample_q6_k(MD_HEAD_SAMPLE_BUFFERS(md_block_q6_k), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_q6_k, MD_QK_K));
}
kernel void md_head_sample_q5_1(MD_HEAD_SAMPLE_BUFFERS(md_block_q5_1), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_q5_1, MD_QK));
}
kernel void md_head_sample_iq4_nl(MD_HEAD_SAMPLE_BUFFERS(md_block_iq4_nl), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_iq4_nl, MD_QK));
}
kernel void md_head_sample_q2_k(MD_HEAD_SAMPLE_BUFFERS(md_block_q2_k), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_q2_k, MD_QK_K));
}
kernel void md_head_sample_q3_k(MD_HEAD_SAMPLE_BUFFERS(md_block_q3_k), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_q3_k, MD_QK_K));
}
kernel void md_head_sample_iq4_xs(MD_HEAD_SAMPLE_BUFFERS(md_block_iq4_xs), MD_THREAD_IDS) {
  MD_HEAD_SAMPLE_BODY(MD_MATVEC_STAGE(md_block_iq4_xs, MD_QK_K));
}

// The best of the tiles' partials, on one threadgroup: the token to
// tokens[0], MD_NO_TOKEN when every logit is -inf (or every score is).
// (It declares every buffer, in order, as the emulator binds by position;
// the weights as bytes: it is the same kernel for every type.)
kernel void md_head_sample_pick(device const uchar* w [[buffer(0)]], device const float* x [[buffer(1)]],
                                constant md_head_sampling_params& params [[buffer(2)]],
                                device const float* bias [[buffer(3)]], device const md_wide_partial* partials [[buffer(4)]],
                                device const md_wide_state* state [[buffer(5)]], device uint* tokens [[buffer(6)]],
                                MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(int, best_keys, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(float, best_scores, MD_REDUCE_SLOTS);
  MD_THREADGROUP_ARRAY(uint, best_indices, MD_REDUCE_SLOTS);
  const uint simdgroups = threads / MD_SIMD_WIDTH;
  const bool half_logits = (params.flags & MD_HEAD_HALF) != 0u;
  if (half_logits && params.temperature != 0.0f) {
    md_best<float> mine;
    mine.value = -INFINITY;
    mine.index = MD_NO_TOKEN;
    for (uint g = tid; g < state->groups; g += threads) {
      if (partials[g].score > mine.value) {
        mine.value = partials[g].score;
        mine.index = partials[g].score_index;
      }
    }
    const md_best<float> top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, simdgroups, -INFINITY,
                                                   best_scores, best_indices);
    if (tid == 0) tokens[0] = top.index;
    return;
  }
  md_best<int> mine;
  mine.value = MD_KEY_NONE;
  mine.index = MD_NO_TOKEN;
  for (uint g = tid; g < state->groups; g += threads) {
    if (partials[g].top_key > mine.value) {
      mine.value = partials[g].top_key;
      mine.index = partials[g].top_index;
    }
  }
  const md_best<int> top = md_threadgroup_best(mine.value, mine.index, lane, simd_index, simdgroups, MD_KEY_NONE,
                                               best_keys, best_indices);
  const int neg_inf = half_logits ? MD_HALF_KEY_NEG_INF : MD_FLOAT_KEY_NEG_INF;
  if (tid == 0) tokens[0] = top.value <= neg_inf ? MD_NO_TOKEN : top.index;
}
