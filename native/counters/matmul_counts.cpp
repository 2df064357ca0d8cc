// matmul_counts.cpp
#include "matmul_counts.h"

#include <cstring>
#include <string>
#include <vector>

#include "count_dispatch.h"
#include "md_transformer.h"
#include "random_weights.h"

namespace md::counters {

MatmulCounts countMatmul(Device& device, TensorType type, const char* kernelSuffix, uint32_t rows, uint32_t cols,
                         uint32_t count) {
  const std::vector<uint8_t> bytes = randomRows(type, rows, cols, rows + cols + count);
  auto w = device.newBuffer(bytes.size());
  std::memcpy(w->contents(), bytes.data(), bytes.size());
  auto x = device.newBuffer(size_t(count) * cols * 4);
  auto* xs = static_cast<float*>(x->contents());
  for (size_t i = 0; i < size_t(count) * cols; ++i) xs[i] = float(i % 7) - 3.0f;
  auto y = device.newBuffer(size_t(count) * rows * 4);
  const md_matmul_params p{rows, cols, count, 0};
  const uint32_t tokenTiles = (count + MD_MATMUL_TOKENS - 1) / MD_MATMUL_TOKENS;
  const uint32_t groups = (rows + MD_MATMUL_ROWS - 1) / MD_MATMUL_ROWS * tokenTiles;
  MatmulCounts result;
  static_cast<MatrixCounts&>(result) = matrixCounts(
      countDispatch(device, std::string("md_matmul_") + kernelSuffix, {{0, w.get()}, {1, x.get()}, {3, y.get()}}, 2, &p,
                    sizeof p, groups, MD_MATMUL_THREADS),
      bytes.size());
  result.tokenTiles = tokenTiles;
  return result;
}

}  // namespace md::counters
