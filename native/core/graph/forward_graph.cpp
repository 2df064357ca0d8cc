// forward_graph.cpp: the activations' names and widths.
#include "forward_graph.h"

namespace md {

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
  }
  return "?";
}

uint64_t activationWidth(const ModelConfig& c, Activation a) {
  switch (a) {
    case Activation::Hidden:
    case Activation::Normed: return c.embeddingLength;
    case Activation::Q:
    case Activation::Attended: return uint64_t(c.headCount) * c.headDim;
    case Activation::K:
    case Activation::V: return uint64_t(c.headCountKv) * c.headDim;
    case Activation::Gate:
    case Activation::Up: return c.ffnLength;
  }
  return 0;
}

}  // namespace md
