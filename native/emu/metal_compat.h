// metal_compat.h: the part of the Metal Shading Language our kernels use,
// in C++17, so the same .metal source runs in the emulator.
//
// Included by metal/md_kernel.h when __METAL_VERSION__ is not defined, and
// only into translation units that hold kernels: it defines macros named
// `device`, `constant`, `threadgroup`, `thread` and `kernel`.
//
// With MD_CHECK_ADDRESS_SPACES defined (clang only, -fsyntax-only) the
// address-space keywords become clang's numbered address spaces, so passing
// a device pointer where a thread pointer is expected fails to compile, as
// it does in Metal. Nothing is run in that mode.
#pragma once
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../core/float16.h"
#include "kernel_binding.h"
#include "threadgroup_runner.h"

#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunknown-attributes"
#pragma clang diagnostic ignored "-Wunused-parameter"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wattributes"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif

// ---- scalar types ----------------------------------------------------------
typedef uint32_t uint;
typedef uint16_t ushort;
typedef uint8_t uchar;
typedef unsigned long ulong;  // 64 bits on every LP64 host, as in Metal

#ifdef MD_CHECK_ADDRESS_SPACES
// A built-in type, so that values in any address space convert (clang's
// storage-only __fp16; the check never runs the code).
typedef __fp16 half;
#else
// IEEE binary16; conversions round to nearest even.
struct half {
  uint16_t bits;
  half() = default;
  half(float f) : bits(md::halfFromFloat(f)) {}
  operator float() const { return md::halfToFloat(bits); }
};
static_assert(sizeof(half) == 2 && std::is_trivially_copyable<half>::value, "half is 16 bits");

// Arithmetic as Metal does it: half with half (or an integer) is computed
// in half, each operation rounded to half; half with float is float. Done
// in float and rounded once per operation, which is exact: float has more
// than twice half's precision plus two bits, so the double rounding of
// +, -, * and / never differs from rounding the exact result.
namespace md::emu::half_ops {
template <class T>
using IfInteger = std::enable_if_t<std::is_integral<T>::value, int>;
template <class T>
using IfFloating = std::enable_if_t<std::is_floating_point<T>::value, int>;
}  // namespace md::emu::half_ops

#define MD_HALF_OPERATOR(op)                                                     \
  inline half operator op(half a, half b) { return half(float(a) op float(b)); } \
  template <class T, ::md::emu::half_ops::IfInteger<T> = 0>                      \
  inline half operator op(half a, T b) {                                         \
    return half(float(a) op float(b));                                           \
  }                                                                              \
  template <class T, ::md::emu::half_ops::IfInteger<T> = 0>                      \
  inline half operator op(T a, half b) {                                         \
    return half(float(a) op float(b));                                           \
  }                                                                              \
  template <class T, ::md::emu::half_ops::IfFloating<T> = 0>                     \
  inline float operator op(half a, T b) {                                        \
    return float(a) op float(b);                                                 \
  }                                                                              \
  template <class T, ::md::emu::half_ops::IfFloating<T> = 0>                     \
  inline float operator op(T a, half b) {                                        \
    return float(a) op float(b);                                                 \
  }                                                                              \
  template <class T>                                                             \
  inline half& operator op##=(half& a, T b) {                                    \
    return a = half(a op b);                                                     \
  }
MD_HALF_OPERATOR(+)
MD_HALF_OPERATOR(-)
MD_HALF_OPERATOR(*)
MD_HALF_OPERATOR(/)
#undef MD_HALF_OPERATOR
inline half operator-(half a) {
  half negated;
  negated.bits = uint16_t(a.bits ^ 0x8000u);
  return negated;
}
#endif

template <class To, class From>
inline To as_type(From from) {
  static_assert(sizeof(To) == sizeof(From), "as_type: sizes differ");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

using std::fabs;
using std::fma;
using std::isinf;
using std::isnan;
template <class T>
inline T min(T a, T b) {
  return b < a ? b : a;
}
template <class T>
inline T max(T a, T b) {
  return a < b ? b : a;
}

// ---- address spaces and function qualifiers -------------------------------

// Metal declares threadgroup variables only in kernel functions. Every
// kernel ends with MD_THREAD_IDS, which here adds this parameter, and
// MD_THREADGROUP_ARRAY names it: declared in any other function, the array
// is a compile error naming the rule ("undeclared identifier
// 'md_threadgroup_arrays_need_kernel_scope'").
#define MD_KERNEL_SCOPE_PARAMETER , ::md::emu::KernelScope md_threadgroup_arrays_need_kernel_scope
#define MD_REQUIRE_KERNEL_SCOPE \
  static_assert(sizeof(md_threadgroup_arrays_need_kernel_scope) > 0, "threadgroup arrays are declared in kernels")

#ifdef MD_CHECK_ADDRESS_SPACES
#define device __attribute__((address_space(1)))
#define constant __attribute__((address_space(2)))
#define threadgroup __attribute__((address_space(3)))
#define MD_THREADGROUP_ARRAY(type, name, count) \
  MD_REQUIRE_KERNEL_SCOPE;                      \
  static threadgroup type name[count]
#else
#define device
#define constant const
#define threadgroup
// Storage shared by every fiber of the threadgroup, keyed by the
// declaration.
#define MD_THREADGROUP_ARRAY(type, name, count)                                             \
  MD_REQUIRE_KERNEL_SCOPE;                                                                  \
  static const char md_threadgroup_tag_##name = 0;                                          \
  type* name = static_cast<type*>(::md::emu::ThreadgroupRunner::current().threadgroupArray( \
      &md_threadgroup_tag_##name, sizeof(type) * (count), __FILE__, __LINE__))
#endif
#define thread
#define kernel

// ---- synchronisation --------------------------------------------------------
enum class mem_flags : uint32_t { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(uint32_t(a) | uint32_t(b)); }

// Every fiber waits here until all live fibers of the threadgroup arrive at
// this same line; anything else is reported as divergence or deadlock.
#define threadgroup_barrier(flags) ((void)(flags), ::md::emu::ThreadgroupRunner::current().barrier(__FILE__, __LINE__))

// ---- simdgroup operations (32 lanes) ---------------------------------------
namespace md::emu::simd_ops {

template <class T>
inline uint64_t pack(T v) {
  // Metal's simd_* take scalars and vectors only (this header has no
  // vector types): a struct that happens to fit 8 bytes is refused here as
  // the Metal compiler refuses it.
  static_assert(std::is_arithmetic<T>::value || std::is_same<T, half>::value,
                "simd_* operands must be scalars (or vectors) in Metal, not structs");
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}
template <class T>
inline T unpack(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}
inline bool isActive(uint32_t active, uint32_t lane) { return lane < 32 && ((active >> lane) & 1u); }

// Reductions run over the active lanes in lane order: the emulator is one
// valid order of many; kernels that need bit-identical float sums on every
// GPU build them from shuffles instead.
template <class T, class F>
inline void reduce(const uint64_t* in, uint32_t active, uint64_t* out, F f) {
  bool first = true;
  T acc{};
  for (uint32_t l = 0; l < 32; ++l) {
    if (!isActive(active, l)) continue;
    acc = first ? unpack<T>(in[l]) : f(acc, unpack<T>(in[l]));
    first = false;
  }
  for (uint32_t l = 0; l < 32; ++l) out[l] = pack(acc);
}
// The butterfly: lane l adds lane l ^ 16's partial, then l ^ 8's, ... l ^ 1's
// (an inactive lane's partial is none). a + b and b + a are the same bits,
// so every lane ends with the same sum.
template <class T>
void butterflySum(const uint64_t* in, uint32_t active, uint64_t* out) {
  T partial[32];
  bool present[32];
  for (uint32_t l = 0; l < 32; ++l) {
    present[l] = isActive(active, l);
    partial[l] = present[l] ? unpack<T>(in[l]) : T{};
  }
  for (uint32_t mask = 16; mask >= 1; mask >>= 1) {
    T next[32];
    bool nextPresent[32];
    for (uint32_t l = 0; l < 32; ++l) {
      const uint32_t o = l ^ mask;
      nextPresent[l] = present[l] || present[o];
      next[l] = present[l] && present[o] ? T(partial[l] + partial[o]) : present[l] ? partial[l] : partial[o];
    }
    for (uint32_t l = 0; l < 32; ++l) {
      partial[l] = next[l];
      present[l] = nextPresent[l];
    }
  }
  for (uint32_t l = 0; l < 32; ++l) out[l] = pack(partial[l]);
}
template <class T>
void sum(const uint64_t* in, const uint32_t*, uint32_t active, uint64_t* out) {
  if (ThreadgroupRunner::current().simdSumOrder() == SimdSumOrder::Butterfly) return butterflySum<T>(in, active, out);
  reduce<T>(in, active, out, [](T a, T b) { return T(a + b); });
}
template <class T>
void maximum(const uint64_t* in, const uint32_t*, uint32_t active, uint64_t* out) {
  reduce<T>(in, active, out, [](T a, T b) { return a < b ? b : a; });
}
template <class T>
void minimum(const uint64_t* in, const uint32_t*, uint32_t active, uint64_t* out) {
  reduce<T>(in, active, out, [](T a, T b) { return b < a ? b : a; });
}
// Reading an inactive or out-of-range lane yields the reader's own value
// (undefined in Metal; kernels must not depend on it).
inline void fetch(const uint64_t* in, uint32_t active, uint64_t* out, uint32_t lane, uint32_t source) {
  out[lane] = isActive(active, source) ? in[source] : in[lane];
}
inline void shuffle(const uint64_t* in, const uint32_t* args, uint32_t active, uint64_t* out) {
  for (uint32_t l = 0; l < 32; ++l) fetch(in, active, out, l, args[l]);
}
inline void shuffleDown(const uint64_t* in, const uint32_t* args, uint32_t active, uint64_t* out) {
  for (uint32_t l = 0; l < 32; ++l) fetch(in, active, out, l, l + args[l]);
}
inline void shuffleUp(const uint64_t* in, const uint32_t* args, uint32_t active, uint64_t* out) {
  for (uint32_t l = 0; l < 32; ++l) fetch(in, active, out, l, args[l] <= l ? l - args[l] : 32);
}
inline void shuffleXor(const uint64_t* in, const uint32_t* args, uint32_t active, uint64_t* out) {
  for (uint32_t l = 0; l < 32; ++l) fetch(in, active, out, l, l ^ args[l]);
}
template <class T>
void prefixExclusiveSum(const uint64_t* in, const uint32_t*, uint32_t active, uint64_t* out) {
  T acc{};
  for (uint32_t l = 0; l < 32; ++l) {
    out[l] = pack(acc);
    if (isActive(active, l)) acc = T(acc + unpack<T>(in[l]));
  }
}

template <class T>
inline T collective(T value, uint32_t arg, SimdOp op, const char* what, const char* file, int line) {
  return unpack<T>(ThreadgroupRunner::current().simd(pack(value), arg, op, what, file, line));
}

}  // namespace md::emu::simd_ops

#define MD_EMU_SIMD(x, arg, op, what) ::md::emu::simd_ops::collective((x), uint32_t(arg), op, what, __FILE__, __LINE__)
#define simd_sum(x) MD_EMU_SIMD(x, 0, &::md::emu::simd_ops::sum<std::decay_t<decltype(x)>>, "simd_sum")
#define simd_max(x) MD_EMU_SIMD(x, 0, &::md::emu::simd_ops::maximum<std::decay_t<decltype(x)>>, "simd_max")
#define simd_min(x) MD_EMU_SIMD(x, 0, &::md::emu::simd_ops::minimum<std::decay_t<decltype(x)>>, "simd_min")
#define simd_prefix_exclusive_sum(x) \
  MD_EMU_SIMD(x, 0, &::md::emu::simd_ops::prefixExclusiveSum<std::decay_t<decltype(x)>>, "simd_prefix_exclusive_sum")
#define simd_shuffle(x, lane) MD_EMU_SIMD(x, lane, &::md::emu::simd_ops::shuffle, "simd_shuffle")
#define simd_broadcast(x, lane) MD_EMU_SIMD(x, lane, &::md::emu::simd_ops::shuffle, "simd_broadcast")
#define simd_shuffle_down(x, delta) MD_EMU_SIMD(x, delta, &::md::emu::simd_ops::shuffleDown, "simd_shuffle_down")
#define simd_shuffle_up(x, delta) MD_EMU_SIMD(x, delta, &::md::emu::simd_ops::shuffleUp, "simd_shuffle_up")
#define simd_shuffle_xor(x, mask) MD_EMU_SIMD(x, mask, &::md::emu::simd_ops::shuffleXor, "simd_shuffle_xor")
// The 32 lanes meet (a collective that moves nothing): after it each lane
// sees the threadgroup memory the others wrote before it, as Metal's
// simdgroup_barrier(mem_flags::mem_threadgroup) promises.
#define simdgroup_barrier(flags) \
  ((void)(flags), (void)MD_EMU_SIMD(0u, 0u, &::md::emu::simd_ops::shuffle, "simdgroup_barrier"))

// ---- simdgroup matrices (8 x 8, Apple7 GPUs and later) ----------------------
// Each lane holds the whole matrix here (on a GPU the 32 lanes share its
// elements): a load reads all of it, a multiply-accumulate computes all of
// it, a store writes all of it (every lane the same values). That is
// Metal's meaning when, as Metal requires, the whole SIMD group makes the
// call with the same arguments; the emulator checks both and faults
// otherwise. The sum in a multiply-accumulate runs in k order, one valid
// order of many: the tests allow for the GPU's.
template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  T e[Rows][Cols];
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;

template <class T, int Cols, int Rows>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(const T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) m.e[r][c] = value;
  return m;
}

// The operands may differ in type, as Metal allows (a float accumulator
// over half and float inputs: each product is a half widened to float
// times a float, here as there).
template <class TD, class TA, class TB, class TC, int Cols, int Rows, int K>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<TD, Cols, Rows>& d, const simdgroup_matrix<TA, K, Rows>& a,
                                          const simdgroup_matrix<TB, Cols, K>& b,
                                          const simdgroup_matrix<TC, Cols, Rows>& c) {
  simdgroup_matrix<TD, Cols, Rows> out;
  for (int r = 0; r < Rows; ++r) {
    for (int col = 0; col < Cols; ++col) {
      TD sum = TD(c.e[r][col]);
      for (int k = 0; k < K; ++k) sum += a.e[r][k] * b.e[k][col];
      out.e[r][col] = sum;
    }
  }
  d = out;
}

#ifdef MD_CHECK_ADDRESS_SPACES
// Declarations only: any address space, as Metal's overloads take device
// and threadgroup memory.
template <class T, int Cols, int Rows, class P>
void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, P* src, uint64_t elements_per_row = Cols);
template <class T, int Cols, int Rows, class P>
void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, P* dst, uint64_t elements_per_row = Cols);
#else
namespace md::emu::simd_ops {
// 1 in every lane when all 32 lanes take part and pass the same value.
inline void allSame(const uint64_t* in, const uint32_t*, uint32_t active, uint64_t* out) {
  bool same = active == 0xffffffffu;
  for (uint32_t l = 1; l < 32 && same; ++l) same = in[l] == in[0];
  for (uint32_t l = 0; l < 32; ++l) out[l] = same ? 1 : 0;
}
// The call's arguments (pointer, row stride) as one value every lane must share.
inline void requireUniform(const void* pointer, uint64_t stride, const char* what) {
  const uint64_t key = uint64_t(reinterpret_cast<uintptr_t>(pointer)) * 1000003u ^ stride;
  if (collective(key, 0, &allSame, what, __FILE__, __LINE__) == 0)
    ThreadgroupRunner::current().nonUniformSimdgroupCall(what);
}
}  // namespace md::emu::simd_ops

template <class T, int Cols, int Rows>
inline void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, const T* src, uint64_t elements_per_row = Cols) {
  ::md::emu::simd_ops::requireUniform(src, elements_per_row, "simdgroup_load");
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) d.e[r][c] = src[r * elements_per_row + c];
}
template <class T, int Cols, int Rows>
inline void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, T* dst, uint64_t elements_per_row = Cols) {
  ::md::emu::simd_ops::requireUniform(dst, elements_per_row, "simdgroup_store");
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) dst[r * elements_per_row + c] = a.e[r][c];
}
#endif

// ---- atomics (relaxed, as Metal offers) ------------------------------------
struct atomic_uint {
  uint32_t value;
};
struct atomic_int {
  int32_t value;
};
enum memory_order { memory_order_relaxed };

#ifdef MD_CHECK_ADDRESS_SPACES
// Declarations only: the check compiles, it never runs. A template accepts
// the atomic in any address space, as Metal's overloads do.
template <class A>
uint32_t atomic_fetch_add_explicit(A* object, uint32_t operand, memory_order order);
template <class A>
void atomic_store_explicit(A* object, uint32_t operand, memory_order order);
template <class A>
uint32_t atomic_load_explicit(A* object, memory_order order);
template <class A>
uint32_t atomic_fetch_max_explicit(A* object, uint32_t operand, memory_order order);
template <class A>
uint32_t atomic_exchange_explicit(A* object, uint32_t operand, memory_order order);
#else
template <class A>
inline auto atomic_fetch_add_explicit(A* object, decltype(object->value) operand, memory_order) {
  return __atomic_fetch_add(&object->value, operand, __ATOMIC_RELAXED);
}
template <class A>
inline void atomic_store_explicit(A* object, decltype(object->value) operand, memory_order) {
  __atomic_store_n(&object->value, operand, __ATOMIC_RELAXED);
}
template <class A>
inline auto atomic_load_explicit(A* object, memory_order) {
  return __atomic_load_n(&object->value, __ATOMIC_RELAXED);
}
template <class A>
inline auto atomic_exchange_explicit(A* object, decltype(object->value) operand, memory_order) {
  return __atomic_exchange_n(&object->value, operand, __ATOMIC_RELAXED);
}
template <class A>
inline auto atomic_fetch_max_explicit(A* object, decltype(object->value) operand, memory_order) {
  auto seen = __atomic_load_n(&object->value, __ATOMIC_RELAXED);
  while (seen < operand &&
         !__atomic_compare_exchange_n(&object->value, &seen, operand, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return seen;
}
#endif
