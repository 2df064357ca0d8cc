// model_config.h: the shape of a transformer, as the loader read it from
// GGUF metadata (lib/gguf/architectures/*.ts say which keys). `graph` names
// the builder of its forward pass (graph/*_graph.cpp); the architectures a
// builder runs differ only in the switches below.
#pragma once
#include <cstdint>

namespace md {

enum class RopeMode : uint32_t {
  AdjacentPairs = 0,  // llama: rotates (x[2i], x[2i+1])
  SplitHalves = 2,    // qwen2, qwen3 ("neox"): rotates (x[i], x[i + dims/2])
};

// Which graph builder runs the model.
enum class GraphFamily : uint32_t {
  Llama = 0,   // llama, qwen2, qwen3: graph/llama_graph.cpp
  Gemma3 = 1,  // gemma3: graph/gemma3_graph.cpp
};

// The feed-forward's gate activation.
enum class FfnActivation : uint32_t {
  Silu = 0,      // SwiGLU
  GeluTanh = 1,  // GeGLU, GELU's tanh approximation (gemma)
};

struct ModelConfig {
  GraphFamily graph = GraphFamily::Llama;
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
  FfnActivation ffnActivation = FfnActivation::Silu;
  float embeddingScale = 1.f;  // the embedding rows are multiplied by it (gemma: sqrt(d))
  float attentionScale = 0.f;  // the scores' scale; 0: 1 / sqrt(headDim)
  // Sliding-window attention: a windowed layer's query at position p sees
  // positions p - slidingWindow + 1 .. p. With a pattern n, layer l is
  // windowed when l % n < n - 1 (gemma3: 5 of every 6); 0 windows every
  // layer. slidingWindow 0: every layer sees every earlier position.
  uint32_t slidingWindow = 0;
  uint32_t slidingWindowPattern = 0;
  float ropeBaseLocal = 0.f;  // a windowed layer's RoPE base (its frequency scale is 1); 0: ropeBase
  // LongRoPE (phi3): a context longer than ropeOriginalContext takes the file's
  // rope_factors_long instead of rope_factors_short (0: the short ones, or
  // llama3's rope_freqs, always); ropeAttnFactor multiplies RoPE's cos and sin.
  uint32_t ropeOriginalContext = 0;
  float ropeAttnFactor = 1.f;
  // Mixture of experts (qwen3moe): each token's FFN is the weighted sum of
  // expertUsedCount of expertCount SwiGLU experts of expertFfnLength rows,
  // picked by a router; 0 experts: the dense FFN.
  uint32_t expertCount = 0;
  uint32_t expertUsedCount = 0;
  uint32_t expertFfnLength = 0;
};

// Whether `layer` attends through the sliding window.
inline bool isWindowedLayer(const ModelConfig& c, uint32_t layer) {
  if (c.slidingWindow == 0) return false;
  const uint32_t n = c.slidingWindowPattern;
  return n == 0 || layer % n < n - 1;
}

// The RoPE base and frequency scale of `layer`.
struct RopeFrequencies {
  float base, freqScale;
};
inline RopeFrequencies ropeFrequencies(const ModelConfig& c, uint32_t layer) {
  if (isWindowedLayer(c, layer) && c.ropeBaseLocal > 0) return {c.ropeBaseLocal, 1.f};
  return {c.ropeBase, c.ropeFreqScale};
}

// Throws std::invalid_argument naming the field when the config is not a
// model the forward graph runs (zero sizes, heads that do not divide...).
void checkConfig(const ModelConfig& config);

}  // namespace md
