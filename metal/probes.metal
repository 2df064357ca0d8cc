// probes.metal: kernels that check a device computes as the CPU does.
// md_fp_contract_probe and md_simd_layout_probe run when a device opens
// (native/core/exact_arithmetic.h, simd_layout_probe.h); md_noise_cells and md_exp_values let the tests
// compare every noise cell, and md_exp over many inputs, with the CPU.
#include "md_kernel.h"

// out[0] = in[0] * in[1] + in[2], rounded twice (see md_exact_float.h).
kernel void md_fp_contract_probe(device const float* in [[buffer(0)]],
                                 device float* out [[buffer(1)]],
                                 MD_THREAD_IDS) {
  if (group == 0 && tid == 0) out[0] = md_mul_add_rounded_twice(in[0], in[1], in[2]);
}

// out[tid] = simd_index * 32 + lane, which every reduction in the kernels
// takes to be tid (one threadgroup; the host compares).
kernel void md_simd_layout_probe(device uint* out [[buffer(0)]],
                                 MD_THREAD_IDS) {
  out[tid] = simd_index * MD_SIMD_WIDTH + lane;
}

// The Gumbel noise of cells first .. first + count - 1 of md_uniform's 2^23
// cells (cell c is the uniform of bits c << 9), one thread per cell.
kernel void md_noise_cells(constant md_probe_range& range [[buffer(0)]],
                           device float* out [[buffer(1)]],
                           MD_THREAD_IDS) {
  const uint i = group * threads + tid;
  if (i >= range.count) return;
  out[i] = md_gumbel(md_uniform((range.first + i) << 9u));
}

// out[i] = md_exp(in[i]), one thread per value.
kernel void md_exp_values(constant md_probe_range& range [[buffer(0)]],
                          device const float* in [[buffer(1)]],
                          device float* out [[buffer(2)]],
                          MD_THREAD_IDS) {
  const uint i = group * threads + tid;
  if (i >= range.count) return;
  out[i] = md_exp(in[i]);
}
