// fiber.h: cooperative fibers for the kernel emulator, one per GPU thread.
//
// A fiber runs on its own small stack with a guard page below it, so a
// kernel that overflows its stack faults instead of corrupting a neighbour.
// Switching is a hand-written register swap on x86-64 Linux (about 2x
// faster than swapcontext, which also makes a signal-mask syscall), and
// ucontext elsewhere. Under AddressSanitizer every switch is announced with
// __sanitizer_{start,finish}_switch_fiber so ASan tracks the right stack.
#pragma once
#include <cstddef>

namespace md::emu {

class Fiber {
 public:
  using Entry = void (*)(void* arg);

  explicit Fiber(size_t stackBytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Prepares the fiber to run entry(arg) from the top of its stack the next
  // time it is resumed. `abandoned` says the previous run never finished
  // (the scheduler gave up on it), so its stack must be cleaned for ASan.
  void start(Entry entry, void* arg, bool abandoned);

  // Scheduler side: runs the fiber until it yields or finishes.
  void resume();
  // Fiber side: returns control to the scheduler; `finished` when the fiber
  // will never be resumed again.
  void yield(bool finished = false);

  struct Context;  // saved registers and sanitizer state: defined in fiber.cpp

 private:
  static void trampoline(void* self);
  static void ucontextEntry();

  void* stack_ = nullptr;  // lowest address of the mapping (guard page)
  size_t mapBytes_ = 0;
  char* stackBottom_ = nullptr;  // lowest usable address
  size_t stackBytes_ = 0;
  Entry entry_ = nullptr;
  void* arg_ = nullptr;
  Context* self_;       // this fiber
  Context* scheduler_;  // whoever resumed it
};

}  // namespace md::emu
