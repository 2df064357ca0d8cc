// chain_probe.metal: a test kernel that shows what encodeChain patched.
// Thread 0 reads input[0], writes input[0] + 1 to output[0] and appends
// (input, field a, field b) to the log: log[0] counts the records.
#include "md_kernel.h"

struct md_test_probe_fields {
  uint a;
  uint b;
};

kernel void md_test_chain_probe(device const uint* input [[buffer(0)]],
                                constant md_test_probe_fields& fields [[buffer(1)]],
                                device uint* output [[buffer(2)]],
                                device atomic_uint* log [[buffer(3)]],
                                MD_THREAD_IDS) {
  if (tid != 0 || group != 0) return;
  const uint value = input[0];
  output[0] = value + 1;
  const uint record = atomic_fetch_add_explicit(&log[0], 1u, memory_order_relaxed);
  atomic_store_explicit(&log[1 + 3 * record], value, memory_order_relaxed);
  atomic_store_explicit(&log[2 + 3 * record], fields.a, memory_order_relaxed);
  atomic_store_explicit(&log[3 + 3 * record], fields.b, memory_order_relaxed);
}
