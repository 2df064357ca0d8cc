// md_sampling.h: the one definition of sampling noise and parameters.
//
// Compiled by the Metal kernels (__METAL_VERSION__ defined) and by the C++
// code (native/core). The TypeScript sampler mirrors it operation for
// operation (lib/js/noise.ts) and is tested against it.
//
// Why our own log and exp: every backend must produce the same noise for the
// same (seed, position, token). Library log/exp differ between libm, Metal
// and V8 in the last bit; these polynomials (Cephes' logf/expf) are plain
// float32 adds and multiplies, so any IEEE float32 machine that neither
// reorders nor fuses them (build with -ffp-contract=off) gets the same bits.
#ifndef MD_SAMPLING_H
#define MD_SAMPLING_H

#include "md_exact_float.h"

#ifdef __METAL_VERSION__
#include <metal_stdlib>
typedef uint md_u32;
typedef int md_i32;
#define MD_FN static inline
MD_FN float md_float_from_bits(md_u32 u) { return as_type<float>(u); }
MD_FN md_u32 md_bits_from_float(float f) { return as_type<md_u32>(f); }
MD_FN float md_floor(float x) { return metal::floor(x); }
#else
#include <stddef.h>
#include <stdint.h>
#include <string.h>
typedef uint32_t md_u32;
typedef int32_t md_i32;
// `unused`: a helper only the host calls (md_wide_groups) is no warning
// where the kernels are checked with -Werror.
#define MD_FN static inline __attribute__((always_inline, unused))
MD_FN float md_float_from_bits(md_u32 u) { float f; memcpy(&f, &u, 4); return f; }
MD_FN md_u32 md_bits_from_float(float f) { md_u32 u; memcpy(&u, &f, 4); return u; }
// floor for |x| < 2^31 (md_exp's range) from a truncating convert, which
// SSE2 has and floorf does not, so loops over md_exp vectorise.
MD_FN float md_floor(float x) {
  float t = (float)(md_i32)x;
  return t > x ? t - 1.0f : t;
}
#endif

// ---- noise hash (docs/sampling.md "Noise") ----------------------------------

// PCG-RXS-M-XS 32-bit output permutation, used as a hash.
MD_FN md_u32 md_hash(md_u32 x) {
  md_u32 s = x * 747796405u + 2891336453u;
  md_u32 w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

// Seed and position are hashed separately so that (seed, position) pairs
// never alias each other.
MD_FN md_u32 md_noise_key(md_u32 seed, md_u32 position) {
  return md_hash(seed ^ md_hash(position));
}

// 24 random bits mapped to the centre of one of 2^23 cells in (0, 1):
// never 0 and never 1, so both logs below are finite.
MD_FN float md_uniform(md_u32 bits) {
  // Converted as signed (the value is < 2^24): SSE2 has no unsigned convert.
  return (float)(md_i32)(2u * (bits >> 9) + 1u) * 5.9604644775390625e-8f;  // 2^-24
}

// Natural log of a positive normal float (Cephes logf, ~1 ulp). Written
// without branches so that CPU loops over many tokens vectorise.
MD_FN float md_log(float x) {
  md_u32 ix = md_bits_from_float(x);
  md_i32 e = (md_i32)(ix >> 23) - 126;
  float m = md_float_from_bits((ix & 0x007FFFFFu) | 0x3F000000u);  // [0.5, 1)
  bool low = m < 0.707106781186547524f;
  e = e - (low ? 1 : 0);
  float f = (m + (low ? m : 0.0f)) - 1.0f;  // a select, not a branch
  float z = f * f;
  float y = 7.0376836292e-2f;
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  float fe = (float)e;
  y = y + fe * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = f + y;
  return r + fe * 0.693359375f;
}

// Natural log of any positive finite float: subnormals (only min-p's ln(q)
// can be one) are scaled by 2^24 exactly and corrected by ln(2^24) rounded
// to float32.
MD_FN float md_log_any(float x) {
  if (x >= 1.17549435e-38f) return md_log(x);
  return md_log(x * 16777216.0f) - 16.6355323334f;
}

// exp(x) for x <= 0 (Cephes expf, ~1 ulp). Results that would be subnormal
// (x < -87) are exactly 0, as are -inf and NaN: a top-p weight that small
// cannot matter, and every backend flushes the same way.
MD_FN float md_exp(float x) {
  bool under = !(x >= -87.0f);
  x = under ? 0.0f : x;
  float fx = md_floor(x * 1.44269504088896341f + 0.5f);
  x = x - fx * 0.693359375f;
  x = x + fx * 2.12194440e-4f;
  float z = x * x;
  float y = 1.9875691500e-4f;
  y = y * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * z + x + 1.0f;
  md_u32 scale_bits = (md_u32)((md_i32)fx + 127) << 23;
  y = y * md_float_from_bits(scale_bits);
  return under ? 0.0f : y;
}

// a * b + c with two roundings, in the same form as the polynomials above:
// the devices' start-up probe computes it on inputs where one fused
// rounding gives another answer (native/core/exact_arithmetic.h).
MD_FN float md_mul_add_rounded_twice(float a, float b, float c) { return a * b + c; }

// Gumbel(0, 1) noise: g = -ln(-ln(u)).
MD_FN float md_gumbel(float u) { return -md_log(-md_log(u)); }

// The noise of token `token` under a key from md_noise_key.
MD_FN float md_token_noise(md_u32 key, md_u32 token) {
  return md_gumbel(md_uniform(md_hash(key + token)));
}

// An upper bound on md_gumbel over every u md_uniform can return (the
// largest u, 1 - 2^-24, gives 16.6355...). Samplers skip the noise of tokens
// whose z + T * MD_GUMBEL_MAX cannot beat the best score so far; a test
// checks the bound against the top 2^16 values of u.
#define MD_GUMBEL_MAX 16.64f

// The largest temperature accepted. Scores are z + T * g with |g| <=
// MD_GUMBEL_MAX: above this, T * g can overflow float32 to +-inf, and
// backends that break the resulting ties differently would disagree.
// Anything above ~100 samples uniformly among the survivors anyway.
#define MD_MAX_TEMPERATURE 1e30f

// ---- parameters ------------------------------------------------------------

// flags
#define MD_FLAG_UNIT_FILTER_TEMPERATURE 1u  // filters see T = 1 ("unit")
// A token mask is bound (a grammar's allowed tokens): ceil(vocab_size / 32)
// words per row, bit t % 32 of word t / 32 set when token t is allowed; a
// token not allowed is -inf before anything else (bias, penalties, filters).
#define MD_FLAG_TOKEN_MASK 2u
#define MD_KNOWN_FLAGS (MD_FLAG_UNIT_FILTER_TEMPERATURE | MD_FLAG_TOKEN_MASK)

// Whether a mask allows `token`, given the mask's word for it (mask[token
// >> 5]): the caller reads the word, from whichever address space holds it.
MD_FN bool md_mask_allows(md_u32 word, md_u32 token) {
  return ((word >> (token & 31u)) & 1u) != 0u;
}

// The words of one row's mask.
MD_FN md_u32 md_mask_words(md_u32 vocab_size) {
  return (vocab_size + 31u) / 32u;
}

// What a sampling step reads, as the GPU reads it: float32 and uint32 only,
// no padding, the same layout in Metal and C++. The history window and the
// token-bias list travel in their own buffers; their lengths are here.
typedef struct md_sampling_params {
  float temperature;        // T >= 0; 0 = greedy
  float top_p;              // (0, 1]; 1 = off
  float min_p;              // [0, 1); 0 = off
  float repeat_penalty;     // > 0; 1 = off
  float frequency_penalty;  // finite; 0 = off
  float presence_penalty;   // finite; 0 = off
  md_u32 top_k;             // 0 or >= vocab_size = off
  md_u32 seed;
  md_u32 position;          // sequence position of the token being sampled
  md_u32 vocab_size;        // V >= 1
  md_u32 history_count;     // tokens in the history buffer (see below)
  md_u32 history_window;    // N = lastTokens: penalties see the last N of them
  md_u32 bias_count;        // entries in the token-bias list
  md_u32 flags;             // MD_FLAG_*
} md_sampling_params;
// The penalty window is the last min(history_window, history_count) tokens
// of the history buffer. The batched kernel samples row r at position
// `position + r` with `history_count + r` tokens of history: speculative
// verification appends the draft tokens to the history buffer.

// Whether any penalty changes a logit (each at its "off" value otherwise).
MD_FN bool md_penalties_on(float repeat_penalty, float frequency_penalty, float presence_penalty) {
  return repeat_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f;
}

// Whether a step's row is edited (steps 1-2: bias, or penalties over a
// non-empty window; a mask edits too, by its flag), and whether its
// filters need the key histogram (top-k or top-p on a sampled row). The
// wide sampler's host code leaves out the steps these say are idle.
MD_FN bool md_bias_or_penalties(md_u32 bias_count, md_u32 history_count, md_u32 history_window, float repeat_penalty,
                                float frequency_penalty, float presence_penalty) {
  return bias_count > 0u || (history_count > 0u && history_window > 0u &&
                             md_penalties_on(repeat_penalty, frequency_penalty, presence_penalty));
}

// Whether a step's token is its row's argmax (masked tokens aside): greedy,
// and neither a bias nor a penalty edits the row. The one definition of
// "plain greedy" in C++ and Metal; lib/sampling-options.ts's plainGreedy()
// is its TypeScript twin.
MD_FN bool md_plain_greedy(float temperature, md_u32 bias_count, md_u32 history_count, md_u32 history_window,
                           float repeat_penalty, float frequency_penalty, float presence_penalty) {
  return temperature == 0.0f &&
         !md_bias_or_penalties(bias_count, history_count, history_window, repeat_penalty, frequency_penalty, presence_penalty);
}

MD_FN bool md_filters_need_histogram(float temperature, md_u32 top_k, float top_p, md_u32 vocab_size) {
  return temperature != 0.0f && ((top_k > 0u && top_k < vocab_size) || top_p < 1.0f);
}

#define MD_SAMPLING_PARAMS_SIZE 56
#define MD_NO_TOKEN 0xFFFFFFFFu  // written when every logit is -inf

// One token-bias entry as the kernels read it (a token listed twice keeps
// its first entry).
typedef struct md_bias_entry {
  md_u32 token;
  float value;  // finite or -inf
} md_bias_entry;

// The one-row sampling step across threadgroups (sampling_wide.metal):
// what each threadgroup of its row passes leaves, and what its
// single-threadgroup steps pass on. Scratch the kernels write and read;
// the host only sizes it.
typedef struct md_wide_partial {
  md_i32 top_key;      // the slice's largest key (MD_KEY_NONE: empty slice)
  md_u32 top_index;    // its first token
  float score;         // the slice's best z + T * g (-inf: none)
  md_u32 score_index;  // its token (MD_NO_TOKEN: none)
} md_wide_partial;

// How many threadgroups a row's passes get by default: one per
// MD_WIDE_TOKENS_PER_GROUP tokens (4 per thread of 1024, enough to hide a
// load's latency), at most MD_WIDE_MAX_GROUPS (a few per core of the
// largest Apple GPU, 40 cores, and the reductions after stay one
// simdgroup's loop). The token does not depend on it.
#define MD_WIDE_TOKENS_PER_GROUP 4096u
#define MD_WIDE_MAX_GROUPS 64u
MD_FN md_u32 md_wide_groups(md_u32 vocab_size) {
  md_u32 groups = (vocab_size + MD_WIDE_TOKENS_PER_GROUP - 1u) / MD_WIDE_TOKENS_PER_GROUP;
  return groups < 1u ? 1u : (groups > MD_WIDE_MAX_GROUPS ? MD_WIDE_MAX_GROUPS : groups);
}

typedef struct md_wide_state {
  md_i32 floor_key;  // the noise pass reads keys >= floor_key
  md_u32 top_index;  // the row's argmax, MD_NO_TOKEN when all is -inf
  md_u32 greedy;     // 1: the token is top_index (temperature 0 or all -inf)
  md_u32 groups;     // threadgroups of the last row pass: partials to reduce
} md_wide_state;

// The argmax kernels' parameters: one row of vocab_size logits per
// threadgroup; the token goes to tokens[threadgroup index].
typedef struct md_argmax_params {
  md_u32 vocab_size;
  md_u32 flags;  // MD_FLAG_TOKEN_MASK or 0
} md_argmax_params;

// The bigram model's kernels (bigram.metal): a vocabulary of vocab_size
// tokens, embedding and LM head rows of dim halves. lib/models/bigram.ts
// packs the same 8 bytes.
typedef struct md_bigram_params {
  md_u32 vocab_size;
  md_u32 dim;
} md_bigram_params;

// The probe kernels' range (probes.metal): `count` items from `first`.
typedef struct md_probe_range {
  md_u32 first;
  md_u32 count;
} md_probe_range;

// ---- logits as ordered integer keys ----------------------------------------
// A key is the sign-magnitude bit pattern as a two's complement integer, so
// integer order is value order and -0 and +0 share key 0. Keys are
// sanitised (docs/sampling.md step 0): NaN gets the key of -inf, +inf the key
// of the largest finite value. native/core/logit_keys.h has vectorised
// forms of the same maps; a test checks them against these for every
// float16 pattern.
#define MD_HALF_KEY_NEG_INF (-0x7C00)
#define MD_HALF_KEY_MAX_FINITE 0x7BFF
#define MD_HALF_KEY_BINS 0xF800  // one per key from -inf to 65504
#define MD_FLOAT_KEY_NEG_INF (-0x7F800000)
#define MD_FLOAT_KEY_MAX_FINITE 0x7F7FFFFF
#define MD_KEY_NONE (-0x7FFFFFFF - 1)  // below every key: "no token here"

MD_FN md_i32 md_half_key(md_u32 bits) {
  md_i32 magnitude = (md_i32)(bits & 0x7FFFu);
  md_i32 k = (bits & 0x8000u) ? -magnitude : magnitude;
  k = magnitude > 0x7C00 ? MD_HALF_KEY_NEG_INF : k;
  return k == 0x7C00 ? MD_HALF_KEY_MAX_FINITE : k;
}

MD_FN md_i32 md_float_key(md_u32 bits) {
  md_i32 magnitude = (md_i32)(bits & 0x7FFFFFFFu);
  md_i32 k = (bits & 0x80000000u) ? -magnitude : magnitude;
  k = magnitude > 0x7F800000 ? MD_FLOAT_KEY_NEG_INF : k;
  return k == 0x7F800000 ? MD_FLOAT_KEY_MAX_FINITE : k;
}

MD_FN md_u32 md_half_bits_of_key(md_i32 key) {
  return key < 0 ? (0x8000u | (md_u32)(-key)) : (md_u32)key;
}

#ifndef __METAL_VERSION__
#ifdef __cplusplus
static_assert(sizeof(md_sampling_params) == MD_SAMPLING_PARAMS_SIZE, "md_sampling_params size");
static_assert(offsetof(md_sampling_params, temperature) == 0, "temperature offset");
static_assert(offsetof(md_sampling_params, top_p) == 4, "top_p offset");
static_assert(offsetof(md_sampling_params, min_p) == 8, "min_p offset");
static_assert(offsetof(md_sampling_params, repeat_penalty) == 12, "repeat_penalty offset");
static_assert(offsetof(md_sampling_params, frequency_penalty) == 16, "frequency_penalty offset");
static_assert(offsetof(md_sampling_params, presence_penalty) == 20, "presence_penalty offset");
static_assert(offsetof(md_sampling_params, top_k) == 24, "top_k offset");
static_assert(offsetof(md_sampling_params, seed) == 28, "seed offset");
static_assert(offsetof(md_sampling_params, position) == 32, "position offset");
static_assert(offsetof(md_sampling_params, vocab_size) == 36, "vocab_size offset");
static_assert(offsetof(md_sampling_params, history_count) == 40, "history_count offset");
static_assert(offsetof(md_sampling_params, history_window) == 44, "history_window offset");
static_assert(offsetof(md_sampling_params, bias_count) == 48, "bias_count offset");
static_assert(offsetof(md_sampling_params, flags) == 52, "flags offset");
static_assert(sizeof(md_bias_entry) == 8, "md_bias_entry size");
static_assert(sizeof(md_wide_partial) == 16, "md_wide_partial size");
static_assert(sizeof(md_wide_state) == 16, "md_wide_state size");
static_assert(sizeof(md_argmax_params) == 8, "md_argmax_params size");
static_assert(sizeof(md_bigram_params) == 8, "md_bigram_params size");
static_assert(sizeof(md_probe_range) == 8, "md_probe_range size");
#endif
#endif

#endif  // MD_SAMPLING_H
