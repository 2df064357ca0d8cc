// weights.h: a model's tensors as views into the memory-mapped file: the
// tensors its forward graph declares (graph/forward_graph.h), each shape
// checked against the declaration before any work.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../graph/forward_graph.h"
#include "../quant/tensor_types.h"
#include "model_config.h"

namespace md {

// A 1-D or 2-D tensor: `rows` rows of `cols` values (GGUF's ne[1], ne[0]),
// as the file has them, or repacked in groups of `groupRows` rows for the
// CPU's tiles (repack_weights.h; quant/repack.h: the rows are then not
// addressable one by one).
struct TensorView {
  TensorType type = TensorType::F32;
  uint64_t cols = 0, rows = 0;
  const uint8_t* data = nullptr;
  size_t rowBytes = 0;
  uint32_t groupRows = 0;  // 0: rows as the file has them
  size_t groupBytes = 0;

  bool present() const { return data != nullptr; }
  bool repacked() const { return groupRows != 0; }
  // Row r's bytes (a tensor as the file has it).
  const uint8_t* row(uint64_t r) const { return data + r * rowBytes; }
  // Where the tile of rows r.. starts: row r's bytes, or its group's (r a multiple of groupRows).
  const uint8_t* tile(uint64_t r) const { return groupRows != 0 ? data + (r / groupRows) * groupBytes : row(r); }
  // The rows from r on (a fused tensor's part; r a multiple of groupRows).
  TensorView from(uint64_t r) const {
    TensorView v = *this;
    v.data = tile(r);
    v.rows = rows - r;
    return v;
  }
};

// One entry of the file's tensor table, as the loader hands it over.
struct TensorEntry {
  std::string name;
  uint32_t type = 0;
  std::vector<uint64_t> dims;  // ne[0], ne[1], ...
  uint64_t offset = 0;         // from the start of the file
};

// The forward graph and its tensors: tensors[i] is graph.tensors[i] (not
// present for an optional tensor the file does not have).
struct ModelWeights {
  ForwardGraph graph;
  std::vector<TensorView> tensors;
  // The repacked tensors' bytes (repack_weights.h), which their views point
  // into. Left uninitialized when made: the pool's threads write every byte.
  std::vector<std::unique_ptr<uint8_t[]>> repacked;

  const TensorView& operator[](TensorRef r) const { return tensors[size_t(r.index)]; }
};

// The config's forward graph over a file's tensor table (each tensor's
// type as the file has it).
ForwardGraph buildForwardGraph(const ModelConfig& config, const std::vector<TensorEntry>& entries);

// Builds the config's forward graph and binds its tensors to `entries`
// (pointing into `file`, `fileSize` bytes).
// Throws std::invalid_argument naming the tensor and the field for a
// missing tensor, a wrong shape or type, or bytes outside the file.
ModelWeights bindWeights(const ModelConfig& config, const std::vector<TensorEntry>& entries, const uint8_t* file,
                         uint64_t fileSize);

}  // namespace md
