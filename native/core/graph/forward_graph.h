// forward_graph.h: a model's forward pass as data, written once per
// architecture (llama_graph.cpp) and run by every backend: the CPU
// executor (transformer/transformer.cpp) computes each op, the table
// recorder (table_recorder.cpp) turns each op into Metal kernel launches.
// As llama.cpp's graph builders are to ggml's backends, the graph says
// what is computed; how is each backend's business.
//
// The graph is the op list of one layer after another for a batch of
// tokens; its ops read and write the named activations below (each one
// row per token) and the file's tensors, declared with the shapes the
// architecture expects (weights.cpp binds and checks them).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../quant/tensor_types.h"
#include "../transformer/model_config.h"

namespace md {

// The activations of a batch, one row per token.
enum class Activation : uint8_t {
  Hidden,    // the residual stream: embeddingLength
  Normed,    // a norm's output: embeddingLength
  Q,         // headCount * headDim
  K,         // headCountKv * headDim
  V,         // headCountKv * headDim
  Attended,  // attention's output: headCount * headDim
  Gate,      // ffnLength (SwiGLU's output too); a mixture of experts: expertUsedCount x expertFfnLength
  Up,        // as Gate
  Branch,    // a sublayer's output before its residual add (gemma's post-norms): embeddingLength
};
constexpr int kActivationCount = 9;
const char* activationName(Activation a);  // "hidden", "normed", "q", ...
// Floats of one token's row of `a` under `c`.
uint64_t activationWidth(const ModelConfig& c, Activation a);

// A tensor the architecture reads, by its GGUF name: `rows` rows of `cols`
// values (rows 0: a vector of cols float32 values).
struct TensorDecl {
  std::string name;
  uint64_t cols = 0, rows = 0;
  bool required = true;
  uint64_t slices = 0;                // a 3-D tensor's third dimension (the experts' matrices, one after another)
  TensorType type = TensorType::F32;  // as the file has it (set by the builder's lookup)
  bool present = false;               // optional tensors may be absent
};

// An index into ForwardGraph::tensors, or none.
struct TensorRef {
  int index = -1;
  bool present() const { return index >= 0; }
};

enum class OpKind : uint8_t {
  Embed,        // out = rows tokens of the table `weight`, times `scale`
  RmsNorm,      // out = rmsNorm(in) * weight, per row of `width` (rowsPerToken rows per token)
  Project,      // per projection: its out = W in (+ bias), or out += W in with accumulate
  Rope,         // RoPE of Q's and K's heads at each token's position, at the layer's frequencies
  KvStore,      // K and V rows into the layer's cache at each token's position
  Attention,    // Attended = causal attention of Q over the layer's cache (a sliding window on windowed layers)
  SwiGlu,       // Gate = silu(Gate) * Up
  GeGlu,        // Gate = gelu(Gate) * Up (GELU's tanh approximation)
  AddResidual,  // out += in, per row of `width` (a post-normed branch into the residual)
  MoeFfn,       // out += the mixture of experts of in: `weight` the router; projections the gate, up and down experts
  OutputNorm,   // Normed = rmsNorm(Hidden) * weight for the rows the caller wants logits of
  LmHead,       // the logits (or the pick) = W Normed for those rows
};

// One matrix of a Project op.
struct Projection {
  std::string label;  // "3: attn_q": each matrix is its own GPU command or part of one
  TensorRef weight;
  uint32_t rowOffset = 0;  // the weight's rows start here (a fused tensor: phi3's attn_qkv, ffn_up)
  TensorRef bias;          // added to each row; none for most
  Activation out = Activation::Hidden;
  uint32_t rows = 0;
};

struct GraphOp {
  OpKind kind = OpKind::Embed;
  std::string label;  // "3: attention norm": what a table command and a profile show
  uint32_t layer = 0;
  Activation in = Activation::Hidden, out = Activation::Hidden;
  TensorRef weight;
  uint32_t width = 0;                   // values per row the op reads (Project: the columns of its matrices)
  uint32_t rowsPerToken = 1;            // RmsNorm: heads per token for per-head norms
  bool accumulate = false;              // Project: out += W in (a residual add)
  float scale = 1.f;                    // Embed: the rows' factor
  uint32_t window = 0;                  // Attention: the sliding window (positions seen); 0: all
  std::vector<Projection> projections;  // Project: up to three matrices reading `in`
};

struct ForwardGraph {
  std::vector<TensorDecl> tensors;
  std::vector<GraphOp> ops;
  TensorRef ropeFactors;      // llama3's rope_freqs or phi3's rope_factors_short: divide the RoPE angles (optional)
  TensorRef ropeFactorsLong;  // phi3's rope_factors_long, for contexts past config.ropeOriginalContext (optional)

  const TensorDecl& tensor(TensorRef r) const { return tensors[size_t(r.index)]; }
  // The factors a sequence of `contextSize` positions takes (llama.cpp's choice by context).
  TensorRef ropeFactorsFor(const ModelConfig& c, uint32_t contextSize) const {
    return ropeFactorsLong.present() && c.ropeOriginalContext > 0 && contextSize > c.ropeOriginalContext
               ? ropeFactorsLong
               : ropeFactors;
  }
};

// What the file holds: a tensor's type by name, or nullptr when it has none.
using TensorLookup = std::function<const TensorType*(const std::string& name)>;

// The forward pass of the model `config` describes, over the tensors
// `lookup` finds: the builder of config.graph. Throws std::invalid_argument
// naming the field for a config no builder runs (checkConfig's errors).
ForwardGraph buildForwardGraph(const ModelConfig& config, const TensorLookup& lookup);

// The builders, one per family.
ForwardGraph buildLlamaGraph(const ModelConfig& config, const TensorLookup& lookup);
ForwardGraph buildGemma3Graph(const ModelConfig& config, const TensorLookup& lookup);

}  // namespace md
