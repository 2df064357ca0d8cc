// matmul_counts.h: the prefill's matrix-matrix kernel of one weight type,
// counted on a batch of a model's shape (random weights): what the tests
// and md_kernel_counters read.
#pragma once
#include <cstdint>

#include "count_dispatch.h"
#include "device.h"
#include "quant/tensor_types.h"

namespace md::counters {

struct MatmulCounts : MatrixCounts {
  uint32_t tokenTiles = 0;  // the batch's tiles of MD_MATMUL_TOKENS: how many times W is read
};

// Y = X W^T for `rows` x `cols` of `type` and `count` tokens (store mode),
// with the threadgroups the tables use.
MatmulCounts countMatmul(Device& device, TensorType type, const char* kernelSuffix, uint32_t rows, uint32_t cols,
                         uint32_t count);

}  // namespace md::counters
