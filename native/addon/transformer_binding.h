// transformer_binding.h: a GGUF transformer in JS (new addon.Transformer)
// and its sequences. The model maps the file and binds the weights in the
// constructor; forward passes run on the model's job thread and settle a
// promise; a sequence's logits are a Float32Array over native memory that
// each evaluate() overwrites (the sampler reads them without a copy).
#pragma once
#include <napi.h>

#include <memory>

#include "../core/mapped_file.h"
#include "../core/quant/tensor_types.h"

namespace md::addon {

struct TransformerShared;
struct SequenceShared;

class TransformerHandle : public Napi::ObjectWrap<TransformerHandle> {
 public:
  static Napi::Function define(Napi::Env env);
  // new Transformer(path, config, tensors, threads, isa)
  explicit TransformerHandle(const Napi::CallbackInfo& info);
  ~TransformerHandle() override;

  std::shared_ptr<TransformerShared> shared() const { return shared_; }
  // The mapped file of `value` when it is a live Transformer, else nullptr.
  static std::shared_ptr<MappedFile> mappedFileOf(Napi::Env env, Napi::Value value);

 private:
  Napi::Value FileSize(const Napi::CallbackInfo& info);
  Napi::Value RepackWeights(const Napi::CallbackInfo& info);
  Napi::Value Threads(const Napi::CallbackInfo& info);
  Napi::Value Isa(const Napi::CallbackInfo& info);
  // fileProblem() -> string | undefined: why the file no longer holds what
  // was loaded (MappedFile::changed), checked before each GPU pass.
  Napi::Value FileProblem(const Napi::CallbackInfo& info);
  // prefetch(begin, end) -> Promise<number>: pages bytes in, off the JS thread.
  Napi::Value Prefetch(const Napi::CallbackInfo& info);
  // createSequence(contextSize, maxBatch, cacheType) -> TransformerSequence;
  // cacheType: the KV cache's GGUF tensor type id (F16, F32 or Q8_0)
  Napi::Value CreateSequence(const Napi::CallbackInfo& info);
  // shiftCache(keys, values, cacheType, length, keep, discard) ->
  // Promise<void>: the context shift of a GPU table's KV cache (one shared
  // buffer per layer for keys and values), on the model's job thread.
  Napi::Value ShiftCache(const Napi::CallbackInfo& info);
  // evaluateSequences(sequences, tokens, positions, picks) -> Promise<Uint32Array>:
  // one token of each sequence (of this model) in one forward pass
  // (Transformer::evaluateSequences). picks[i]: null, and sequence i's
  // logits are written as evaluate() writes them; or [slots, biasTokens,
  // biasValues], and the token the fused head would pick is out[i], the
  // logits left as they were. RangeError naming the step that does not fit.
  Napi::Value EvaluateSequences(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);

  std::shared_ptr<TransformerShared> live(Napi::Env env, const char* method) const;

  std::shared_ptr<TransformerShared> shared_;
};

class SequenceHandle : public Napi::ObjectWrap<SequenceHandle> {
 public:
  static Napi::Function define(Napi::Env env);
  explicit SequenceHandle(const Napi::CallbackInfo& info);
  ~SequenceHandle() override;
  static Napi::Object create(Napi::Env env, std::shared_ptr<TransformerShared> model, uint32_t contextSize,
                             uint32_t maxBatch, TensorType cacheType);
  // The sequence `value` holds, or nullptr when it is not a live TransformerSequence.
  static std::shared_ptr<SequenceShared> sharedOf(Napi::Env env, Napi::Value value);

 private:
  Napi::Value Logits(const Napi::CallbackInfo& info);
  Napi::Value Length(const Napi::CallbackInfo& info);
  Napi::Value ContextSize(const Napi::CallbackInfo& info);
  Napi::Value KvCacheBytes(const Napi::CallbackInfo& info);
  // evaluate(tokens: Uint32Array, start) -> Promise<void>: RangeError
  // naming the argument for tokens or positions that do not fit.
  Napi::Value Evaluate(const Napi::CallbackInfo& info);
  // evaluateAndPick(tokens, start, slots, biasTokens, biasValues) ->
  // Promise<number>: evaluate(), then the token the fused LM head picks
  // with those options (temperature and bias only; noToken when every
  // logit is -inf), the logits left as they were.
  Napi::Value EvaluateAndPick(const Napi::CallbackInfo& info);
  // shift(keep, discard) -> Promise<void>: the context shift of
  // transformer/cache_shift.h; a RangeError naming the field when
  // keep + discard is over the positions held.
  Napi::Value Shift(const Napi::CallbackInfo& info);
  // embed(tokens, rows) -> Promise<Float32Array>: the tokens evaluated from
  // position 0, and the last `rows` hidden states after the output norm
  // (rows x embeddingLength): the embeddings llama.cpp gives.
  Napi::Value Embed(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);

  std::shared_ptr<SequenceShared> shared_;
  Napi::Reference<Napi::Float32Array> logits_;
};

// addon.tensorTypes: [{ id, name, blockValues, blockBytes, weight }]
Napi::Array tensorTypeTable(Napi::Env env);

}  // namespace md::addon
