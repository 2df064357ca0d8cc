// matvec_counts.h: the decode matrix-vector kernel of one weight type,
// counted on a matrix of a model's shape (random weights): what the tests
// and the md_kernel_counters report read.
#pragma once
#include <cstdint>

#include "count_dispatch.h"
#include "device.h"
#include "quant/tensor_types.h"

namespace md::counters {

using MatvecCounts = MatrixCounts;

// y = W x for `rows` x `cols` of `type` (one matrix, store mode), with the
// threadgroups of `simdgroups` SIMD groups the tables use, W bound `phase`
// bytes into a 128-byte line (a GGUF aligns tensors to 32 bytes only).
MatvecCounts countMatvec(Device& device, TensorType type, const char* kernelSuffix, uint32_t rows, uint32_t cols,
                         uint32_t simdgroups = 4, uint32_t phase = 0);

}  // namespace md::counters
