// transformer.h: a model's forward pass on the CPU: the executor of its
// forward graph (graph/forward_graph.h).
//
// A Transformer holds the weights (views into the mapped file) and the
// thread pool; a TransformerState is one sequence: its KV cache, the
// number of positions it holds, and its scratch. evaluate() runs a batch of
// tokens at positions start .. start + count - 1 (start may go back: the
// positions from start on are forgotten first) and writes the logits of
// the last one.
#pragma once
#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <vector>

#include "../quant/dot.h"
#include "../thread_pool.h"
#include "cache_shift.h"
#include "head_pick.h"
#include "matmul.h"
#include "model_config.h"
#include "moe_ffn.h"
#include "weights.h"

namespace md {

class TransformerState;

// One row of a batch: a token of `state` at `position` (positions from it
// on are forgotten first, as evaluate()'s start).
struct SequenceStep {
  TransformerState* state = nullptr;
  uint32_t token = 0;
  uint32_t position = 0;
};

class TransformerState {
 public:
  // contextSize positions of KV cache; batches of at most maxBatch tokens
  // (longer prompts are evaluated in several). cacheType: the cache's
  // tensor type, as llama.cpp's type_k and type_v: F16 (its default), F32,
  // or Q8_0 (heads must be whole blocks); std::invalid_argument otherwise.
  TransformerState(const ModelConfig& config, uint32_t contextSize, uint32_t maxBatch,
                   TensorType cacheType = TensorType::F16);

  uint32_t contextSize() const { return contextSize_; }
  uint32_t length() const { return length_; }
  TensorType cacheType() const { return cacheType_; }
  size_t kvCacheBytes() const { return 2 * cacheBytes_; }

 private:
  friend class Transformer;
  // Scratch for `batch` rows whose attention reads up to `context` positions.
  void ensureScratch(const ModelConfig& c, int64_t batch, int threads, uint32_t context);

  uint32_t contextSize_, maxBatch_, length_ = 0;
  TensorType cacheType_;
  size_t cacheRowBytes_;  // one position's headCountKv * headDim values in cacheType_
  // Per layer, per position, a row of cacheType_. Left uninitialised (a
  // position is written before it is read): allocating costs no time, where
  // zeroing a long context's cache held the calling thread for seconds.
  size_t cacheBytes_ = 0;
  std::unique_ptr<uint8_t[]> keys_, values_;
  float* activation(Activation a) { return activations_[int(a)].data(); }
  // Scratch for a batch: the graph's activations, one projection output
  // (before a residual add), RoPE angles.
  std::vector<float> activations_[kActivationCount];
  std::vector<float> proj_, cos_, sin_;
  std::vector<float> cosLocal_, sinLocal_;  // the windowed layers' angles, when their RoPE base differs
  // Per thread: attention scores, the query in the cache's partner type,
  // one head's values as floats (the F32 and Q8_0 caches).
  std::vector<float> scores_, valueRow_;
  std::vector<uint8_t> query_;
  ActivationRows rows_;
  MoeScratch moe_;                   // the mixture-of-experts FFN's
  std::vector<SequenceStep> steps_;  // a batch's rows: this state's, or several sequences' (evaluateSequences)
};

class Transformer {
 public:
  Transformer(const ModelConfig& config, ModelWeights weights, int threads, const DotTable& dots);

  const ModelConfig& config() const { return config_; }
  int threads() const { return pool_.size(); }
  const char* isa() const { return dots_.isa; }
  const DotTable& dots() const { return dots_; }

  // The matrices the tiles alone read, repacked for them where the dot
  // table has their tiles (repack_weights.h); `released` gets each
  // source's bytes. Not while a forward pass runs. Returns the bytes copied.
  uint64_t repackWeights(const std::function<void(const uint8_t*, size_t)>& released);
  // The bytes repackWeights() copied.
  uint64_t repackedBytes() const { return repackedBytes_.load(); }

  // Throws std::out_of_range naming the argument (tokens, start, count,
  // rows) before changing the state when the batch does not fit or a token
  // is not in the vocabulary. logits: rows x vocabSize floats, the logits
  // after each of the last `rows` tokens (speculative verification reads
  // one row per draft token); each row is the same bits as evaluating up to
  // its token alone, for batches below the matrix units' 16 tokens and a
  // BLAS library's 32 (dot.h).
  void evaluate(TransformerState& state, const uint32_t* tokens, int64_t count, int64_t start, float* logits,
                int64_t rows = 1);

  // evaluate() of the tokens, then FlashSampling in place of the LM head:
  // the token after the last one as `pick` draws it from the logits
  // evaluate() would write (head_pick.h), MD_NO_TOKEN when every logit is
  // -inf; no logits are written. The same errors as evaluate().
  uint32_t evaluateAndPick(TransformerState& state, const uint32_t* tokens, int64_t count, int64_t start,
                           const HeadPick& pick);

  // One token of each of several sequences in one forward pass (many
  // users at once): the projections read the weights once for every row,
  // each row's RoPE, KV store and attention are its own sequence's. logits:
  // steps.size() x vocabSize floats, row i the logits after steps[i]'s
  // token: the bits evaluate() gives that token alone, for batches below
  // the matrix units' 16 rows. Throws std::out_of_range naming the step
  // before changing any state: a sequence twice, a position past its
  // sequence's end or context, a token not in the vocabulary.
  void evaluateSequences(const std::vector<SequenceStep>& steps, float* logits);

  // evaluate() up to the LM head: `hidden` gets the last `rows` tokens'
  // hidden states after the output norm (rows x embeddingLength), what
  // llama.cpp returns as a decoder model's embeddings. The same errors.
  void embed(TransformerState& state, const uint32_t* tokens, int64_t count, int64_t start, float* hidden,
             int64_t rows = 1);

  // Context shift (cache_shift.h): forgets positions keep .. keep +
  // discard - 1 of the state, moves the later ones down with their keys
  // rotated, and shortens it by discard. std::out_of_range naming the
  // field, the state unchanged, when they do not fit its length.
  void shift(TransformerState& state, uint32_t keep, uint32_t discard);
  // The same on caches laid out as a state's, held elsewhere (the GPU
  // tables' shared buffers): one KvCacheLayer per layer, rows of rowBytes.
  void shiftCache(const std::vector<KvCacheLayer>& layers, TensorType cacheType, const KvShift& shift,
                  uint32_t contextSize);

 private:
  // Where the last batch's LM head goes: `logits` (rows x vocab), or with
  // `pick` the token into *picked.
  struct HeadOutput {
    float* logits = nullptr;
    const HeadPick* pick = nullptr;
    uint32_t* picked = nullptr;
    float* hidden = nullptr;  // set: the output norm's rows go here, and the LM head is skipped
  };
  void forward(TransformerState& s, const uint32_t* tokens, int64_t count, int64_t start, int64_t rows,
               HeadOutput head);
  // The batch's rows (scratch.steps_: a token, its sequence and position
  // each), in `scratch`'s activations; rows from `firstRow` on get their
  // logits (or the pick).
  void evaluateBatch(TransformerState& scratch, HeadOutput head, int64_t firstRow);
  template <class Fn>
  void perRow(int64_t rows, const Fn& fn);
  void project(TransformerState& s, const GraphOp& op, int64_t count);
  uint32_t pickFromHead(TransformerState& s, const TensorView& head, const HeadPick& pick);
  void storeKv(TransformerState& scratch, uint32_t layer);
  void attention(TransformerState& scratch, uint32_t layer, uint32_t window);

  ModelConfig config_;
  ModelWeights weights_;
  ThreadPool pool_;
  const DotTable& dots_;
  std::atomic<uint64_t> repackedBytes_{0};
};

}  // namespace md
