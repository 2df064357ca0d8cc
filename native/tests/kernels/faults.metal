// faults.metal: kernels with one deliberate bug each, and one without, for
// emulator_test.cpp to prove the emulator reports every kind.
#include "md_kernel.h"

// Thread 0 publishes a value; the others read it after a barrier.
kernel void md_test_published(device uint* out [[buffer(0)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(uint, published, 1);
  if (tid == 0) published[0] = 42u;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[group * threads + tid] = published[0];
}

// BUG: the same without the barrier.
kernel void md_test_missing_barrier(device uint* out [[buffer(0)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(uint, published, 1);
  if (tid == 0) published[0] = 42u;
  out[group * threads + tid] = published[0];
}

// BUG: the two halves of the threadgroup wait at different barriers.
kernel void md_test_divergent_barrier(device uint* out [[buffer(0)]], MD_THREAD_IDS) {
  if (tid < threads / 2) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[tid] = tid;
}

// BUG: one thread returns before a barrier the others wait at.
kernel void md_test_early_return(device uint* out [[buffer(0)]], MD_THREAD_IDS) {
  if (tid == 5) return;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = tid;
}

// BUG: half a simdgroup sums while the other half takes a maximum.
kernel void md_test_divergent_simd(device uint* out [[buffer(0)]], MD_THREAD_IDS) {
  uint x = lane < 16 ? simd_sum(1u) : simd_max(2u);
  out[tid] = x;
}

// BUG: reads one element past the end of `in` (vocab_size elements).
kernel void md_test_out_of_bounds(device const uint* in [[buffer(0)]],
                                  constant md_argmax_params& params [[buffer(1)]],
                                  device uint* out [[buffer(2)]], MD_THREAD_IDS) {
  out[tid] = in[tid + params.vocab_size - threads + 1];
}

// simdgroup operations against their definitions, for every lane.
kernel void md_test_simd_ops(device uint* out [[buffer(0)]], MD_THREAD_IDS) {
  uint base = tid * 6;
  out[base + 0] = simd_sum(lane);
  out[base + 1] = simd_max(lane * 7u % 32u);
  out[base + 2] = simd_shuffle_down(lane * 10u, 3);
  out[base + 3] = simd_shuffle_xor(lane, 5);
  out[base + 4] = simd_prefix_exclusive_sum(lane);
  out[base + 5] = simd_broadcast(lane + simd_index * 100u, 7);
}

// BUG: 36,000 bytes of threadgroup memory; Apple GPUs allow 32,768.
kernel void md_test_too_much_threadgroup_memory(device float* out [[buffer(0)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, big, 9000);
  big[tid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = big[(tid + 1) % threads];
}

// BUG: the start-up probe as a compiler that fuses a * b + c would build
// it (registered under md_fp_contract_probe's name in fault_kernels.cpp).
kernel void md_test_fused_probe(device const float* in [[buffer(0)]], device float* out [[buffer(1)]], MD_THREAD_IDS) {
  if (group == 0 && tid == 0) out[0] = fma(in[0], in[1], in[2]);
}

// A device whose SIMD groups interleave threads (thread t in lane t / 32 of
// SIMD group t % 32 of a 1024-thread group): what md_simd_layout_probe
// must refuse. Written out as the probe's answer, since the emulator itself
// numbers threads as Metal documents.
kernel void md_test_interleaved_simd_layout(device uint* out [[buffer(0)]], MD_THREAD_IDS) {
  out[tid] = (tid % 32u) * 32u + tid / 32u;
}

// simd_sum of float lanes: in[] chosen so that lane order and a butterfly
// round differently.
kernel void md_test_simd_float_sum(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                                   MD_THREAD_IDS) {
  out[tid] = simd_sum(in[tid]);
}

// Half arithmetic as Metal does it (in[] = 1024, 0.5, 3, 0.1): every half
// operation rounds to half, half with float is float.
kernel void md_test_half_arithmetic(device const half* in [[buffer(0)]], device float* out [[buffer(1)]],
                                    MD_THREAD_IDS) {
  if (tid != 0 || group != 0) return;
  const half big = in[0], point_five = in[1], three = in[2], tenth = in[3];
  half sum = big + point_five + point_five;  // 1024.5 -> 1024 (ties to even), twice
  out[0] = sum;
  out[1] = big + 0.25f;  // float: 1024.25
  half product = tenth * three;  // rounded to half once: 0.2998...
  out[2] = product;
  half quotient = three / tenth;
  out[3] = quotient;
  half accumulated = big;
  accumulated += point_five;  // 1024
  accumulated -= 2;           // an integer operand: 1022
  out[4] = accumulated;
  out[5] = -tenth;
  out[6] = tenth * 3;  // half times an integer is half
}
