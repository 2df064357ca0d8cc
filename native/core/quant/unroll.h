// unroll.h: MD_UNROLL, written before a loop whose count is a compile-time
// constant (a tile's tokens, rows, pairs or chunks), unrolls it whole.
//
// Why: a tile keeps its sums in small arrays of vectors indexed by those
// loops. GCC at -O3 unrolled them after its scalar replacement of
// aggregates had run, so the arrays stayed in memory: a load and a store
// of every token's sums each block (count-neon-tiles.mjs counted 12 of a
// Q4_0 block's 162 NEON instructions at 4 tokens; AVX2's tiles the same).
// Unrolled first, each element is a register. Clang takes the same pragma.
#pragma once

#define MD_UNROLL _Pragma("GCC unroll 16")
