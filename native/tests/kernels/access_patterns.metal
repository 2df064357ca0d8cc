// access_patterns.metal: kernels with known memory behaviour, for the
// access counters' own tests (native/tests/kernel_counters_test.cpp): what
// the counters report for them is known in advance.
#include "md_kernel.h"

// Lane i loads float i: each SIMD group's load is 128 contiguous bytes.
kernel void md_test_coalesced_load(device const float* in [[buffer(0)]],
                                   device float* out [[buffer(1)]],
                                   MD_THREAD_IDS) {
  const uint i = group * threads + tid;
  out[i] = in[i];
}

// Lane i loads float 32 i: each lane its own 128-byte line.
kernel void md_test_strided_load(device const float* in [[buffer(0)]],
                                 device float* out [[buffer(1)]],
                                 MD_THREAD_IDS) {
  const uint i = group * threads + tid;
  out[i] = in[i * 32u];
}

// Every lane loads float 0.
kernel void md_test_broadcast_load(device const float* in [[buffer(0)]],
                                   device float* out [[buffer(1)]],
                                   MD_THREAD_IDS) {
  out[group * threads + tid] = in[0];
}

// A conflict-free threadgroup store (lane i, word i: 32 banks), then a
// load where every lane's word is in bank 0 (words 0, 32, 64, ...).
kernel void md_test_threadgroup_banks(device float* out [[buffer(0)]],
                                      MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, shared, 1024);
  shared[tid] = float(tid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[group * threads + tid] = shared[(tid * 32u) % 1024u];
}
