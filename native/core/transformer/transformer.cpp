// transformer.cpp: the op list of the forward pass. Per layer:
//   xn = rmsNorm(x) * attn_norm;  q, k, v = Wq xn (+bq), Wk xn (+bk), Wv xn (+bv)
//   [qwen3: rmsNorm each head of q and k * q_norm, k_norm]; RoPE q and k
//   K, V cache[position] = k, v in the cache's type (float16 by default)
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

TransformerState::TransformerState(const ModelConfig& c, uint32_t contextSize, uint32_t maxBatch, TensorType cacheType)
    : contextSize_(contextSize), maxBatch_(std::max<uint32_t>(1, maxBatch)), cacheType_(cacheType) {
  if (contextSize == 0) throw std::out_of_range("contextSize: must be positive, got 0");
  if (cacheType != TensorType::F16 && cacheType != TensorType::F32 && cacheType != TensorType::Q8_0)
    throw std::invalid_argument("kvCacheType: expected F16, F32 or Q8_0, got type " + std::to_string(uint32_t(cacheType)));
  // A quantized cache stores each head as whole blocks (llama.cpp's cache views need the same).
  const TensorTypeInfo& info = tensorTypeInfo(cacheType);
  if (c.headDim % info.blockValues != 0)
    throw std::invalid_argument(std::string("kvCacheType: ") + info.name + " needs a head dimension that is a multiple of " +
                                std::to_string(info.blockValues) + ", and this model's is " + std::to_string(c.headDim));
  cacheRowBytes_ = rowBytes(info, uint64_t(c.headCountKv) * c.headDim);
  cacheBytes_ = size_t(c.blockCount) * contextSize * cacheRowBytes_;
  keys_.reset(new uint8_t[cacheBytes_]);
  values_.reset(new uint8_t[cacheBytes_]);
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
  grow(valueRow_, size_t(threads) * c.headDim);
  grow(query_, size_t(threads) * c.headDim * sizeof(float));  // the widest partner type
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
  const TensorType cache = s.cacheType_, queryType = activationTypeFor(cache);
  const size_t rowBytes = s.cacheRowBytes_, headBytes = rowBytes / size_t(c.headCountKv);
  const size_t layerBase = size_t(layer) * s.contextSize_ * rowBytes;
  uint8_t* keys = s.keys_.get() + layerBase;
  uint8_t* values = s.values_.get() + layerBase;

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
    const size_t row = size_t(start + t) * rowBytes;
    quantizeActivations(cache, k, keys + row, kvDim);  // F16: each value rounded; F32: copied; Q8_0: blocks of 32
    quantizeActivations(cache, s.v_.data() + t * kvDim, values + row, kvDim);
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
  // the weighted sum of values. The query is taken to the cache's partner
  // type for the dots, as llama.cpp's CPU backend does (F16: rounded to
  // float16; Q8_0: quantized in blocks of 32; F32: as it is). With an F16
  // cache the softmax weights are rounded to float16 before their products
  // with V, as llama.cpp does; the F32 and Q8_0 caches (llama.cpp's flash
  // attention path, which a quantized V needs) keep them float32.
  const float scale = 1.0f / std::sqrt(float(hd));
  const TileDot dotKeys = dots_.forType(cache);
  const size_t queryBytes = size_t(hd) * sizeof(float);
  pool_.run([&](int thread) {
    float* scores = s.scores_.data() + size_t(thread) * s.contextSize_;
    uint8_t* query = s.query_.data() + size_t(thread) * queryBytes;
    float* valueRow = s.valueRow_.data() + size_t(thread) * size_t(hd);
    int64_t begin, end;
    ThreadPool::split(count * c.headCount, thread, pool_.size(), &begin, &end);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / c.headCount, h = item % c.headCount, g = h / group;
      const int64_t positions = start + t + 1;
      quantizeActivations(queryType, s.q_.data() + t * qDim + h * hd, query, hd);
      for (int64_t j = 0; j < positions; j += kTileRows) {
        const int rows = int(std::min<int64_t>(kTileRows, positions - j));
        dotKeys(keys + size_t(j) * rowBytes + size_t(g) * headBytes, rowBytes, rows, query, 0, 1, hd, scores + j, 1);
      }
      for (int64_t j = 0; j < positions; ++j) scores[j] *= scale;
      softmax(scores, positions);
      float* out = s.attn_.data() + t * qDim + h * hd;
      std::fill(out, out + hd, 0.f);
      for (int64_t j = 0; j < positions; ++j) {
        const uint8_t* v = values + size_t(j) * rowBytes + size_t(g) * headBytes;
        if (cache == TensorType::F16) {
          const float p = halfToFloat(halfFromFloat(scores[j]));
          const uint16_t* halves = reinterpret_cast<const uint16_t*>(v);
          for (int64_t i = 0; i < hd; ++i) out[i] += p * halfToFloat(halves[i]);
        } else {
          dequantizeRow(cache, v, valueRow, hd);
          for (int64_t i = 0; i < hd; ++i) out[i] += scores[j] * valueRow[i];
        }
      }
    }
  });
}

}  // namespace md
