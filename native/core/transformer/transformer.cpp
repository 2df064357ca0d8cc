// transformer.cpp: the op list of the forward pass. Per layer:
//   xn = rmsNorm(x) * attn_norm;  q, k, v = Wq xn (+bq), Wk xn (+bk), Wv xn (+bv)
//   [qwen3: rmsNorm each head of q and k * q_norm, k_norm]; RoPE q and k
//   K, V cache[position] = float16(k), float16(v)
//   attn = softmax(q . K / sqrt(headDim)) V, per head, causal, grouped
//   x += Wo attn;  xn = rmsNorm(x) * ffn_norm;  x += Wdown (silu(Wgate xn) * Wup xn)
// then logits = Woutput (rmsNorm(x) * output_norm) for the last position.
#include "transformer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "../float16.h"
#include "../quant/convert_rows.h"
#include "md_sampling.h"
#include "ops.h"

namespace md {
namespace {

const float* floats(const TensorView& v) { return v.present() ? reinterpret_cast<const float*>(v.data) : nullptr; }

template <class T>
void grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

TransformerState::TransformerState(const ModelConfig& c, uint32_t contextSize, uint32_t maxBatch)
    : contextSize_(contextSize), maxBatch_(std::max<uint32_t>(1, maxBatch)) {
  if (contextSize == 0) throw std::out_of_range("contextSize: must be positive, got 0");
  const size_t kv = size_t(c.blockCount) * contextSize * c.headCountKv * c.headDim;
  keys_.resize(kv);
  values_.resize(kv);
}

void TransformerState::ensureScratch(const ModelConfig& c, int64_t batch, int threads) {
  const size_t b = size_t(batch), d = c.embeddingLength, q = size_t(c.headCount) * c.headDim,
               kv = size_t(c.headCountKv) * c.headDim, f = c.ffnLength, r = c.ropeDims / 2;
  grow(x_, b * d);
  grow(xn_, b * d);
  grow(q_, b * q);
  grow(k_, b * kv);
  grow(v_, b * kv);
  grow(attn_, b * q);
  grow(gate_, b * f);
  grow(up_, b * f);
  grow(proj_, b * std::max(d, size_t(1)));
  grow(cos_, b * r);
  grow(sin_, b * r);
  grow(scores_, size_t(threads) * contextSize_);
  grow(queryHalf_, size_t(threads) * c.headDim);
}

Transformer::Transformer(const ModelConfig& config, ModelWeights weights, int threads, const DotTable& dots)
    : config_(config), weights_(std::move(weights)), pool_(threads), dots_(dots) {
  checkConfig(config_);
}

void Transformer::evaluate(TransformerState& s, const uint32_t* tokens, int64_t count, int64_t start, float* logits,
                           int64_t rows) {
  forward(s, tokens, count, start, rows, HeadOutput{logits, nullptr, nullptr});
}

uint32_t Transformer::evaluateAndPick(TransformerState& s, const uint32_t* tokens, int64_t count, int64_t start,
                                      const HeadPick& pick) {
  uint32_t picked = MD_NO_TOKEN;
  forward(s, tokens, count, start, 1, HeadOutput{nullptr, &pick, &picked});
  return picked;
}

void Transformer::forward(TransformerState& s, const uint32_t* tokens, int64_t count, int64_t start, int64_t rows,
                          HeadOutput head) {
  if (count < 1) throw std::out_of_range("tokens: at least one token is needed, got 0");
  if (rows < 1 || rows > count)
    throw std::out_of_range("rows: expected 1 to " + std::to_string(count) + " (the tokens given), got " + std::to_string(rows));
  if (start < 0 || start > int64_t(s.length_))
    throw std::out_of_range("start: position " + std::to_string(start) + " is after the sequence's end (" +
                            std::to_string(s.length_) + " positions)");
  if (start + count > int64_t(s.contextSize_))
    throw std::out_of_range("tokens: positions " + std::to_string(start) + " + " + std::to_string(count) +
                            " exceed contextSize " + std::to_string(s.contextSize_));
  for (int64_t i = 0; i < count; ++i)
    if (tokens[i] >= config_.vocabSize)
      throw std::out_of_range("tokens[" + std::to_string(i) + "]: " + std::to_string(tokens[i]) +
                              " is not below the vocabulary size " + std::to_string(config_.vocabSize));
  s.length_ = uint32_t(start);  // rewind: positions from start on are overwritten
  for (int64_t done = 0; done < count;) {
    const int64_t n = std::min<int64_t>(count - done, s.maxBatch_);
    // The rows of this batch among the last `rows` of the call, and where they go.
    const int64_t firstRow = std::max<int64_t>(0, count - rows - done);
    HeadOutput out = head;
    if (head.logits) out.logits += size_t(std::max<int64_t>(0, done + firstRow - (count - rows))) * config_.vocabSize;
    if (firstRow < n) evaluateBatch(s, tokens + done, n, start + done, out, firstRow);
    else evaluateBatch(s, tokens + done, n, start + done, HeadOutput{}, n);
    done += n;
    s.length_ = uint32_t(start + done);
  }
}

void Transformer::evaluateBatch(TransformerState& s, const uint32_t* tokens, int64_t count, int64_t start,
                                HeadOutput head, int64_t firstRow) {
  const ModelConfig& c = config_;
  s.ensureScratch(c, count, pool_.size());
  const int64_t d = c.embeddingLength, f = c.ffnLength, qDim = int64_t(c.headCount) * c.headDim;
  const int64_t pairs = c.ropeDims / 2;
  for (int64_t t = 0; t < count; ++t) {
    dequantizeRow(weights_.tokenEmbedding.type, weights_.tokenEmbedding.row(tokens[t]), s.x_.data() + t * d, d);
    ropeAngles(c, floats(weights_.ropeFactors), start + t, s.cos_.data() + t * pairs, s.sin_.data() + t * pairs);
  }
  auto normRows = [&](const float* weight) {
    if (count == 1) return rmsNorm(s.x_.data(), weight, s.xn_.data(), d, c.normEps);
    pool_.run([&](int thread) {
      int64_t begin, end;
      ThreadPool::split(count, thread, pool_.size(), &begin, &end);
      for (int64_t t = begin; t < end; ++t) rmsNorm(s.x_.data() + t * d, weight, s.xn_.data() + t * d, d, c.normEps);
    });
  };
  for (uint32_t layer = 0; layer < c.blockCount; ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    normRows(floats(w.attnNorm));
    s.rows_.reset(s.xn_.data(), count, d);
    matmul(pool_, dots_, {{&w.wq, s.q_.data(), &w.bq}, {&w.wk, s.k_.data(), &w.bk}, {&w.wv, s.v_.data(), &w.bv}}, s.rows_);
    attention(s, layer, count, start);
    s.rows_.reset(s.attn_.data(), count, qDim);
    matmul(pool_, dots_, w.wo, s.rows_, s.proj_.data());
    addInPlace(s.x_.data(), s.proj_.data(), count * d);

    normRows(floats(w.ffnNorm));
    s.rows_.reset(s.xn_.data(), count, d);
    matmul(pool_, dots_, {{&w.gate, s.gate_.data()}, {&w.up, s.up_.data()}}, s.rows_);
    swiglu(s.gate_.data(), s.up_.data(), count * f);
    s.rows_.reset(s.gate_.data(), count, f);
    matmul(pool_, dots_, w.down, s.rows_, s.proj_.data());
    addInPlace(s.x_.data(), s.proj_.data(), count * d);
  }
  if (firstRow >= count) return;  // no logits wanted from this batch
  const int64_t wanted = count - firstRow;
  for (int64_t t = 0; t < wanted; ++t)
    rmsNorm(s.x_.data() + (firstRow + t) * d, floats(weights_.outputNorm), s.xn_.data() + t * d, d, c.normEps);
  s.rows_.reset(s.xn_.data(), wanted, d);
  if (head.pick) *head.picked = pickFromHead(s, *head.pick);
  else matmul(pool_, dots_, weights_.output, s.rows_, head.logits);
}

// Each thread scores its tiles of the LM head as they come (the bits
// matmul() would store), then the threads' bests meet in row order.
uint32_t Transformer::pickFromHead(TransformerState& s, const HeadPick& pick) {
  const HeadScorer scorer(pick);
  std::vector<HeadBest> bests(size_t(pool_.size()), scorer.none());
  matvecTiles(pool_, dots_, weights_.output, s.rows_, [&](int thread, int64_t first, int n, const float* values, size_t stride) {
    scorer.score(first, n, values, stride, bests[size_t(thread)]);
  });
  HeadBest best = bests[0];
  for (size_t t = 1; t < bests.size(); ++t) scorer.merge(best, bests[t]);
  return scorer.token(best);
}

void Transformer::attention(TransformerState& s, uint32_t layer, int64_t count, int64_t start) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[layer];
  const int64_t hd = c.headDim, qDim = int64_t(c.headCount) * hd, kvDim = int64_t(c.headCountKv) * hd;
  const int64_t pairs = c.ropeDims / 2, group = c.headCount / c.headCountKv;
  const size_t layerBase = size_t(layer) * s.contextSize_ * size_t(kvDim);
  uint16_t* keys = s.keys_.data() + layerBase;
  uint16_t* values = s.values_.data() + layerBase;

  // Per token: Q/K norms, RoPE, and the K and V cache rows of its position.
  auto prepare = [&](int64_t t) {
    float* q = s.q_.data() + t * qDim;
    float* k = s.k_.data() + t * kvDim;
    const float* cosines = s.cos_.data() + t * pairs;
    const float* sines = s.sin_.data() + t * pairs;
    for (uint32_t h = 0; h < c.headCount; ++h) {
      if (c.qkNorm) rmsNorm(q + h * hd, floats(w.qNorm), q + h * hd, hd, c.normEps);
      applyRope(c.ropeMode, int(c.ropeDims), cosines, sines, q + h * hd);
    }
    for (uint32_t h = 0; h < c.headCountKv; ++h) {
      if (c.qkNorm) rmsNorm(k + h * hd, floats(w.kNorm), k + h * hd, hd, c.normEps);
      applyRope(c.ropeMode, int(c.ropeDims), cosines, sines, k + h * hd);
    }
    const size_t row = size_t(start + t) * size_t(kvDim);
    const float* v = s.v_.data() + t * kvDim;
    for (int64_t i = 0; i < kvDim; ++i) {
      keys[row + size_t(i)] = halfFromFloat(k[i]);
      values[row + size_t(i)] = halfFromFloat(v[i]);
    }
  };
  if (count == 1) {
    prepare(0);
  } else {
    pool_.run([&](int thread) {
      int64_t begin, end;
      ThreadPool::split(count, thread, pool_.size(), &begin, &end);
      for (int64_t t = begin; t < end; ++t) prepare(t);
    });
  }

  // Per (token, head): scores against every earlier position, softmax, and
  // the weighted sum of values. As llama.cpp does with an F16 cache, the
  // query and the softmax weights are rounded to float16 before their
  // products with K and V.
  const float scale = 1.0f / std::sqrt(float(hd));
  const TileDot dotHalf = dots_.f16;
  const size_t keyStride = size_t(kvDim) * sizeof(uint16_t);
  pool_.run([&](int thread) {
    float* scores = s.scores_.data() + size_t(thread) * s.contextSize_;
    uint16_t* qHalf = s.queryHalf_.data() + size_t(thread) * size_t(hd);
    int64_t begin, end;
    ThreadPool::split(count * c.headCount, thread, pool_.size(), &begin, &end);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / c.headCount, h = item % c.headCount, g = h / group;
      const int64_t positions = start + t + 1;
      const float* q = s.q_.data() + t * qDim + h * hd;
      for (int64_t i = 0; i < hd; ++i) qHalf[i] = halfFromFloat(q[i]);
      for (int64_t j = 0; j < positions; j += kTileRows) {
        const int rows = int(std::min<int64_t>(kTileRows, positions - j));
        dotHalf(reinterpret_cast<const uint8_t*>(keys + size_t(j) * size_t(kvDim) + size_t(g * hd)), keyStride, rows,
                reinterpret_cast<const uint8_t*>(qHalf), 0, 1, hd, scores + j, 1);
      }
      for (int64_t j = 0; j < positions; ++j) scores[j] *= scale;
      softmax(scores, positions);
      float* out = s.attn_.data() + t * qDim + h * hd;
      std::fill(out, out + hd, 0.f);
      for (int64_t j = 0; j < positions; ++j) {
        const float p = halfToFloat(halfFromFloat(scores[j]));
        const uint16_t* v = values + size_t(j) * size_t(kvDim) + size_t(g * hd);
        for (int64_t i = 0; i < hd; ++i) out[i] += p * halfToFloat(v[i]);
      }
    }
  });
}

}  // namespace md
