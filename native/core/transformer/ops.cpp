// ops.cpp
#include "ops.h"

#include <cmath>
#include <vector>

#include "../float16.h"

namespace md {

void rmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
  const float mean = float(sum / double(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale;
  if (weight != nullptr)
    for (int64_t i = 0; i < n; ++i) out[i] = out[i] * weight[i];
}

void ropeAngles(const ModelConfig& c, RopeFrequencies f, const float* factors, int64_t position, float* cosines,
                float* sines) {
  // ggml's recurrence: theta_i = position * base^(-2i/dims), by repeated
  // multiplication in float.
  const float thetaScale = std::pow(f.base, -2.0f / float(c.ropeDims));
  float theta = float(position);
  for (uint32_t i = 0; i < c.ropeDims / 2; ++i) {
    const float factor = factors != nullptr ? factors[i] : 1.0f;
    const float angle = f.freqScale * (theta / factor);
    // ggml multiplies both by the attention factor (LongRoPE's; 1 otherwise).
    cosines[i] = std::cos(angle) * c.ropeAttnFactor;
    sines[i] = std::sin(angle) * c.ropeAttnFactor;
    theta *= thetaScale;
  }
}

void applyRope(RopeMode mode, int ropeDims, const float* cosines, const float* sines, float* head) {
  const int pairs = ropeDims / 2;
  for (int i = 0; i < pairs; ++i) {
    float* a = mode == RopeMode::AdjacentPairs ? head + 2 * i : head + i;
    float* b = mode == RopeMode::AdjacentPairs ? head + 2 * i + 1 : head + i + pairs;
    const float x0 = *a, x1 = *b;
    *a = x0 * cosines[i] - x1 * sines[i];
    *b = x0 * sines[i] + x1 * cosines[i];
  }
}

void softmax(float* x, int64_t n) {
  float max = -INFINITY;
  // x[i] > max, not std::fmax (a libm call here): both skip NaNs.
  for (int64_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inverse = float(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inverse;
}

void swiglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

namespace {

// ggml_gelu_f32 of a float16 value, rounded to float16: one entry per
// float16 bit pattern, as llama.cpp's CPU builds its table.
uint16_t geluOfHalf(uint16_t bits) {
  const float h = halfToFloat(bits);
  const float sqrt2OverPi = 0.79788456080286535587989211986876f, coefA = 0.044715f;
  return halfFromFloat(0.5f * h * (1.0f + std::tanh(sqrt2OverPi * h * (1.0f + coefA * h * h))));
}

const std::vector<uint16_t>& geluTable() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (uint32_t i = 0; i < t.size(); ++i) t[i] = geluOfHalf(uint16_t(i));
    return t;
  }();
  return table;
}

}  // namespace

float geluTanh(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return halfToFloat(geluTable()[halfFromFloat(x)]);
}

void geglu(float* gate, const float* up, int64_t n) {
  const std::vector<uint16_t>& table = geluTable();
  for (int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    gate[i] = x <= -10.0f ? 0.0f : x >= 10.0f ? x * up[i] : halfToFloat(table[halfFromFloat(x)]) * up[i];
  }
}

void addInPlace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace md
