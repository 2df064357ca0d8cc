// model_config.h: the shape of a Llama-family transformer, as the loader
// read it from GGUF metadata (lib/gguf/architectures/*.ts say which keys).
// The forward pass is one graph (graph/llama_graph.cpp); the architectures
// differ only in the switches below.
#pragma once
#include <cstdint>

namespace md {

enum class RopeMode : uint32_t {
  AdjacentPairs = 0,  // llama: rotates (x[2i], x[2i+1])
  SplitHalves = 2,    // qwen2, qwen3 ("neox"): rotates (x[i], x[i + dims/2])
};

struct ModelConfig {
  uint32_t vocabSize = 0;
  uint32_t embeddingLength = 0;  // d
  uint32_t blockCount = 0;       // layers
  uint32_t headCount = 0;
  uint32_t headCountKv = 0;  // grouped-query attention: headCount is a multiple of it
  uint32_t headDim = 0;      // per head, for Q, K and V
  uint32_t ffnLength = 0;
  uint32_t ropeDims = 0;  // leading dims of each head that RoPE rotates
  RopeMode ropeMode = RopeMode::AdjacentPairs;
  float ropeBase = 10000.f;
  float ropeFreqScale = 1.f;  // 1 / the linear scaling factor
  float normEps = 1e-5f;
  bool qkvBias = false;  // qwen2
  bool qkNorm = false;   // qwen3: RMSNorm of each head of Q and K before RoPE
};

// Throws std::invalid_argument naming the field when the config is not a
// model the forward graph runs (zero sizes, heads that do not divide...).
void checkConfig(const ModelConfig& config);

}  // namespace md
