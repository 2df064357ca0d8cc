// unroll.h: MD_UNROLL, written before a loop whose count is a compile-time
// constant (a tile's tokens, rows, pairs or chunks), unrolls it whole.
//
// Why: a tile keeps its sums in small arrays of vectors indexed by those
// loops. GCC at -O3 unrolled them after its scalar replacement of
// aggregates had run, so the arrays stayed in memory: a load and a store
// of every token's sums each block (count-neon-tiles.mjs counted 12 of a
// Q4_0 block's 162 NEON instructions at 4 tokens; AVX2's tiles the same).
// Unrolled first, each element is a register. Clang takes the same pragma.
// The repacked tiles use it; the row-by-row tiles do not (unrolled so,
// some gained and some lost time: bench/README.md, issue 37's sixth step).
#pragma once

#define MD_UNROLL _Pragma("GCC unroll 16")

// MD_UNROLL_FOR_GCC, MD_UNROLL_FOR_CLANG: the same, where that compiler
// builds; the other is left to its own choice. For the loops where the two
// compilers' counts part ways (scripts/count-neon-tiles.mjs counts with
// each): unrolled, one's tile executes fewer instructions, the other's more.
#if defined(__clang__)
#define MD_UNROLL_FOR_GCC
#define MD_UNROLL_FOR_CLANG MD_UNROLL
#else
#define MD_UNROLL_FOR_GCC MD_UNROLL
#define MD_UNROLL_FOR_CLANG
#endif
