// simd_struct_error.metal: a deliberate mistake scripts/check-metal.sh must
// reject. Metal's simd_* functions take scalars and vectors; the emulator
// could pass any 8-byte value through its lanes, so it must refuse this.
#include "md_kernel.h"

struct md_test_pair {
  float value;
  uint index;
};

kernel void md_test_simd_struct(device float* out [[buffer(0)]], MD_THREAD_IDS) {
  md_test_pair mine = {float(tid), tid};
  md_test_pair best = simd_shuffle(mine, 0);  // BUG: a struct through a SIMD shuffle
  out[tid] = best.value;
}
