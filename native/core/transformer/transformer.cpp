// transformer.cpp: the CPU executor of a model's forward graph
// (graph/forward_graph.h): each op of the graph computed with the ops of
// ops.h and the matmuls of matmul.h, as llama.cpp's CPU backend computes it.
#include "transformer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "repack_weights.h"
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
    throw std::invalid_argument("kvCacheType: expected F16, F32 or Q8_0, got type " +
                                std::to_string(uint32_t(cacheType)));
  // A quantized cache stores each head as whole blocks (llama.cpp's cache views need the same).
  const TensorTypeInfo& info = tensorTypeInfo(cacheType);
  if (c.headDim % info.blockValues != 0)
    throw std::invalid_argument(std::string("kvCacheType: ") + info.name +
                                " needs a head dimension that is a multiple of " + std::to_string(info.blockValues) +
                                ", and this model's is " + std::to_string(c.headDim));
  cacheRowBytes_ = rowBytes(info, uint64_t(c.headCountKv) * c.headDim);
  cacheBytes_ = size_t(c.blockCount) * contextSize * cacheRowBytes_;
  keys_.reset(new uint8_t[cacheBytes_]);
  values_.reset(new uint8_t[cacheBytes_]);
}

void TransformerState::ensureScratch(const ModelConfig& c, int64_t batch, int threads, uint32_t context) {
  const size_t b = size_t(batch), d = c.embeddingLength, r = c.ropeDims / 2;
  for (int a = 0; a < kActivationCount; ++a) grow(activations_[a], b * activationWidth(c, Activation(a)));
  grow(proj_, b * std::max(d, size_t(1)));
  grow(cos_, b * r);
  grow(sin_, b * r);
  if (c.ropeBaseLocal > 0) {
    grow(cosLocal_, b * r);
    grow(sinLocal_, b * r);
  }
  grow(scores_, size_t(threads) * context);
  grow(valueRow_, size_t(threads) * c.headDim);
  grow(query_, size_t(threads) * c.headDim * sizeof(float));  // the widest partner type
}

Transformer::Transformer(const ModelConfig& config, ModelWeights weights, int threads, const DotTable& dots)
    : config_(config), weights_(std::move(weights)), pool_(threads), dots_(dots) {
  checkConfig(config_);
}

uint64_t Transformer::repackWeights(const std::function<void(const uint8_t*, size_t)>& released) {
  const uint64_t bytes = md::repackWeights(weights_, dots_, pool_, released);
  repackedBytes_ += bytes;
  return bytes;
}

void Transformer::evaluate(TransformerState& s, const uint32_t* tokens, int64_t count, int64_t start, float* logits,
                           int64_t rows) {
  forward(s, tokens, count, start, rows, HeadOutput{logits, nullptr, nullptr});
}

void Transformer::embed(TransformerState& s, const uint32_t* tokens, int64_t count, int64_t start, float* hidden,
                        int64_t rows) {
  HeadOutput out;
  out.hidden = hidden;
  forward(s, tokens, count, start, rows, out);
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
    throw std::out_of_range("rows: expected 1 to " + std::to_string(count) + " (the tokens given), got " +
                            std::to_string(rows));
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
    const size_t before = size_t(std::max<int64_t>(0, done + firstRow - (count - rows)));  // rows earlier batches wrote
    if (head.logits) out.logits += before * config_.vocabSize;
    if (head.hidden) out.hidden += before * config_.embeddingLength;
    s.steps_.resize(size_t(n));
    for (int64_t t = 0; t < n; ++t)
      s.steps_[size_t(t)] = SequenceStep{&s, tokens[done + t], uint32_t(start + done + t)};
    if (firstRow < n)
      evaluateBatch(s, out, firstRow);
    else
      evaluateBatch(s, HeadOutput{}, n);
    done += n;
    s.length_ = uint32_t(start + done);
  }
}

void Transformer::evaluateSequences(const std::vector<SequenceStep>& steps, float* logits) {
  if (steps.empty()) throw std::out_of_range("steps: at least one is needed, got 0");
  for (size_t i = 0; i < steps.size(); ++i) {
    const SequenceStep& step = steps[i];
    const std::string name = "steps[" + std::to_string(i) + "]";
    if (step.state == nullptr) throw std::out_of_range(name + ".state: no sequence");
    for (size_t j = 0; j < i; ++j)
      if (steps[j].state == step.state)
        throw std::out_of_range(name + ".state: the sequence of steps[" + std::to_string(j) +
                                "] too (one token per sequence in a batch)");
    if (step.position > step.state->length_)
      throw std::out_of_range(name + ".position: " + std::to_string(step.position) + " is after the sequence's end (" +
                              std::to_string(step.state->length_) + " positions)");
    if (step.position >= step.state->contextSize_)
      throw std::out_of_range(name + ".position: " + std::to_string(step.position) + " is not below contextSize " +
                              std::to_string(step.state->contextSize_));
    if (step.token >= config_.vocabSize)
      throw std::out_of_range(name + ".token: " + std::to_string(step.token) + " is not below the vocabulary size " +
                              std::to_string(config_.vocabSize));
  }
  // The first sequence's scratch holds the batch, in runs of its batch size.
  TransformerState& scratch = *steps[0].state;
  for (size_t done = 0; done < steps.size(); done += scratch.maxBatch_) {
    const size_t n = std::min<size_t>(scratch.maxBatch_, steps.size() - done);
    scratch.steps_.assign(steps.begin() + int64_t(done), steps.begin() + int64_t(done + n));
    evaluateBatch(scratch, HeadOutput{logits + done * config_.vocabSize, nullptr, nullptr}, 0);
  }
  for (const SequenceStep& step : steps) step.state->length_ = step.position + 1;
}

// Runs fn(r) for each of `rows` rows, on the pool when there are several.
template <class Fn>
void Transformer::perRow(int64_t rows, const Fn& fn) {
  if (rows == 1) return fn(0);
  pool_.run([&](int thread) {
    int64_t begin, end;
    ThreadPool::split(rows, thread, pool_.size(), &begin, &end);
    for (int64_t t = begin; t < end; ++t) fn(t);
  });
}

void Transformer::evaluateBatch(TransformerState& s, HeadOutput head, int64_t firstRow) {
  const ModelConfig& c = config_;
  const ForwardGraph& graph = weights_.graph;
  const std::vector<SequenceStep>& steps = s.steps_;
  const int64_t count = int64_t(steps.size());
  uint32_t context = 0;
  for (const SequenceStep& step : steps) context = std::max(context, step.state->contextSize_);
  s.ensureScratch(c, count, pool_.size(), context);
  const int64_t pairs = c.ropeDims / 2;
  // The RoPE angles of each row's position, for every layer's Rope op (and
  // the windowed layers' own, where their base differs), with the factors
  // its sequence's context takes.
  const RopeFrequencies global{c.ropeBase, c.ropeFreqScale}, local{c.ropeBaseLocal, 1.f};
  for (int64_t t = 0; t < count; ++t) {
    const TensorRef factorsRef = graph.ropeFactorsFor(c, steps[size_t(t)].state->contextSize_);
    const float* factors = factorsRef.present() ? floats(weights_[factorsRef]) : nullptr;
    const int64_t position = steps[size_t(t)].position;
    ropeAngles(c, global, factors, position, s.cos_.data() + t * pairs, s.sin_.data() + t * pairs);
    if (c.ropeBaseLocal > 0)
      ropeAngles(c, local, factors, position, s.cosLocal_.data() + t * pairs, s.sinLocal_.data() + t * pairs);
  }
  const int64_t wanted = count - firstRow;  // rows whose logits (or pick) are wanted; none when <= 0
  for (const GraphOp& op : graph.ops) {
    float* in = s.activation(op.in);
    float* out = s.activation(op.out);
    switch (op.kind) {
      case OpKind::Embed: {
        const TensorView& table = weights_[op.weight];
        for (int64_t t = 0; t < count; ++t) {
          float* row = out + t * op.width;
          dequantizeRow(table.type, table.row(steps[size_t(t)].token), row, op.width);
          if (op.scale != 1.f)
            for (uint32_t i = 0; i < op.width; ++i) row[i] *= op.scale;
        }
        break;
      }
      case OpKind::RmsNorm: {
        const float* weight = floats(weights_[op.weight]);
        auto normRow = [&](int64_t r) { rmsNorm(in + r * op.width, weight, out + r * op.width, op.width, c.normEps); };
        if (count == 1)
          for (int64_t r = 0; r < op.rowsPerToken; ++r) normRow(r);  // a decode step: too little to share
        else
          perRow(count * op.rowsPerToken, normRow);
        break;
      }
      case OpKind::Project: project(s, op, count); break;
      case OpKind::Rope: {
        const int64_t hd = c.headDim, qDim = int64_t(c.headCount) * hd, kvDim = int64_t(c.headCountKv) * hd;
        float* q = s.activation(Activation::Q);
        float* k = s.activation(Activation::K);
        const bool local = isWindowedLayer(c, op.layer) && c.ropeBaseLocal > 0;
        const float* allCosines = local ? s.cosLocal_.data() : s.cos_.data();
        const float* allSines = local ? s.sinLocal_.data() : s.sin_.data();
        perRow(count, [&](int64_t t) {
          const float* cosines = allCosines + t * pairs;
          const float* sines = allSines + t * pairs;
          for (uint32_t h = 0; h < c.headCount; ++h)
            applyRope(c.ropeMode, int(c.ropeDims), cosines, sines, q + t * qDim + h * hd);
          for (uint32_t h = 0; h < c.headCountKv; ++h)
            applyRope(c.ropeMode, int(c.ropeDims), cosines, sines, k + t * kvDim + h * hd);
        });
        break;
      }
      case OpKind::KvStore: storeKv(s, op.layer); break;
      case OpKind::Attention: attention(s, op.layer, op.window); break;
      case OpKind::SwiGlu: swiglu(out, in, count * op.width); break;
      case OpKind::GeGlu: geglu(out, in, count * op.width); break;
      case OpKind::AddResidual: addInPlace(out, in, count * op.width); break;
      case OpKind::MoeFfn: {
        const MoeWeights w{&weights_[op.weight], &weights_[op.projections.at(0).weight],
                           &weights_[op.projections.at(1).weight], &weights_[op.projections.at(2).weight]};
        moeFfn(pool_, dots_, c, w, in, count, out, s.moe_);
        break;
      }
      case OpKind::OutputNorm: {
        if (wanted <= 0) return;  // no logits wanted from this batch
        const float* weight = floats(weights_[op.weight]);
        float* normed = head.hidden ? head.hidden : out;
        for (int64_t t = 0; t < wanted; ++t)
          rmsNorm(in + (firstRow + t) * op.width, weight, normed + t * op.width, op.width, c.normEps);
        if (head.hidden) return;  // the embeddings: no LM head
        break;
      }
      case OpKind::LmHead:
        s.rows_.reset(in, wanted, op.width);
        if (head.pick)
          *head.picked = pickFromHead(s, weights_[op.weight], *head.pick);
        else
          matmul(pool_, dots_, weights_[op.weight], s.rows_, head.logits);
        break;
    }
  }
}

// Up to three matrices over one input in one pass of the pool; with
// accumulate, the product is added to the output (the residual) after.
void Transformer::project(TransformerState& s, const GraphOp& op, int64_t count) {
  s.rows_.reset(s.activation(op.in), count, op.width);
  // Each projection's rows of its tensor (a fused tensor's part).
  TensorView views[3];
  for (size_t i = 0; i < op.projections.size() && i < 3; ++i) {
    const Projection& p = op.projections[i];
    views[i] = weights_[p.weight].from(p.rowOffset);
    views[i].rows = p.rows;
  }
  if (op.accumulate) {
    const Projection& p = op.projections.at(0);
    matmul(pool_, dots_, views[0], s.rows_, s.proj_.data());
    addInPlace(s.activation(p.out), s.proj_.data(), count * int64_t(p.rows));
    return;
  }
  MatmulJob jobs[3];
  size_t n = 0;
  for (const Projection& p : op.projections) {
    jobs[n] = MatmulJob{&views[n], s.activation(p.out), p.bias.present() ? &weights_[p.bias] : nullptr};
    ++n;
  }
  matmul(pool_, dots_, jobs, n, s.rows_);
}

// Each thread scores its tiles of the LM head as they come (the bits
// matmul() would store), then the threads' bests meet in row order.
uint32_t Transformer::pickFromHead(TransformerState& s, const TensorView& head, const HeadPick& pick) {
  const HeadScorer scorer(pick);
  std::vector<HeadBest> bests(size_t(pool_.size()), scorer.none());
  matvecTiles(pool_, dots_, head, s.rows_, [&](int thread, int64_t first, int n, const float* values, size_t stride) {
    scorer.score(first, n, values, stride, bests[size_t(thread)]);
  });
  HeadBest best = bests[0];
  for (size_t t = 1; t < bests.size(); ++t) scorer.merge(best, bests[t]);
  return scorer.token(best);
}

// Each token's K and V rows into the layer's cache at its position, in the
// cache's type (F16: each value rounded; F32: copied; Q8_0: blocks of 32).
void Transformer::storeKv(TransformerState& s, uint32_t layer) {
  const int64_t kvDim = int64_t(config_.headCountKv) * config_.headDim;
  const float* k = s.activation(Activation::K);
  const float* v = s.activation(Activation::V);
  perRow(int64_t(s.steps_.size()), [&](int64_t t) {
    const SequenceStep& step = s.steps_[size_t(t)];
    TransformerState& owner = *step.state;
    const size_t rowBytes = owner.cacheRowBytes_;
    const size_t row = (size_t(layer) * owner.contextSize_ + step.position) * rowBytes;
    quantizeActivations(owner.cacheType_, k + t * kvDim, owner.keys_.get() + row, kvDim);
    quantizeActivations(owner.cacheType_, v + t * kvDim, owner.values_.get() + row, kvDim);
  });
}

void Transformer::attention(TransformerState& s, uint32_t layer, uint32_t window) {
  const ModelConfig& c = config_;
  const int64_t hd = c.headDim, qDim = int64_t(c.headCount) * hd;
  const int64_t group = c.headCount / c.headCountKv;
  const int64_t count = int64_t(s.steps_.size());
  // Each thread's scores: ensureScratch sized them for the batch's longest context.
  const size_t scoreStride = s.scores_.size() / size_t(pool_.size());
  const float* queries = s.activation(Activation::Q);
  float* attended = s.activation(Activation::Attended);

  // Per (token, head): scores against every earlier position, softmax, and
  // the weighted sum of values. The query is taken to the cache's partner
  // type for the dots, as llama.cpp's CPU backend does (F16: rounded to
  // float16; Q8_0: quantized in blocks of 32; F32: as it is). With an F16
  // cache the softmax weights are rounded to float16 before their products
  // with V, as llama.cpp does; the F32 and Q8_0 caches (llama.cpp's flash
  // attention path, which a quantized V needs) keep them float32.
  // A windowed layer's query at p sees p - window + 1 .. p (llama.cpp masks
  // a key when p - its position >= window). The scale is the config's
  // (gemma3's 27B) or 1 / sqrt(headDim).
  const float scale = c.attentionScale > 0 ? c.attentionScale : 1.0f / std::sqrt(float(hd));
  const size_t queryBytes = size_t(hd) * sizeof(float);
  pool_.run([&](int thread) {
    float* scores = s.scores_.data() + size_t(thread) * scoreStride;
    uint8_t* query = s.query_.data() + size_t(thread) * queryBytes;
    float* valueRow = s.valueRow_.data() + size_t(thread) * size_t(hd);
    int64_t begin, end;
    ThreadPool::split(count * c.headCount, thread, pool_.size(), &begin, &end);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / c.headCount, h = item % c.headCount, g = h / group;
      // The row's own sequence: its cache, in its type.
      const SequenceStep& step = s.steps_[size_t(t)];
      const TransformerState& owner = *step.state;
      const TensorType cache = owner.cacheType_, queryType = activationTypeFor(cache);
      const TileDot dotKeys = dots_.forType(cache);
      const size_t rowBytes = owner.cacheRowBytes_, headBytes = rowBytes / size_t(c.headCountKv);
      const size_t layerBase = size_t(layer) * owner.contextSize_ * rowBytes;
      const uint8_t* keys = owner.keys_.get() + layerBase;
      const uint8_t* values = owner.values_.get() + layerBase;
      const int64_t seen =
          int64_t(step.position) + 1;  // positions 0 .. seen - 1, the last `window` of them on a windowed layer
      const int64_t first = window > 0 && seen > int64_t(window) ? seen - int64_t(window) : 0;
      const int64_t positions = seen - first;
      quantizeActivations(queryType, queries + t * qDim + h * hd, query, hd);
      const uint8_t* keysFrom = keys + size_t(first) * rowBytes + size_t(g) * headBytes;
      for (int64_t j = 0; j < positions; j += kTileRows) {
        const int rows = int(std::min<int64_t>(kTileRows, positions - j));
        dotKeys(keysFrom + size_t(j) * rowBytes, rowBytes, rows, query, 0, 1, hd, scores + j, 1);
      }
      for (int64_t j = 0; j < positions; ++j) scores[j] *= scale;
      softmax(scores, positions);
      float* out = attended + t * qDim + h * hd;
      std::fill(out, out + hd, 0.f);
      const uint8_t* valuesFrom = values + size_t(first) * rowBytes + size_t(g) * headBytes;
      if (cache == TensorType::F16) {
        for (int64_t j = 0; j < positions; ++j) scores[j] = halfToFloat(halfFromFloat(scores[j]));
        dots_.weightedF16(valuesFrom, rowBytes, scores, positions, hd, out);
      } else if (cache == TensorType::F32) {
        dots_.weightedF32(valuesFrom, rowBytes, scores, positions, hd, out);
      } else {
        for (int64_t j = 0; j < positions; ++j) {
          dequantizeRow(cache, valuesFrom + size_t(j) * rowBytes, valueRow, hd);
          dots_.weightedF32(reinterpret_cast<const uint8_t*>(valueRow), 0, scores + j, 1, hd, out);
        }
      }
    }
  });
}

void Transformer::shift(TransformerState& s, uint32_t keep, uint32_t discard) {
  const KvShift shift{s.length_, keep, discard};
  checkKvShift(shift);
  std::vector<KvCacheLayer> layers;
  const size_t layerBytes = size_t(s.contextSize_) * s.cacheRowBytes_;
  for (uint32_t layer = 0; layer < config_.blockCount; ++layer)
    layers.push_back({s.keys_.get() + layer * layerBytes, s.values_.get() + layer * layerBytes});
  shiftCache(layers, s.cacheType_, shift, s.contextSize_);
  s.length_ -= discard;
}

void Transformer::shiftCache(const std::vector<KvCacheLayer>& layers, TensorType cacheType, const KvShift& shift,
                             uint32_t contextSize) {
  checkKvShift(shift);
  const ModelConfig& c = config_;
  if (layers.size() != c.blockCount)
    throw std::out_of_range("layers: expected " + std::to_string(c.blockCount) + " KV cache layers, got " +
                            std::to_string(layers.size()));
  const size_t cacheRowBytes = rowBytes(tensorTypeInfo(cacheType), uint64_t(c.headCountKv) * c.headDim);
  const ForwardGraph& graph = weights_.graph;
  const TensorRef factorsRef = graph.ropeFactorsFor(c, contextSize);
  const float* factors = factorsRef.present() ? floats(weights_[factorsRef]) : nullptr;
  // Each layer's keys turn at its own frequencies (a windowed layer's base may differ).
  const size_t pairs = c.ropeDims / 2;
  std::vector<float> cosines(layers.size() * pairs), sines(layers.size() * pairs);
  for (uint32_t layer = 0; layer < layers.size(); ++layer)
    ropeAngles(c, ropeFrequencies(c, layer), factors, -int64_t(shift.discard), cosines.data() + layer * pairs,
               sines.data() + layer * pairs);
  const int64_t moved = movedPositions(shift), rows = int64_t(layers.size()) * moved;
  const size_t kvDim = size_t(c.headCountKv) * c.headDim;
  pool_.run([&](int thread) {
    std::vector<float> scratch(kvDim);
    int64_t begin, end;
    ThreadPool::split(rows, thread, pool_.size(), &begin, &end);
    for (int64_t r = begin; r < end; ++r)
      rotateMovedKey(c, cacheType, cacheRowBytes, shift, layers[size_t(r / moved)], uint32_t(r % moved),
                     cosines.data() + size_t(r / moved) * pairs, sines.data() + size_t(r / moved) * pairs,
                     scratch.data());
  });
  moveShiftedRows(layers, cacheRowBytes, shift);
}

}  // namespace md
