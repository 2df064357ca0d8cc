// kernel_binding.h: calls a kernel compiled as C++ with the arguments a
// command buffer bound, as Metal's argument tables do.
//
// Convention (checked at compile time where C++ can): a kernel's parameters
// are its buffers in [[buffer(i)]] order, i = 0, 1, ..., then any
// [[threadgroup(j)]] memory in order, then MD_THREAD_IDS. Pointers receive
// the bound address; references (constant structs) the object there.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "threadgroup_runner.h"

namespace md::emu {

constexpr uint32_t kMaxKernelArguments = 31;

// What one threadgroup's fibers see: an address per argument slot.
struct BoundArguments {
  void* slots[kMaxKernelArguments];
};

template <class T>
inline T argumentFrom(void* address) {
  if constexpr (std::is_pointer<T>::value) {
    return static_cast<T>(address);
  } else {
    static_assert(std::is_reference<T>::value, "kernel parameters before MD_THREAD_IDS are pointers or references");
    return *static_cast<std::remove_reference_t<T>*>(address);
  }
}

// The last parameter of every kernel in the emulator (MD_THREAD_IDS): only
// kernel functions have it, so only they can declare threadgroup arrays
// (metal_compat.h, MD_THREADGROUP_ARRAY).
struct KernelScope {};

template <auto Kernel>
struct KernelBinding;

template <class... Params, void (*Kernel)(Params...)>
struct KernelBinding<Kernel> {
  static constexpr uint32_t kThreadIds = 7;  // MD_THREAD_IDS: six ids and the kernel-scope token
  static_assert(sizeof...(Params) >= kThreadIds, "a kernel ends with MD_THREAD_IDS");
  static constexpr uint32_t kArguments = sizeof...(Params) - kThreadIds;
  static_assert(kArguments <= kMaxKernelArguments, "too many kernel arguments");

  static void invoke(const void* context, const ThreadIds& ids) {
    call(*static_cast<const BoundArguments*>(context), ids, std::make_index_sequence<kArguments>{});
  }

 private:
  template <size_t I>
  using Param = std::tuple_element_t<I, std::tuple<Params...>>;

  template <size_t... I>
  static void call(const BoundArguments& bound, const ThreadIds& ids, std::index_sequence<I...>) {
    static_assert((std::is_same<std::decay_t<Param<kArguments + 0>>, uint32_t>::value), "MD_THREAD_IDS are uint");
    Kernel(argumentFrom<Param<I>>(bound.slots[I])..., ids.tid, ids.group, ids.threads, ids.lane, ids.simd, ids.groups,
           KernelScope{});
  }
};

// A kernel the emulator knows, by the name Metal would know it by.
struct EmulatedKernel {
  const char* name;
  LaneFunction invoke;
  uint32_t arguments;  // buffers + threadgroup memory, before MD_THREAD_IDS
  // Of them, the [[threadgroup(n)]] pointers, which come last. The
  // built-in kernels declare their threadgroup arrays inside and take none.
  uint32_t threadgroupArguments = 0;
};

// The table entry of a kernel function compiled as C++.
#define MD_EMULATED_KERNEL(name)                                                                       \
  ::md::emu::EmulatedKernel {                                                                          \
#name, &::md::emu::KernelBinding < &name> ::invoke, ::md::emu::KernelBinding < &name> ::kArguments \
  }

// Every kernel of metal/*.metal (native/emu/kernels.cpp).
const EmulatedKernel* findEmulatedKernel(const char* name);
// All of them, for tests that check none is missing.
const EmulatedKernel* emulatedKernels(size_t* count);

}  // namespace md::emu
