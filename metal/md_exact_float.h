// md_exact_float.h: every float operation after this point rounds on its
// own. The promise of the package is the same token on every backend, and
// that needs the same float32 bits: a compiler that contracts a * b + c
// into one fused multiply-add (one rounding instead of two) changes the
// last bit of about 0.2% of the noise cells and 1.6% of md_exp's results.
// Metal contracts within a statement even with fast math off, and GCC
// across statements by default; build flags cannot reach a kernel source
// compiled at run time, so the source says it itself.
//
// Every Metal compiler the package supports honours it: the Metal compiler
// is clang, and `#pragma clang fp contract(off)` is clang's; the METAL forms
// belong to Metal 3.2 (macOS 15) and are added where the language has them
// (older compilers would warn and ignore them). scripts/lint-metal.mjs
// checks that every such feature is behind its version, and
// scripts/check-metal.sh preprocesses this file as Metal 3.0 and 3.2.
//
// Included first by md_sampling.h, so by every kernel and by the CPU code
// that shares its math. The devices check that it works
// (native/core/exact_arithmetic.cpp, at start), and the emulator builds its
// kernels with contraction on, so an expression this misses shows up as a
// disagreement with the CPU.
#ifndef MD_EXACT_FLOAT_H
#define MD_EXACT_FLOAT_H

#if defined(__METAL_VERSION__)
#pragma clang fp contract(off)
#if __METAL_VERSION__ >= 320
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
#endif
#elif defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#endif  // MD_EXACT_FLOAT_H
