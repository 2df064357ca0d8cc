// gemma3_graph.cpp: the forward pass of Gemma 3 (llama.cpp's gemma3):
//   x = embedding * sqrt(d)
//   per layer: xn = rmsNorm(x) * attn_norm
//              q, k, v = Wq xn, Wk xn, Wv xn
//              q, k = rmsNorm of each head * q_norm, k_norm; RoPE (neox) at the
//                     layer's base: rope.freq_base on global layers, 10000 on
//                     windowed ones (5 of every 6 see the last sliding_window
//                     positions)
//              x += rmsNorm(Wo attention(q, K, V)) * post_attention_norm
//              xn = rmsNorm(x) * ffn_norm
//              x += rmsNorm(Wdown (gelu(Wgate xn) * Wup xn)) * post_ffw_norm
//   then logits = Woutput (rmsNorm(x) * output_norm), Woutput the embedding
//   table when the file ties them (Gemma's files do).
// The converter stores Gemma's norm weights as 1 + w, so every norm here is
// the plain rmsNorm * weight.
#include <cmath>
#include <string>

#include "graph_builder.h"

namespace md {

ForwardGraph buildGemma3Graph(const ModelConfig& c, const TensorLookup& lookup) {
  GraphBuilder g(lookup);
  const uint32_t d = c.embeddingLength, f = c.ffnLength;
  const uint32_t qDim = c.headCount * c.headDim, kvDim = c.headCountKv * c.headDim;
  const TensorRef embedding = g.tensor("token_embd.weight", d, c.vocabSize);
  const TensorRef outputNorm = g.tensor("output_norm.weight", d, 0);
  TensorRef output = g.tensor("output.weight", d, c.vocabSize, false);
  if (!output.present()) output = embedding;

  GraphOp& embed = g.op(OpKind::Embed, "embedding");
  embed.out = Activation::Hidden;
  embed.weight = embedding;
  embed.width = d;
  embed.scale = c.embeddingScale;
  for (uint32_t layer = 0; layer < c.blockCount; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".", n = std::to_string(layer) + ": ";
    const TensorRef attnNorm = g.tensor(p + "attn_norm.weight", d, 0);
    const TensorRef wq = g.tensor(p + "attn_q.weight", d, qDim), wk = g.tensor(p + "attn_k.weight", d, kvDim),
                    wv = g.tensor(p + "attn_v.weight", d, kvDim), wo = g.tensor(p + "attn_output.weight", qDim, d);
    const TensorRef qNorm = g.tensor(p + "attn_q_norm.weight", c.headDim, 0),
                    kNorm = g.tensor(p + "attn_k_norm.weight", c.headDim, 0);
    const TensorRef postAttnNorm = g.tensor(p + "post_attention_norm.weight", d, 0);
    const TensorRef ffnNorm = g.tensor(p + "ffn_norm.weight", d, 0);
    const TensorRef gate = g.tensor(p + "ffn_gate.weight", d, f), up = g.tensor(p + "ffn_up.weight", d, f),
                    down = g.tensor(p + "ffn_down.weight", f, d);
    const TensorRef postFfnNorm = g.tensor(p + "post_ffw_norm.weight", d, 0);

    g.rmsNorm(n + "attention norm", layer, Activation::Hidden, Activation::Normed, attnNorm, d);
    g.project(n + "attn_q + attn_k + attn_v", layer, Activation::Normed, d,
              {{n + "attn_q", wq, 0, {}, Activation::Q, qDim},
               {n + "attn_k", wk, 0, {}, Activation::K, kvDim},
               {n + "attn_v", wv, 0, {}, Activation::V, kvDim}});
    g.rmsNorm(n + "Q head norms", layer, Activation::Q, Activation::Q, qNorm, c.headDim, c.headCount);
    g.rmsNorm(n + "K head norms", layer, Activation::K, Activation::K, kNorm, c.headDim, c.headCountKv);
    g.op(OpKind::Rope, n + "RoPE of Q and K", layer);
    g.op(OpKind::KvStore, n + "KV write", layer);
    GraphOp& attention =
        g.op(OpKind::Attention, n + (isWindowedLayer(c, layer) ? "windowed attention" : "attention"), layer);
    attention.out = Activation::Attended;
    attention.window = isWindowedLayer(c, layer) ? c.slidingWindow : 0;
    g.project(n + "attn_output", layer, Activation::Attended, qDim,
              {{n + "attn_output", wo, 0, {}, Activation::Branch, d}});
    g.rmsNorm(n + "post-attention norm", layer, Activation::Branch, Activation::Branch, postAttnNorm, d);
    g.addResidual(n + "attention residual", layer, Activation::Branch, d);
    g.rmsNorm(n + "FFN norm", layer, Activation::Hidden, Activation::Normed, ffnNorm, d);
    g.project(n + "ffn_gate + ffn_up", layer, Activation::Normed, d,
              {{n + "ffn_gate", gate, 0, {}, Activation::Gate, f}, {n + "ffn_up", up, 0, {}, Activation::Up, f}});
    GraphOp& geglu = g.op(OpKind::GeGlu, n + "GeGLU", layer);
    geglu.in = Activation::Up;
    geglu.out = Activation::Gate;
    geglu.width = f;
    g.project(n + "ffn_down", layer, Activation::Gate, f, {{n + "ffn_down", down, 0, {}, Activation::Branch, d}});
    g.rmsNorm(n + "post-FFN norm", layer, Activation::Branch, Activation::Branch, postFfnNorm, d);
    g.addResidual(n + "FFN residual", layer, Activation::Branch, d);
  }
  g.outputHead(outputNorm, output, d);
  return std::move(g.graph());
}

}  // namespace md
