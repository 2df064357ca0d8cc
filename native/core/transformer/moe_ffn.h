// moe_ffn.h: a mixture-of-experts feed-forward (qwen3moe) on the CPU, as
// llama.cpp's build_moe_ffn computes it: router logits, their softmax, the
// top k experts by probability, their probabilities normalised to sum 1,
// each chosen expert's SwiGLU output times its weight, added in the order
// the experts were chosen. Only the chosen experts' rows are read. A batch
// is grouped by expert (llama.cpp's mul_mat_id): each expert's matrices run
// once over the tokens that chose it.
#pragma once
#include <cstdint>
#include <vector>

#include "../quant/dot.h"
#include "../thread_pool.h"
#include "matmul.h"
#include "model_config.h"
#include "weights.h"

namespace md {

struct MoeWeights {
  const TensorView* router;  // expertCount rows
  const TensorView* gates;   // expertCount x expertFfnLength rows
  const TensorView* ups;
  const TensorView* downs;  // expertCount x embeddingLength rows
};

// Scratch, grown on first use and kept by the sequence's state.
struct MoeScratch {
  std::vector<float> logits, gathered, gate, up, down, outputs, weights, probs, sum;
  std::vector<uint32_t> chosen, order;
  std::vector<size_t> slots;
  ActivationRows rows;
};

// The router's choice for one token: `used` experts by descending
// probability (ties to the lower index) and their weights.
void chooseExperts(const float* logits, uint32_t experts, uint32_t used, uint32_t* chosen, float* weights);
// The same with the softmax's and the sort's scratch given (no allocation per token).
void chooseExperts(const float* logits, uint32_t experts, uint32_t used, uint32_t* chosen, float* weights,
                   std::vector<float>& probs, std::vector<uint32_t>& order);

// hidden[t] += the mixture for normed[t], for count tokens of `width` values.
void moeFfn(ThreadPool& pool, const DotTable& dots, const ModelConfig& c, const MoeWeights& w, const float* normed,
            int64_t count, float* hidden, MoeScratch& s);

}  // namespace md
