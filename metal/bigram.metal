// bigram.metal: the forward pass of the built-in factorised bigram model,
// logits = U . E[token], with the embedding E and the LM head U both
// V x d float16, row-major. Two kernels, so a chain exercises a real
// multi-dispatch forward pass: the embedding lookup reads the token the
// previous step sampled (bound with the token-offset patch), the LM head
// turns the hidden vector into the next logits row.
//
// Exactness: a product of two halves is exact in float32 (11 + 11
// significant bits), so each step of the LM head's sum is one float32
// addition whether or not a compiler fuses it into an fma, and the sum runs
// over j = 0 .. d-1 in order. The CPU forward (native/core/bigram_forward.h,
// lib/models/bigram-forward.ts) does the same additions in the same order,
// so every backend gets the same logits bit for bit.
#include "md_kernel.h"

// One thread per hidden element: hidden = E[token]. A token outside the
// vocabulary (MD_NO_TOKEN after an all -inf row) gives a zero vector, so
// the chain stays in bounds; the host stops at that token anyway.
kernel void md_embed_f16(device const uint* token [[buffer(0)]],
                         device const half* embedding [[buffer(1)]],
                         constant md_bigram_params& params [[buffer(2)]],
                         device half* hidden [[buffer(3)]],
                         MD_THREAD_IDS) {
  const uint i = group * threads + tid;
  if (i >= params.dim) return;
  const uint t = token[0];
  hidden[i] = t < params.vocab_size ? embedding[ulong(t) * params.dim + i] : half(0.0f);
}

// One thread per logit: logits[v] = sum_j U[v][j] * hidden[j], rounded once
// to float16 (round to nearest even).
kernel void md_lm_head_f16(device const half* head [[buffer(0)]],
                           device const half* hidden [[buffer(1)]],
                           constant md_bigram_params& params [[buffer(2)]],
                           device half* logits [[buffer(3)]],
                           MD_THREAD_IDS) {
  const uint v = group * threads + tid;
  if (v >= params.vocab_size) return;
  device const half* row = head + ulong(v) * params.dim;
  float sum = 0.0f;
  for (uint j = 0; j < params.dim; ++j) sum += float(row[j]) * float(hidden[j]);
  logits[v] = half(sum);
}
