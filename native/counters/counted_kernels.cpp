// counted_kernels.cpp: the emulator's kernels (native/emu/kernels.cpp: every
// metal/*.metal) once more, built with the thread-sanitizer
// instrumentation whose hooks count their memory accesses (tsan_hooks.cpp).
// Linked only into the counting programs, in place of the plain kernels.
#include "kernels.cpp"
