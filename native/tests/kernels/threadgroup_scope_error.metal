// threadgroup_scope_error.metal: a deliberate mistake scripts/check-metal.sh
// must reject. Metal declares threadgroup variables only in kernel
// functions; this helper declares one.
#include "md_kernel.h"

inline float md_test_sum_in_helper(float x, uint tid) {
  MD_THREADGROUP_ARRAY(float, partial, 32);  // BUG: not in a kernel function
  partial[tid % 32] = x;
  return partial[0];
}

kernel void md_test_threadgroup_scope(device float* out [[buffer(0)]], MD_THREAD_IDS) {
  out[tid] = md_test_sum_in_helper(1.0f, tid);
}
