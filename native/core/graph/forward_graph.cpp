// forward_graph.cpp: the activations' names and widths, and the builder of
// each graph family.
#include "forward_graph.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../transformer/weights.h"

namespace md {

ForwardGraph buildForwardGraph(const ModelConfig& config, const TensorLookup& lookup) {
  checkConfig(config);
  switch (config.graph) {
    case GraphFamily::Llama: return buildLlamaGraph(config, lookup);
    case GraphFamily::Gemma3: return buildGemma3Graph(config, lookup);
  }
  throw std::invalid_argument("graph: expected 0 (llama) or 1 (gemma3), got " + std::to_string(uint32_t(config.graph)));
}

const char* activationName(Activation a) {
  switch (a) {
    case Activation::Hidden: return "hidden";
    case Activation::Normed: return "normed";
    case Activation::Q: return "q";
    case Activation::K: return "k";
    case Activation::V: return "v";
    case Activation::Attended: return "attended";
    case Activation::Gate: return "gate";
    case Activation::Up: return "up";
    case Activation::Branch: return "branch";
  }
  return "?";
}

uint64_t activationWidth(const ModelConfig& c, Activation a) {
  switch (a) {
    case Activation::Hidden:
    case Activation::Normed:
    case Activation::Branch: return c.embeddingLength;
    case Activation::Q:
    case Activation::Attended: return uint64_t(c.headCount) * c.headDim;
    case Activation::K:
    case Activation::V: return uint64_t(c.headCountKv) * c.headDim;
    case Activation::Gate:
    case Activation::Up:  // a mixture of experts: a row per chosen expert
      return std::max<uint64_t>(c.ffnLength, uint64_t(c.expertUsedCount) * c.expertFfnLength);
  }
  return 0;
}

}  // namespace md
