// weights.h: a model's tensors as views into the memory-mapped file, bound
// to their roles by GGUF tensor name, with every shape checked against the
// config before any work.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "../quant/tensor_types.h"
#include "model_config.h"

namespace md {

// A 1-D or 2-D tensor: `rows` rows of `cols` values (GGUF's ne[1], ne[0]).
struct TensorView {
  TensorType type = TensorType::F32;
  uint64_t cols = 0, rows = 0;
  const uint8_t* data = nullptr;
  size_t rowBytes = 0;

  bool present() const { return data != nullptr; }
  const uint8_t* row(uint64_t r) const { return data + r * rowBytes; }
};

// One entry of the file's tensor table, as the loader hands it over.
struct TensorEntry {
  std::string name;
  uint32_t type = 0;
  std::vector<uint64_t> dims;  // ne[0], ne[1], ...
  uint64_t offset = 0;         // from the start of the file
};

struct LayerWeights {
  TensorView attnNorm, wq, wk, wv, wo, bq, bk, bv, qNorm, kNorm;
  TensorView ffnNorm, gate, up, down;
};

struct ModelWeights {
  TensorView tokenEmbedding, outputNorm, output;  // output is tokenEmbedding when the file ties them
  TensorView ropeFactors;                          // llama3: rope_freqs.weight, ropeDims / 2 values (optional)
  std::vector<LayerWeights> layers;
};

// Binds `entries` (pointing into `file`, `fileSize` bytes) to roles.
// Throws std::invalid_argument naming the tensor and the field for a
// missing tensor, a wrong shape or type, or bytes outside the file.
ModelWeights bindWeights(const ModelConfig& config, const std::vector<TensorEntry>& entries, const uint8_t* file,
                         uint64_t fileSize);

// Throws std::invalid_argument naming the field when the config is not a
// model this forward pass runs (zero sizes, heads that do not divide...).
void checkConfig(const ModelConfig& config);

}  // namespace md
