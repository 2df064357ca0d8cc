// tsan_hooks.cpp: the calls the compiler's thread-sanitizer instrumentation
// (-fsanitize=thread on the counted kernels only, linked without the
// sanitizer's runtime) makes before each load, store and atomic, sent to
// the access recorder. The atomics still do what they say. This file must
// not itself be instrumented.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "access_recorder.h"

// Each hook's return address is the code address of the access: the
// "site" that tells one load instruction from another.
#define MD_TSAN_HOOK(kind, n)                                                       \
  extern "C" __attribute__((noinline)) void __tsan_##kind##n(void* p) {             \
    md::counters::recordAccess(p, n, #kind[0] == 'w', __builtin_return_address(0)); \
  }
MD_TSAN_HOOK(read, 1)
MD_TSAN_HOOK(read, 2)
MD_TSAN_HOOK(read, 4)
MD_TSAN_HOOK(read, 8)
MD_TSAN_HOOK(read, 16)
MD_TSAN_HOOK(write, 1)
MD_TSAN_HOOK(write, 2)
MD_TSAN_HOOK(write, 4)
MD_TSAN_HOOK(write, 8)
MD_TSAN_HOOK(write, 16)
#undef MD_TSAN_HOOK

extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_read_range(void* p, size_t n) { md::counters::recordAccess(p, n, false, __builtin_return_address(0)); }
void __tsan_write_range(void* p, size_t n) { md::counters::recordAccess(p, n, true, __builtin_return_address(0)); }
void __tsan_unaligned_read2(void* p) { md::counters::recordAccess(p, 2, false, __builtin_return_address(0)); }
void __tsan_unaligned_read4(void* p) { md::counters::recordAccess(p, 4, false, __builtin_return_address(0)); }
void __tsan_unaligned_read8(void* p) { md::counters::recordAccess(p, 8, false, __builtin_return_address(0)); }
void __tsan_unaligned_write2(void* p) { md::counters::recordAccess(p, 2, true, __builtin_return_address(0)); }
void __tsan_unaligned_write4(void* p) { md::counters::recordAccess(p, 4, true, __builtin_return_address(0)); }
void __tsan_unaligned_write8(void* p) { md::counters::recordAccess(p, 8, true, __builtin_return_address(0)); }
void __tsan_unaligned_read16(void* p) { md::counters::recordAccess(p, 16, false, __builtin_return_address(0)); }
void __tsan_unaligned_write16(void* p) { md::counters::recordAccess(p, 16, true, __builtin_return_address(0)); }

// 32-bit atomics (the kernels' relaxed counters), with the memory order the
// instrumentation passes (0 relaxed ... 5 seq_cst, as C++'s).
using a32 = int32_t;
static std::memory_order order(int mo) { return mo == 0 ? std::memory_order_relaxed : std::memory_order_seq_cst; }
a32 __tsan_atomic32_load(const volatile a32* a, int mo) {
  md::counters::recordAccess(const_cast<const a32*>(a), 4, false, __builtin_return_address(0));
  return reinterpret_cast<const volatile std::atomic<a32>*>(a)->load(order(mo));
}
void __tsan_atomic32_store(volatile a32* a, a32 v, int mo) {
  md::counters::recordAccess(const_cast<const a32*>(a), 4, true, __builtin_return_address(0));
  reinterpret_cast<volatile std::atomic<a32>*>(a)->store(v, order(mo));
}
a32 __tsan_atomic32_exchange(volatile a32* a, a32 v, int mo) {
  md::counters::recordAccess(const_cast<const a32*>(a), 4, true, __builtin_return_address(0));
  return reinterpret_cast<volatile std::atomic<a32>*>(a)->exchange(v, order(mo));
}
a32 __tsan_atomic32_fetch_add(volatile a32* a, a32 v, int mo) {
  md::counters::recordAccess(const_cast<const a32*>(a), 4, true, __builtin_return_address(0));
  return reinterpret_cast<volatile std::atomic<a32>*>(a)->fetch_add(v, order(mo));
}
int __tsan_atomic32_compare_exchange_weak(volatile a32* a, a32* expected, a32 v, int mo, int) {
  md::counters::recordAccess(const_cast<const a32*>(a), 4, true, __builtin_return_address(0));
  return reinterpret_cast<volatile std::atomic<a32>*>(a)->compare_exchange_weak(*expected, v, order(mo));
}
a32 __tsan_atomic32_compare_exchange_val(volatile a32* a, a32 expected, a32 v, int mo, int) {
  md::counters::recordAccess(const_cast<const a32*>(a), 4, true, __builtin_return_address(0));
  reinterpret_cast<volatile std::atomic<a32>*>(a)->compare_exchange_strong(expected, v, order(mo));
  return expected;  // the value before, as the hook returns it
}
int __tsan_atomic32_compare_exchange_strong(volatile a32* a, a32* expected, a32 v, int mo, int) {
  md::counters::recordAccess(const_cast<const a32*>(a), 4, true, __builtin_return_address(0));
  return reinterpret_cast<volatile std::atomic<a32>*>(a)->compare_exchange_strong(*expected, v, order(mo));
}
}
