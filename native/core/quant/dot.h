// dot.h: the dot product of one weight row with one activation row, per
// weight type, on the best instruction set this CPU has. The activation
// row is already in the weight type's partner type (activationTypeFor).
#pragma once
#include <cstdint>

#include "tensor_types.h"

namespace md {

using RowDot = float (*)(const void* weights, const void* activations, int64_t n);

struct DotTable {
  const char* isa;  // "avx2", "neon" or "portable"
  RowDot f32, f16, bf16, q4_0, q4_1, q5_0, q8_0, q4_k, q5_k, q6_k;

  // nullptr for a type without a dot product (activation-only types).
  RowDot forType(TensorType weights) const;
};

// Each is nullptr when this build or this CPU lacks the instruction set.
const DotTable* portableDotTable();
const DotTable* avx2DotTable();
const DotTable* neonDotTable();

// The fastest table this CPU runs; MD_CPU_ISA=portable|avx2|neon picks one
// (an error when it is not available here).
const DotTable& bestDotTable();
const DotTable& dotTableNamed(const char* isa);  // throws std::invalid_argument

}  // namespace md
