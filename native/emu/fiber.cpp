// fiber.cpp: stacks and context switches for md::emu::Fiber.
// The switch: a few instructions of assembly on x86-64 Linux, ucontext
// everywhere else (and there too with -DMD_EMU_UCONTEXT, which the
// portability check uses).
#if defined(__x86_64__) && defined(__linux__) && !defined(MD_EMU_UCONTEXT)
#define MD_EMU_ASM_SWITCH 1
#else
// ucontext is XSI: macOS declares it only under _XOPEN_SOURCE. That macro
// alone also hides everything outside POSIX (MAP_ANON in sys/mman.h), so
// the platform's switch for its own extensions goes with it: Darwin's
// _DARWIN_C_SOURCE, glibc's _DEFAULT_SOURCE. scripts/check-metal.sh
// compiles this file with glibc in strict mode to keep that true.
#define _XOPEN_SOURCE 700
#define _DARWIN_C_SOURCE 1
#define _DEFAULT_SOURCE 1
#endif
#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MD_EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define MD_EMU_ASAN 1
#endif
#ifdef MD_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#ifdef MD_EMU_ASM_SWITCH
// md_emu_switch(save, target): pushes the callee-saved registers, stores
// the stack pointer in *save, loads `target` as the stack pointer and pops
// the same set from it. The MXCSR and x87 control words are not switched:
// kernels never change rounding modes, and ldmxcsr/fldcw cost more than
// the rest of the switch.
extern "C" void md_emu_switch(void** save, void* target);
extern "C" void md_emu_fiber_entry();
asm(R"(
  .text
  .globl md_emu_switch
  .type md_emu_switch, @function
md_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size md_emu_switch, .-md_emu_switch

  .globl md_emu_fiber_entry
  .type md_emu_fiber_entry, @function
md_emu_fiber_entry:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size md_emu_fiber_entry, .-md_emu_fiber_entry
  .section .note.GNU-stack,"",@progbits
  .text
)");
#else
#include <ucontext.h>
#endif

namespace md::emu {

struct Fiber::Context {
#ifdef MD_EMU_ASM_SWITCH
  void* sp = nullptr;
#else
  ucontext_t uc;
#endif
#ifdef MD_EMU_ASAN
  void* fakeStack = nullptr;
  const void* stackBottom = nullptr;
  size_t stackSize = 0;
#endif
};

namespace {

void startSwitch(Fiber::Context* from, const void* bottom, size_t size, bool finished) {
#ifdef MD_EMU_ASAN
  __sanitizer_start_switch_fiber(finished ? nullptr : &from->fakeStack, bottom, size);
#else
  (void)from, (void)bottom, (void)size, (void)finished;
#endif
}

// After a switch lands in `to`; `from` learns where its own stack is.
void finishSwitch(Fiber::Context* to, Fiber::Context* from) {
#ifdef MD_EMU_ASAN
  __sanitizer_finish_switch_fiber(to->fakeStack, from ? &from->stackBottom : nullptr,
                                  from ? &from->stackSize : nullptr);
#else
  (void)to, (void)from;
#endif
}

#ifndef MD_EMU_ASM_SWITCH
// makecontext passes only int arguments: the fiber to start travels here.
thread_local Fiber* startingFiber = nullptr;
#endif

void switchTo(Fiber::Context* from, Fiber::Context* to) {
#ifdef MD_EMU_ASM_SWITCH
  md_emu_switch(&from->sp, to->sp);
#else
  swapcontext(&from->uc, &to->uc);
#endif
}

}  // namespace

Fiber::Fiber(size_t stackBytes) : self_(new Context), scheduler_(new Context) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  stackBytes_ = (stackBytes + page - 1) / page * page;
  mapBytes_ = stackBytes_ + page;
  stack_ = mmap(nullptr, mapBytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
  if (stack_ == MAP_FAILED) {
    delete self_;
    delete scheduler_;
    throw std::bad_alloc();
  }
  mprotect(stack_, page, PROT_NONE);  // the guard page: an overflow faults here
  stackBottom_ = static_cast<char*>(stack_) + page;
}

Fiber::~Fiber() {
  munmap(stack_, mapBytes_);
  delete self_;
  delete scheduler_;
}

void Fiber::start(Entry entry, void* arg, bool abandoned) {
  entry_ = entry;
  arg_ = arg;
#ifdef MD_EMU_ASAN
  // A fiber given up mid-kernel leaves its frames' redzones poisoned.
  if (abandoned) __asan_unpoison_memory_region(stackBottom_, stackBytes_);
  self_->fakeStack = nullptr;
#else
  (void)abandoned;
#endif
#ifdef MD_EMU_ASM_SWITCH
  // The frame md_emu_switch pops: r15..r12, rbx, rbp, then the return
  // address (md_emu_fiber_entry), which calls r13(r12) on a 16-byte
  // aligned stack.
  auto top = reinterpret_cast<uintptr_t>(stackBottom_ + stackBytes_) & ~uintptr_t(15);
  auto* frame = reinterpret_cast<uint64_t*>(top) - 9;  // so that frame + 7 is 16-byte aligned
  frame[0] = 0;                                        // r15
  frame[1] = 0;                                        // r14
  frame[2] = reinterpret_cast<uint64_t>(&trampoline);  // r13: what to call
  frame[3] = reinterpret_cast<uint64_t>(this);         // r12: its argument
  frame[4] = 0;                                        // rbx
  frame[5] = 0;                                        // rbp
  frame[6] = reinterpret_cast<uint64_t>(&md_emu_fiber_entry);
  frame[7] = 0;
  frame[8] = 0;
  self_->sp = frame;
#else
  getcontext(&self_->uc);
  self_->uc.uc_stack.ss_sp = stackBottom_;
  self_->uc.uc_stack.ss_size = stackBytes_;
  self_->uc.uc_link = nullptr;
  makecontext(&self_->uc, reinterpret_cast<void (*)()>(&ucontextEntry), 0);
#endif
}

void Fiber::trampoline(void* self) {
  auto* fiber = static_cast<Fiber*>(self);
  finishSwitch(fiber->self_, fiber->scheduler_);
  fiber->entry_(fiber->arg_);
  fiber->yield(true);
  std::abort();  // a finished fiber is never resumed
}

#ifndef MD_EMU_ASM_SWITCH
void Fiber::ucontextEntry() { trampoline(startingFiber); }
#endif

void Fiber::resume() {
#ifndef MD_EMU_ASM_SWITCH
  startingFiber = this;
#endif
  startSwitch(scheduler_, stackBottom_, stackBytes_, false);
  switchTo(scheduler_, self_);
  finishSwitch(scheduler_, nullptr);
}

void Fiber::yield(bool finished) {
#ifdef MD_EMU_ASAN
  startSwitch(self_, scheduler_->stackBottom, scheduler_->stackSize, finished);
#else
  startSwitch(self_, nullptr, 0, finished);
#endif
  switchTo(self_, scheduler_);
  finishSwitch(self_, scheduler_);
}

}  // namespace md::emu
