// cache_shift.cpp
#include "cache_shift.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "../quant/convert_rows.h"
#include "ops.h"

namespace md {

void checkKvShift(const KvShift& s) {
  if (s.discard == 0) throw std::out_of_range("discard: must be at least 1, got 0");
  if (uint64_t(s.keep) + s.discard > s.length)
    throw std::out_of_range("keep + discard: must be at most the " + std::to_string(s.length) +
                            " positions the cache holds, got " + std::to_string(s.keep) + " + " +
                            std::to_string(s.discard));
}

void rotateMovedKey(const ModelConfig& c, TensorType cacheType, size_t rowBytes, const KvShift& s,
                    const KvCacheLayer& layer, uint32_t index, const float* cosines, const float* sines,
                    float* scratch) {
  const int64_t kvDim = int64_t(c.headCountKv) * c.headDim;
  uint8_t* row = layer.keys + size_t(s.keep + s.discard + index) * rowBytes;
  // As llama.cpp's shift of a quantized cache: to float, rotated, and back.
  dequantizeRow(cacheType, row, scratch, kvDim);
  for (uint32_t h = 0; h < c.headCountKv; ++h)
    applyRope(c.ropeMode, int(c.ropeDims), cosines, sines, scratch + int64_t(h) * c.headDim);
  quantizeActivations(cacheType, scratch, row, kvDim);
}

void moveShiftedRows(const std::vector<KvCacheLayer>& layers, size_t rowBytes, const KvShift& s) {
  const size_t to = size_t(s.keep) * rowBytes, from = size_t(s.keep + s.discard) * rowBytes;
  const size_t bytes = size_t(movedPositions(s)) * rowBytes;
  for (const KvCacheLayer& layer : layers) {
    std::memmove(layer.keys + to, layer.keys + from, bytes);
    std::memmove(layer.values + to, layer.values + from, bytes);
  }
}

}  // namespace md
