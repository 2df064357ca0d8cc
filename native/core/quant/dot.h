// dot.h: dot products of weight rows with activation rows, per weight
// type, on the best instruction set this CPU has. The activation rows are
// already in the weight type's partner type (activationTypeFor).
//
// A tile computes up to kTileRows weight rows against up to kTileTokens
// activation rows at once: each weight block is unpacked once for every
// token of the tile and each activation block loaded once for every row,
// which is what makes a batched prefill a matrix-matrix product.
#pragma once
#include <cstddef>
#include <cstdint>

#include "repack.h"
#include "tensor_types.h"

namespace md {

constexpr int kTileRows = 8;
constexpr int kTileTokens = 4;
// A repacked tile's rows: one or two groups of 8 (repack.h).
constexpr int kRepackedTileRows = 16;

// out[r * outStride + t] = dot(weight row r, activation row t) for
// r < rows <= kTileRows and t < tokens <= kTileTokens; rows of n values.
using TileDot = void (*)(const uint8_t* weights, size_t weightStride, int rows, const uint8_t* activations,
                         size_t activationStride, int tokens, int64_t n, float* out, size_t outStride);

// A block of a batched product on matrix units (AMX): out[t * outStride +
// r] = dot(weight row r, activation row t) for rows and tokens both
// multiples of 16. Returns false, computing nothing, for a type it does not
// take. Its sums are exact per block but added in another order than the
// tiles', so its results differ from theirs in the last bits.
using MatrixProduct = bool (*)(TensorType type, const uint8_t* weights, size_t weightStride, int64_t rows,
                               const uint8_t* activations, size_t activationStride, int64_t tokens, int64_t n,
                               float* out, size_t outStride);

// A float product on a BLAS library (its sgemm): out[t * outStride + r] =
// dot(weight row r, activation row t), float32 rows of n values, for any
// rows and tokens. It sums in the library's order, so its results differ
// from the tiles' in the last bits.
using FloatMatrixProduct = void (*)(const float* weights, int64_t rows, const float* activations, int64_t tokens,
                                    int64_t n, float* out, size_t outStride);

// The attention's weighted sum of value rows: out[i] += weights[j] * (row
// j's value i) for j = 0 .. count - 1 in order, rows of n values `stride`
// bytes apart. Each product is rounded, then added (no fused
// multiply-add), so every table gives the scalar loop's bits.
using WeightedRows = void (*)(const uint8_t* rows, size_t stride, const float* weights, int64_t count, int64_t n,
                              float* out);

struct DotTable {
  // "amx", "avx512", "avx-vnni", "avx2", "neon-i8mm", "neon", "portable",
  // or a BLAS library's name ("accelerate", "openblas") over the fastest of them
  const char* isa;
  TileDot f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs;
  MatrixProduct matrix = nullptr;  // only on CPUs with matrix units
  // Float weights' (F32, F16, BF16) batches of kLibraryMinimum or more
  // tokens and rows, converted to float32 and handed to a BLAS library
  // (matmul.cpp); only in blasDotTable().
  FloatMatrixProduct floatMatrix = nullptr;
  // The tiles of the layouts repacked in groups of 8 rows (repack.h): a
  // tile is one or two groups (weights the first group's first byte,
  // weightStride the bytes of a group, rows 8 or kRepackedTileRows)
  // against up to kTileTokens tokens; a row gets the same bits either
  // way. Q4_0x8's and Q8_0x8's activation rows are Q8_0, each followed by
  // its blocks' int16 sums of quants, or where repackForm.activationQuads
  // the tile's tokens are one quad (repack.h's toActivationQuad) at
  // `activations`; the K layouts' are Q8_K. nullptr
  // where the table has no such tiles (the weights stay as mapped).
  TileDot q4_0x8 = nullptr, q8_0x8 = nullptr, q4_kx8 = nullptr, q5_kx8 = nullptr, q6_kx8 = nullptr;
  // How those tiles take the repacked bytes (repack.h): a row's bytes 4
  // or 8 (i8mm) side by side; Q4_0's and Q8_0's quants signed, and their
  // activations in quads (NEON).
  RepackForm repackForm;

  WeightedRows weightedF32 = nullptr, weightedF16 = nullptr;  // float32 rows; float16 rows

  // nullptr for a type without a dot product (activation-only types).
  TileDot forType(TensorType weights) const;
  // The tile of `weights`' repacked layout; nullptr if this table has none.
  TileDot repackedFor(TensorType weights) const;
  // One weight row with one activation row.
  float dot(TensorType weights, const void* w, const void* a, int64_t n) const;
};

// Each is nullptr when this build or this CPU lacks the instruction set.
const DotTable* portableDotTable();
const DotTable* avx2DotTable();
const DotTable* avxVnniDotTable();
const DotTable* avx512DotTable();
const DotTable* amxDotTable();  // the AVX-512 table with AMX for batches
// Its F16 tile is on fmlal where the CPU has FEAT_FHM (every Apple silicon
// chip), converting its operands elsewhere: the same bits (dot_neon_f16.h).
const DotTable* neonDotTable();
// NEON with the dot-product and int8 matrix-multiply (i8mm) extensions
// (Apple M2 and later): the NEON table with smmla tiles for the repacked
// layouts.
const DotTable* neonI8mmDotTable();
// The fastest vector table with float weights' batches on the BLAS library
// this build links (dot_blas.cpp): "accelerate" on macOS, as llama.cpp's
// Mac build; "openblas" in a CMake build with MD_BLAS=OpenBLAS (Linux, to
// test the same code); nullptr in a build without one.
const DotTable* blasDotTable();

// The library's product and its name ("accelerate", "openblas"), or
// nullptr without one; and how many products it has run (tests).
FloatMatrixProduct linkedBlasProduct(const char** name);
uint64_t blasProductCalls();

// The fewest tokens, and rows, of a product the BLAS library takes:
// llama.cpp's (ggml-blas), below which its call costs more than it saves.
constexpr int64_t kLibraryMinimum = 32;

// The fastest table this CPU runs, with Accelerate where the build links
// it; MD_CPU_ISA=portable|avx2|avx-vnni|avx512|amx|neon|neon-i8mm|accelerate|openblas
// picks one (an error when it is not available here).
const DotTable& bestDotTable();
const DotTable& dotTableNamed(const char* isa);  // throws std::invalid_argument

}  // namespace md
