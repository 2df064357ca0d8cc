// llama_graph.cpp: the forward pass of the Llama family (llama, qwen2,
// qwen3, phi3: GGUF-NOTES.md), which differ only in the config's switches
// and in how the file stores Q, K and V (phi3: one attn_qkv matrix, their
// rows one after another) and the gate and up (phi3: one ffn_up of 2 x ffn
// rows, the gate's first):
//   per layer: xn = rmsNorm(x) * attn_norm
//              q, k, v = Wq xn (+bq), Wk xn (+bk), Wv xn (+bv)    [qwen2: the biases]
//              q, k = rmsNorm of each head * q_norm, k_norm        [qwen3]
//              RoPE of q and k; K, V cache[position] = k, v
//              x += Wo attention(q, K, V)
//              xn = rmsNorm(x) * ffn_norm;  x += Wdown (silu(Wgate xn) * Wup xn)
//   qwen3moe: the FFN is a mixture of experts (expertFfn below)
//   then logits = Woutput (rmsNorm(x) * output_norm), Woutput being the
//   embedding table when the file ties them.
// A new architecture that the kernels already cover is a builder like this
// one (and its GGUF keys in lib/gguf/architectures/): gemma3_graph.cpp.
#include <string>

#include "graph_builder.h"

namespace md {
namespace {

// x += Wdown (silu(Wgate xn) * Wup xn); phi3's gate and up are one ffn_up (the gate's rows first).
void denseFfn(GraphBuilder& g, const ModelConfig& c, const std::string& p, const std::string& n, uint32_t layer,
              bool fusedGateUp) {
  const uint32_t d = c.embeddingLength, f = c.ffnLength;
  TensorRef gate, up;
  if (fusedGateUp) {
    gate = up = g.tensor(p + "ffn_up.weight", d, 2 * f);
  } else {
    gate = g.tensor(p + "ffn_gate.weight", d, f);
    up = g.tensor(p + "ffn_up.weight", d, f);
  }
  const TensorRef down = g.tensor(p + "ffn_down.weight", f, d);
  g.project(n + "ffn_gate + ffn_up", layer, Activation::Normed, d,
            {{n + "ffn_gate", gate, 0, {}, Activation::Gate, f},
             {n + "ffn_up", up, fusedGateUp ? f : 0, {}, Activation::Up, f}});
  GraphOp& swiglu = g.op(OpKind::SwiGlu, n + "SwiGLU", layer);
  swiglu.in = Activation::Up;
  swiglu.out = Activation::Gate;
  swiglu.width = f;
  g.project(n + "ffn_down + residual", layer, Activation::Gate, f,
            {{n + "ffn_down + residual", down, 0, {}, Activation::Hidden, d}}, true);
}

// qwen3moe: x += the router's chosen experts' SwiGLU outputs, weighted; each
// expert's gate, up and down matrices stacked in one tensor apiece.
void expertFfn(GraphBuilder& g, const ModelConfig& c, const std::string& p, const std::string& n, uint32_t layer) {
  const uint32_t d = c.embeddingLength, e = c.expertCount, fe = c.expertFfnLength;
  GraphOp& moe = g.op(OpKind::MoeFfn, n + "experts + residual", layer);
  moe.in = Activation::Normed;
  moe.out = Activation::Hidden;
  moe.weight = g.tensor(p + "ffn_gate_inp.weight", d, e);
  moe.width = d;
  moe.accumulate = true;
  moe.projections = {
      {n + "ffn_gate_exps", g.tensor(p + "ffn_gate_exps.weight", d, fe, true, e), 0, {}, Activation::Gate, fe},
      {n + "ffn_up_exps", g.tensor(p + "ffn_up_exps.weight", d, fe, true, e), 0, {}, Activation::Up, fe},
      {n + "ffn_down_exps", g.tensor(p + "ffn_down_exps.weight", fe, d, true, e), 0, {}, Activation::Hidden, d}};
}

}  // namespace

ForwardGraph buildLlamaGraph(const ModelConfig& c, const TensorLookup& lookup) {
  GraphBuilder g(lookup);
  const uint32_t d = c.embeddingLength;
  const uint32_t qDim = c.headCount * c.headDim, kvDim = c.headCountKv * c.headDim;
  const TensorRef embedding = g.tensor("token_embd.weight", d, c.vocabSize);
  const TensorRef outputNorm = g.tensor("output_norm.weight", d, 0);
  TensorRef output = g.tensor("output.weight", d, c.vocabSize, false);
  if (!output.present()) output = embedding;  // tied embeddings: the table is the LM head
  g.graph().ropeFactors = g.tensor("rope_freqs.weight", c.ropeDims / 2, 0, false);
  if (!g.graph().ropeFactors.present()) {
    g.graph().ropeFactors = g.tensor("rope_factors_short.weight", c.ropeDims / 2, 0, false);
    g.graph().ropeFactorsLong = g.tensor("rope_factors_long.weight", c.ropeDims / 2, 0, false);
  }
  const bool fusedQkv = g.has("blk.0.attn_qkv.weight"), fusedGateUp = !g.has("blk.0.ffn_gate.weight");

  GraphOp& embed = g.op(OpKind::Embed, "embedding");
  embed.out = Activation::Hidden;
  embed.weight = embedding;
  embed.width = d;
  for (uint32_t layer = 0; layer < c.blockCount; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".", n = std::to_string(layer) + ": ";
    const TensorRef attnNorm = g.tensor(p + "attn_norm.weight", d, 0);
    TensorRef wq, wk, wv;
    uint32_t kOffset = 0, vOffset = 0;
    if (fusedQkv) {
      wq = wk = wv = g.tensor(p + "attn_qkv.weight", d, qDim + 2 * kvDim);
      kOffset = qDim;
      vOffset = qDim + kvDim;
    } else {
      wq = g.tensor(p + "attn_q.weight", d, qDim);
      wk = g.tensor(p + "attn_k.weight", d, kvDim);
      wv = g.tensor(p + "attn_v.weight", d, kvDim);
    }
    const TensorRef wo = g.tensor(p + "attn_output.weight", qDim, d);
    TensorRef bq, bk, bv, qNorm, kNorm;
    if (c.qkvBias) {
      bq = g.tensor(p + "attn_q.bias", qDim, 0);
      bk = g.tensor(p + "attn_k.bias", kvDim, 0);
      bv = g.tensor(p + "attn_v.bias", kvDim, 0);
    }
    if (c.qkNorm) {
      qNorm = g.tensor(p + "attn_q_norm.weight", c.headDim, 0);
      kNorm = g.tensor(p + "attn_k_norm.weight", c.headDim, 0);
    }

    g.rmsNorm(n + "attention norm", layer, Activation::Hidden, Activation::Normed, attnNorm, d);
    g.project(n + "attn_q + attn_k + attn_v", layer, Activation::Normed, d,
              {{n + "attn_q", wq, 0, bq, Activation::Q, qDim},
               {n + "attn_k", wk, kOffset, bk, Activation::K, kvDim},
               {n + "attn_v", wv, vOffset, bv, Activation::V, kvDim}});
    if (c.qkNorm) {
      g.rmsNorm(n + "Q head norms", layer, Activation::Q, Activation::Q, qNorm, c.headDim, c.headCount);
      g.rmsNorm(n + "K head norms", layer, Activation::K, Activation::K, kNorm, c.headDim, c.headCountKv);
    }
    g.op(OpKind::Rope, n + "RoPE of Q and K", layer);
    g.op(OpKind::KvStore, n + "KV write", layer);
    g.op(OpKind::Attention, n + "attention", layer).out = Activation::Attended;
    g.project(n + "attn_output + residual", layer, Activation::Attended, qDim,
              {{n + "attn_output + residual", wo, 0, {}, Activation::Hidden, d}}, true);
    g.rmsNorm(n + "FFN norm", layer, Activation::Hidden, Activation::Normed, g.tensor(p + "ffn_norm.weight", d, 0), d);
    if (c.expertCount > 0)
      expertFfn(g, c, p, n, layer);
    else
      denseFfn(g, c, p, n, layer, fusedGateUp);
  }
  g.outputHead(outputNorm, output, d);
  return std::move(g.graph());
}

}  // namespace md
