// buffer_order_error.metal: Metal binds [[buffer(i)]] by index and accepts
// any order; the emulator passes arguments by position, so this kernel
// would get its params where its output is. lint-metal.mjs refuses it.
#include "md_kernel.h"

kernel void md_test_buffer_order(constant uint& count [[buffer(1)]],
                                 device float* out [[buffer(0)]],
                                 MD_THREAD_IDS) {
  if (tid < count) out[tid] = 1.0f;
}
