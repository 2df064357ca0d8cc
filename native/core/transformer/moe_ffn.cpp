// moe_ffn.cpp
#include "moe_ffn.h"

#include <algorithm>
#include <numeric>

#include "ops.h"

namespace md {
namespace {

template <class T>
void grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// Rows [first, first + rows) of a stacked tensor: one expert's matrix.
TensorView expertRows(const TensorView& stacked, uint64_t first, uint64_t rows) {
  TensorView v = stacked;
  v.data = stacked.row(first);
  v.rows = rows;
  return v;
}

}  // namespace

void chooseExperts(const float* logits, uint32_t experts, uint32_t used, uint32_t* chosen, float* weights) {
  std::vector<float> probs;
  std::vector<uint32_t> order;
  chooseExperts(logits, experts, used, chosen, weights, probs, order);
}

void chooseExperts(const float* logits, uint32_t experts, uint32_t used, uint32_t* chosen, float* weights,
                   std::vector<float>& probs, std::vector<uint32_t>& order) {
  probs.assign(logits, logits + experts);
  softmax(probs.data(), experts);
  order.resize(experts);
  std::iota(order.begin(), order.end(), 0u);
  std::partial_sort(order.begin(), order.begin() + used, order.end(),
                    [&](uint32_t a, uint32_t b) { return probs[a] > probs[b] || (probs[a] == probs[b] && a < b); });
  float sum = 0;
  for (uint32_t j = 0; j < used; ++j) {
    chosen[j] = order[j];
    weights[j] = probs[order[j]];
    sum += weights[j];
  }
  // llama.cpp clamps the sum to float16's smallest normal before dividing.
  sum = std::max(sum, 6.103515625e-5f);
  for (uint32_t j = 0; j < used; ++j) weights[j] /= sum;
}

void moeFfn(ThreadPool& pool, const DotTable& dots, const ModelConfig& c, const MoeWeights& w, const float* normed,
            int64_t count, float* hidden, MoeScratch& s) {
  const uint32_t experts = c.expertCount, used = c.expertUsedCount, fe = c.expertFfnLength, d = c.embeddingLength;
  const size_t n = size_t(count);
  grow(s.logits, n * experts);
  grow(s.chosen, n * used);
  grow(s.weights, n * used);
  grow(s.outputs, n * used * d);
  grow(s.gathered, n * d);
  grow(s.gate, n * fe);
  grow(s.up, n * fe);
  grow(s.down, n * d);

  s.rows.reset(normed, count, d);
  matmul(pool, dots, *w.router, s.rows, s.logits.data());
  for (size_t t = 0; t < n; ++t)
    chooseExperts(s.logits.data() + t * experts, experts, used, s.chosen.data() + t * used, s.weights.data() + t * used,
                  s.probs, s.order);

  // Each expert over the tokens that chose it: their rows gathered, its
  // three matrices run once, each output row to its (token, slot).
  std::vector<size_t>& slots = s.slots;  // token * used + j, for this expert
  for (uint32_t e = 0; e < experts; ++e) {
    slots.clear();
    for (size_t i = 0; i < n * used; ++i)
      if (s.chosen[i] == e) slots.push_back(i);
    if (slots.empty()) continue;
    const int64_t m = int64_t(slots.size());
    for (int64_t r = 0; r < m; ++r)
      std::copy(normed + (slots[size_t(r)] / used) * d, normed + (slots[size_t(r)] / used + 1) * d,
                s.gathered.data() + size_t(r) * d);
    const TensorView gate = expertRows(*w.gates, uint64_t(e) * fe, fe), up = expertRows(*w.ups, uint64_t(e) * fe, fe),
                     down = expertRows(*w.downs, uint64_t(e) * d, d);
    s.rows.reset(s.gathered.data(), m, d);
    matmul(pool, dots, {MatmulJob{&gate, s.gate.data()}, MatmulJob{&up, s.up.data()}}, s.rows);
    swiglu(s.gate.data(), s.up.data(), m * fe);
    s.rows.reset(s.gate.data(), m, fe);
    matmul(pool, dots, down, s.rows, s.down.data());
    for (int64_t r = 0; r < m; ++r)
      std::copy(s.down.data() + size_t(r) * d, s.down.data() + size_t(r + 1) * d,
                s.outputs.data() + slots[size_t(r)] * d);
  }

  // Per token: the weighted outputs added in the order chosen, then the residual.
  grow(s.sum, d);
  float* sum = s.sum.data();
  for (size_t t = 0; t < n; ++t) {
    for (uint32_t j = 0; j < used; ++j) {
      const float* out = s.outputs.data() + (t * used + j) * d;
      const float weight = s.weights[t * used + j];
      for (uint32_t i = 0; i < d; ++i) sum[i] = j == 0 ? out[i] * weight : sum[i] + out[i] * weight;
    }
    addInPlace(hidden + t * d, sum, d);
  }
}

}  // namespace md
