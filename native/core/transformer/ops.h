// ops.h: the element-wise and per-row ops of the forward pass on the CPU,
// each computed as llama.cpp's CPU backend computes it (the order of the
// float operations, double where it sums in double), so the logits can be
// compared closely. The Metal kernels of the same ops are tested against
// these.
#pragma once
#include <cstdint>

#include "model_config.h"

namespace md {

// out = x / sqrt(mean(x^2) + eps) * weight (weight may be null: no scale).
void rmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps);

// cos and sin of each rotated pair's angle at `position`: ropeDims / 2 each,
// at the frequencies of `f` (a layer's: ropeFrequencies()). factors
// (llama3's rope_freqs) divide the angles; may be null.
void ropeAngles(const ModelConfig& c, RopeFrequencies f, const float* factors, int64_t position, float* cosines,
                float* sines);
// Rotates the first ropeDims values of one head in place.
void applyRope(RopeMode mode, int ropeDims, const float* cosines, const float* sines, float* head);

// In place: exp(x - max) / sum over n values (sum in double).
void softmax(float* x, int64_t n);

// gate[i] = silu(gate[i]) * up[i].
void swiglu(float* gate, const float* up, int64_t n);
// gate[i] = gelu(gate[i]) * up[i], GELU's tanh approximation as llama.cpp's
// CPU backend computes it: from a float16 table (the input rounded to
// float16, the result rounded to float16), 0 at or below -10, x at or
// above 10.
void geglu(float* gate, const float* up, int64_t n);
// One value of that GELU.
float geluTanh(float x);

void addInPlace(float* x, const float* y, int64_t n);

}  // namespace md
