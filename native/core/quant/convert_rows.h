// convert_rows.h: whole rows from one tensor type to another.
//  - dequantizeRow: a weight row to float32 (the embedding lookup, tests).
//  - quantizeActivations: a float32 activation row to the partner type of
//    a weight type (activationTypeFor), rounded the way llama.cpp's CPU
//    backend rounds it, since matching its logits is this package's test.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor_types.h"

namespace md {

// The type an activation row is converted to before a dot product with a
// row of `weights`: Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL, Q8_1 for Q4_1/Q5_1, Q8_K for the K
// types and IQ4_XS, and the float type itself for F32/F16/BF16.
TensorType activationTypeFor(TensorType weights);

// n must be a whole number of `type`'s blocks. dequantizeRow also reads
// the activation types (for tests).
void dequantizeRow(TensorType type, const void* src, float* dst, int64_t n);
void quantizeActivations(TensorType type, const float* src, void* dst, int64_t n);

// Float32 <-> bfloat16 bits (round to nearest even, as ggml).
uint16_t bf16FromFloat(float f);
float bf16ToFloat(uint16_t b);

}  // namespace md
