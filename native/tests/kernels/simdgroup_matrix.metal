// simdgroup_matrix.metal: the emulator's 8x8 simdgroup matrices, for
// emulator_test.cpp. Apart from faults.metal: the ASan test binary
// compiles that file, and this kernel's inlined matrix code keeps its
// symbolizer from naming the out-of-bounds line there.
#include "md_kernel.h"

// out = A B with A's rows 1..8 and B the identity times 2 (so out = 2 A),
// loaded from threadgroup memory by the first SIMD group (the second
// returns). BUG when `scattered` is set: each lane passes its own pointer.
kernel void md_test_simdgroup_matrix(device float* out [[buffer(0)]], constant uint& scattered [[buffer(1)]], MD_THREAD_IDS) {
  MD_THREADGROUP_ARRAY(float, tiles, 2 * 64 + 32);
  for (uint i = tid; i < 64; i += threads) {
    tiles[i] = float(i / 8 + 1);
    tiles[64 + i] = i / 8 == i % 8 ? 2.0f : 0.0f;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simd_index != 0) return;
  simdgroup_float8x8 a, b, c = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_load(a, tiles + (scattered != 0 ? lane : 0u), 8);
  simdgroup_load(b, tiles + 64, 8);
  simdgroup_multiply_accumulate(c, a, b, c);
  simdgroup_store(c, out, 8);
}
