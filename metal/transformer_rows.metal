// transformer_rows.metal: the per-row and element-wise ops of the
// transformer's forward pass on float32 activations: RMSNorm, SwiGLU, GeGLU, the
// residual add, and the logits row rounded to float16 for the sampler. native/core/transformer/ops.h is their CPU twin, and
// the tests compare each with it (transformer_kernels_test.cpp).
//
// Reads per thread: RMSNorm reads its row twice with a stride of the
// threadgroup's size (thread t reads t, t + threads, ...), so each pass of
// a SIMD group reads 32 consecutive floats: whole cache lines. The
// element-wise kernels read one float of each input and write one.
#include "md_kernel.h"
#include "md_transformer.h"

// One threadgroup per row: out = x / sqrt(mean(x^2) + eps) * weight. The
// sum of squares is float32 in a fixed order (per thread, then the
// threadgroup's prefix sum), so it is the same bits on every GPU and in the
// emulator; the CPU sums in double, as llama.cpp, which the tests allow for.
kernel void md_rms_norm_f32(device const float* x [[buffer(0)]],
                            device const float* weight [[buffer(1)]],
                            constant md_rows_params& params [[buffer(2)]],
                            device float* out [[buffer(3)]],
                            MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, scratch, MD_SCAN_SLOTS);
  if (group >= params.rows) return;
  device const float* row = x + ulong(group) * params.n;
  device float* dst = out + ulong(group) * params.n;
  float sum = 0.0f;
  for (uint i = tid; i < params.n; i += threads) sum += row[i] * row[i];
  float total = 0.0f;
  md_threadgroup_exclusive_sum(sum, lane, simd_index, threads / MD_SIMD_WIDTH, total, scratch);
  const float scale = 1.0f / sqrt(total / float(params.n) + params.eps);
  for (uint i = tid; i < params.n; i += threads) dst[i] = row[i] * scale * weight[i];
}

// One thread per value: gate = silu(gate) * up, over rows x n values.
kernel void md_swiglu_f32(device float* gate [[buffer(0)]],
                          device const float* up [[buffer(1)]],
                          constant md_rows_params& params [[buffer(2)]],
                          MD_THREAD_IDS) {
  const ulong i = ulong(group) * threads + tid;
  if (i >= ulong(params.rows) * params.n) return;
  const float g = gate[i];
  gate[i] = g / (1.0f + exp(-g)) * up[i];
}

// GELU's tanh approximation as llama.cpp's CPU backend takes it from its
// float16 table: the input rounded to half, the result rounded to half; 0
// at or below -10 and x at or above 10 (the CPU twin: ops.cpp's geluTanh).
inline float md_gelu_tanh(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  const float h = float(half(x));
  return float(half(0.5f * h * (1.0f + tanh(0.79788456080286535587989211986876f * h * (1.0f + 0.044715f * h * h)))));
}

// One thread per value: gate = gelu(gate) * up, over rows x n values (gemma's GeGLU).
kernel void md_geglu_f32(device float* gate [[buffer(0)]],
                         device const float* up [[buffer(1)]],
                         constant md_rows_params& params [[buffer(2)]],
                         MD_THREAD_IDS) {
  const ulong i = ulong(group) * threads + tid;
  if (i >= ulong(params.rows) * params.n) return;
  gate[i] = md_gelu_tanh(gate[i]) * up[i];
}

// One thread per value: x += y, over rows x n values (the residual add),
// or x += the row y in every row when params.broadcast (a bias).
kernel void md_add_f32(device float* x [[buffer(0)]],
                       device const float* y [[buffer(1)]],
                       constant md_rows_params& params [[buffer(2)]],
                       MD_THREAD_IDS) {
  const ulong i = ulong(group) * threads + tid;
  if (i >= ulong(params.rows) * params.n) return;
  x[i] += y[params.broadcast != 0 ? i % params.n : i];
}

// One thread per value: float32 logits rounded to float16 (nearest even),
// the row the sampling kernel reads.
kernel void md_half_from_f32(device const float* x [[buffer(0)]],
                             device half* out [[buffer(1)]],
                             constant md_rows_params& params [[buffer(2)]],
                             MD_THREAD_IDS) {
  const ulong i = ulong(group) * threads + tid;
  if (i >= ulong(params.rows) * params.n) return;
  out[i] = half(x[i]);
}
