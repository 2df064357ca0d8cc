// vector_clones.h: MD_VECTOR_CLONES, for loops worth an AVX2 build.
//
// The hash's variable shift and the 8-lane float loops have no SSE2
// instructions, so on x86-64 Linux such functions are also compiled for
// AVX2 and the loader picks the clone the CPU supports (an ifunc). Both
// clones do the same float32 operations in the same order without fused
// multiply-adds, so they return the same bits. Elsewhere (macOS on Apple
// silicon: NEON has them all) the one build is used.
#pragma once

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define MD_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MD_VECTOR_CLONES
#endif
