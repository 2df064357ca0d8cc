// cache_shift.h: llama.cpp's context shift on a KV cache. The positions
// keep .. keep + discard - 1 are forgotten and the ones after them move
// down by discard. A key was stored rotated by RoPE at its old position p;
// rotating it by the angle of -discard gives the key at p - discard (a
// rotation by a + b is the rotation by a, then by b), so nothing is
// evaluated again. Values carry no position and move as they are.
//
// The cache is laid out as the CPU state and the GPU's kv_store kernels
// write it: per layer, one row of headCountKv * headDim values in the
// cache's type (F16, F32 or Q8_0) per position. The GPU tables' caches are
// shared memory, so the host shifts them with the same code.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../quant/tensor_types.h"
#include "model_config.h"

namespace md {

struct KvCacheLayer {
  uint8_t* keys;
  uint8_t* values;
};

struct KvShift {
  uint32_t length;   // positions the cache holds
  uint32_t keep;     // the first `keep` stay where they are
  uint32_t discard;  // then `discard` are forgotten
};

// Throws std::out_of_range naming the field when keep + discard is over
// length, or discard is 0.
void checkKvShift(const KvShift& shift);

// The positions that move: keep + discard .. length - 1.
inline uint32_t movedPositions(const KvShift& s) { return s.length - s.keep - s.discard; }

// Rotates the key row of moved position `index` (0 .. movedPositions - 1)
// of `layer` in place by -discard positions; cosines and sines are
// ropeAngles() of -discard. scratch: headCountKv * headDim floats.
void rotateMovedKey(const ModelConfig& c, TensorType cacheType, size_t rowBytes, const KvShift& s,
                    const KvCacheLayer& layer, uint32_t index, const float* cosines, const float* sines,
                    float* scratch);

// Moves the rotated rows of every layer down by discard (after every key
// was rotated: rows overlap, so this part is one memmove per buffer).
void moveShiftedRows(const std::vector<KvCacheLayer>& layers, size_t rowBytes, const KvShift& s);

}  // namespace md
