// md_kernel.h: what every kernel file includes first. Portable between the
// Metal compiler and the C++ emulator (native/emu/metal_compat.h), so it
// uses only what both provide: scalar math, simd_* operations, 8x8
// simdgroup matrices, relaxed atomics, threadgroup_barrier. Kernels compute in float32; half is for
// storage only.
#ifndef MD_KERNEL_H
#define MD_KERNEL_H

#ifdef __METAL_VERSION__
#include <metal_stdlib>
#include <metal_simdgroup_matrix>  // matmul.metal's 8x8 matrices (MSL 2.3, Apple7 GPUs: M1 and later)
using namespace metal;
// Metal threadgroup memory: one array shared by the threadgroup.
#define MD_THREADGROUP_ARRAY(type, name, count) threadgroup type name[count]
// The emulator adds a parameter here (metal_compat.h); Metal needs none.
#define MD_KERNEL_SCOPE_PARAMETER
#else
#include "metal_compat.h"
#endif

#include "md_sampling.h"

// The thread-position parameters every kernel ends with, in this order (the
// emulator binds them by position: native/emu/kernel_binding.h).
#define MD_THREAD_IDS                                    \
  uint tid [[thread_position_in_threadgroup]],           \
  uint group [[threadgroup_position_in_grid]],           \
  uint threads [[threads_per_threadgroup]],              \
  uint lane [[thread_index_in_simdgroup]],               \
  uint simd_index [[simdgroup_index_in_threadgroup]],   \
  uint grid_groups [[threadgroups_per_grid]]            \
  MD_KERNEL_SCOPE_PARAMETER

#define MD_SIMD_WIDTH 32u
#define MD_MAX_SIMDGROUPS 32u                          // 1024 threads
#define MD_REDUCE_SLOTS (MD_MAX_SIMDGROUPS + 1u)        // one per simdgroup, one result
#define MD_SCAN_SLOTS (2u * MD_MAX_SIMDGROUPS + 1u)     // totals, their prefixes, the sum

// ---- float16 keys -------------------------------------------------------------

inline float md_half_key_value(int key) {
  return float(as_type<half>(ushort(md_half_bits_of_key(key))));
}

inline int md_key_of(half h) { return md_half_key(as_type<ushort>(h)); }
inline int md_key_of(float f) { return md_float_key(as_type<uint>(f)); }

// A float32 result rounded to float16 (nearest even) and sanitised again:
// a bias can overflow to +inf, and -inf - -inf is NaN.
inline half md_round_half(float value) {
  return as_type<half>(ushort(md_half_bits_of_key(md_half_key(as_type<ushort>(half(value))))));
}

// The smallest key whose value is >= limit (MD_HALF_KEY_MAX_FINITE + 1
// when none is): exact, by bisection on the keys.
inline int md_half_key_at_least(float limit) {
  int lo = MD_HALF_KEY_NEG_INF, hi = MD_HALF_KEY_MAX_FINITE + 1;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (md_half_key_value(mid) >= limit) hi = mid; else lo = mid + 1;
  }
  return lo;
}

// ---- threadgroup reductions ----------------------------------------------------
// Each must be reached by every thread of the threadgroup (they hold
// barriers), with `threads` a multiple of 32.

template <typename T>
struct md_best {
  T value;
  uint index;
};

// The largest value among the 32 lanes and, among its ties, the lowest index.
template <typename T>
inline md_best<T> md_simd_best(T value, uint index) {
  md_best<T> best;
  best.value = simd_max(value);
  best.index = simd_min(value == best.value ? index : MD_NO_TOKEN);
  return best;
}

// The same across the threadgroup. Threads with nothing to offer pass
// `none` (below every value) and MD_NO_TOKEN. Exact: max and min do not
// round.
template <typename T>
inline md_best<T> md_threadgroup_best(T value, uint index, uint lane, uint simd_index, uint simdgroups,
                                      T none, threadgroup T* values, threadgroup uint* indices) {
  md_best<T> mine = md_simd_best(value, index);
  if (lane == 0) {
    values[simd_index] = mine.value;
    indices[simd_index] = mine.index;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simd_index == 0) {
    bool holds = lane < simdgroups;
    md_best<T> all = md_simd_best(holds ? values[lane] : none, holds ? indices[lane] : MD_NO_TOKEN);
    if (lane == 0) {
      values[MD_MAX_SIMDGROUPS] = all.value;
      indices[MD_MAX_SIMDGROUPS] = all.index;
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  md_best<T> result;
  result.value = values[MD_MAX_SIMDGROUPS];
  result.index = indices[MD_MAX_SIMDGROUPS];
  return result;
}

// Transposes a 32 x 32 float matrix held a row per lane (lane l's m[i] is
// element (l, i)); afterwards lane l's m[i] is element (i, l). Five
// butterfly stages: at distance d, a lane and lane ^ d swap the elements
// whose lane and index differ in bit d, one shuffle per pair of registers
// (each lane sends the one its partner keeps). Values only move: no
// arithmetic, so no bits change. Every lane must call it (it shuffles).
inline void md_simd_transpose32(thread float* m, uint lane) {
  for (ushort d = MD_SIMD_WIDTH / 2; d > 0; d >>= 1) {
    const bool upper = (lane & d) != 0;
    for (ushort i = 0; i < MD_SIMD_WIDTH; ++i) {
      if ((i & d) != 0) continue;  // each pair (i, i | d) once
      const float sent = upper ? m[i] : m[i | d];
      const float got = simd_shuffle_xor(sent, d);
      m[i] = upper ? got : m[i];
      m[i | d] = upper ? m[i | d] : got;
    }
  }
}

// Inclusive prefix sum over the 32 lanes by doubling shifts: a fixed order
// of additions, so float sums are the same bits on every GPU and in the
// emulator (simd_prefix_*_sum leaves the order to the hardware).
template <typename T>
inline T md_simd_inclusive_sum(T x, uint lane) {
  for (ushort shift = 1; shift < MD_SIMD_WIDTH; shift <<= 1) {
    T other = simd_shuffle_up(x, shift);
    if (lane >= shift) x += other;
  }
  return x;
}

// The sum of x over threads with a lower tid (exclusive prefix), in a
// fixed order; `total` gets the sum over all threads.
template <typename T>
inline T md_threadgroup_exclusive_sum(T x, uint lane, uint simd_index, uint simdgroups, thread T& total,
                                      threadgroup T* scratch) {
  T inclusive = md_simd_inclusive_sum(x, lane);
  T before_lane = simd_shuffle_up(inclusive, 1);
  if (lane == 0) before_lane = T(0);
  if (lane == MD_SIMD_WIDTH - 1) scratch[simd_index] = inclusive;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simd_index == 0) {
    T group_total = lane < simdgroups ? scratch[lane] : T(0);
    T group_inclusive = md_simd_inclusive_sum(group_total, lane);
    T group_before = simd_shuffle_up(group_inclusive, 1);
    if (lane == 0) group_before = T(0);
    scratch[MD_MAX_SIMDGROUPS + lane] = group_before;
    if (lane == MD_SIMD_WIDTH - 1) scratch[2 * MD_MAX_SIMDGROUPS] = group_inclusive;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  total = scratch[2 * MD_MAX_SIMDGROUPS];
  return scratch[MD_MAX_SIMDGROUPS + simd_index] + before_lane;
}

#endif  // MD_KERNEL_H
