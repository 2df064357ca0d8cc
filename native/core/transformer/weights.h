// weights.h: a model's tensors as views into the memory-mapped file: the
// tensors its forward graph declares (graph/forward_graph.h), each shape
// checked against the declaration before any work.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "../graph/forward_graph.h"
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

// The forward graph and its tensors: tensors[i] is graph.tensors[i] (not
// present for an optional tensor the file does not have).
struct ModelWeights {
  ForwardGraph graph;
  std::vector<TensorView> tensors;

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
