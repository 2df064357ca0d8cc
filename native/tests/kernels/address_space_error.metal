// address_space_error.metal: a deliberate address-space mistake. Metal
// rejects it; so must scripts/check-metal.sh, which maps device, constant
// and threadgroup to clang's numbered address spaces. (The emulator's plain
// C++ build would accept it: that is why the check exists.)
#include "md_kernel.h"

inline float md_sum_of_four(thread const float* values) {
  return values[0] + values[1] + values[2] + values[3];
}

kernel void md_test_address_space_error(device const float* in [[buffer(0)]],
                                        device float* out [[buffer(1)]],
                                        MD_THREAD_IDS) {
  out[tid] = md_sum_of_four(in + 4 * tid);  // BUG: a device pointer where a thread pointer is expected
}
