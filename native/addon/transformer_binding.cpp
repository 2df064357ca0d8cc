// transformer_binding.cpp
#include "transformer_binding.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "../core/mapped_file.h"
#include "../core/quant/dot.h"
#include "../core/quant/tensor_types.h"
#include "../core/transformer/repack_weights.h"
#include "../core/transformer/head_pick.h"
#include "../core/transformer/transformer.h"
#include "addon.h"
#include "md_sampling.h"
#include "buffer_binding.h"
#include "device_promise.h"
#include "sampling_arguments.h"
#include "job_thread.h"
#include "model_arguments.h"

namespace md::addon {

struct TransformerShared {
  std::shared_ptr<MappedFile> file;  // shared with the GPU buffers that wrap it (device.mapFile(model))
  std::unique_ptr<Transformer> transformer;
  JobThread jobs;
};

struct SequenceShared {
  SequenceShared(std::shared_ptr<TransformerShared> m, uint32_t contextSize, uint32_t maxBatch, TensorType cacheType)
      : model(std::move(m)),
        state(model->transformer->config(), contextSize, maxBatch, cacheType),
        logits(std::make_shared<std::vector<float>>(model->transformer->config().vocabSize)) {}
  std::shared_ptr<TransformerShared> model;
  TransformerState state;
  // Shared with the Float32Array over it, which may outlive the sequence:
  // disposing frees the KV cache at once, the logits when JS lets go.
  std::shared_ptr<std::vector<float>> logits;
  bool busy = false;  // JavaScript thread only
};

namespace {

[[noreturn]] void typeError(Napi::Env env, const std::string& message) { throw Napi::TypeError::New(env, message); }

// Settles a forward pass's promise with its error, on the JavaScript
// thread, and frees the sequence for the next pass: a RangeError for
// arguments that do not fit (std::out_of_range), an Error otherwise.
// A forward pass reads the mapping: a file truncated since it was mapped
// would fault there (SIGBUS), so each pass first looks at the file. A
// truncation during a pass is the one case left (docs/models.md).
void checkFile(const MappedFile& file) {
  const std::string problem = file.changed();
  if (!problem.empty()) throw std::runtime_error(problem);
}

void rejectForward(DevicePromise& promise, const std::shared_ptr<SequenceShared>& sequence, const char* method,
                   const std::exception& e, bool range) {
  std::string message = std::string(method) + ": " + e.what();
  promise.settle([sequence, message, range](Napi::Env env) -> Napi::Value {
    sequence->busy = false;
    if (range) throw Napi::RangeError::New(env, message);
    throw Napi::Error::New(env, message);
  });
}

uint32_t uint32Argument(const Napi::CallbackInfo& info, size_t i, const char* method, const char* name, uint32_t min,
                        uint32_t max) {
  const double x = info[i].IsNumber() ? info[i].As<Napi::Number>().DoubleValue() : NAN;
  if (!(x >= min && x <= max && x == std::floor(x)))
    throw Napi::RangeError::New(info.Env(), std::string(method) + ": " + name + " must be an integer from " +
                                                std::to_string(min) + " to " + std::to_string(max));
  return uint32_t(x);
}

// A Float32Array over `values`, which it keeps alive (the sequence may
// write the next ones elsewhere meanwhile, or be disposed).
Napi::Float32Array floatArrayOver(Napi::Env env, const std::shared_ptr<std::vector<float>>& values) {
  auto* keep = new std::shared_ptr<std::vector<float>>(values);
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(
      env, values->data(), values->size() * sizeof(float),
      [](Napi::Env, void*, std::shared_ptr<std::vector<float>>* hint) { delete hint; }, keep);
  return Napi::Float32Array::New(env, values->size(), buffer, 0);
}

// Runs `work` (a forward pass, a shift) on the model's job thread with the
// sequence busy, after checking the file; `result` makes the promise's
// value on the JavaScript thread. std::out_of_range is a RangeError.
template <class Work, class Result>
Napi::Value runOnSequence(Napi::Env env, const std::shared_ptr<SequenceShared>& sequence, const char* method,
                          const char* resource, Work work, Result result) {
  sequence->busy = true;
  DevicePromise promise(env, resource);
  sequence->model->jobs.post([sequence, promise, method, work = std::move(work), result = std::move(result)]() mutable {
    try {
      checkFile(*sequence->model->file);
      auto value = work();
      promise.settle([sequence, value, result](Napi::Env env) -> Napi::Value {
        sequence->busy = false;
        return result(env, value);
      });
    } catch (const std::out_of_range& e) {
      rejectForward(promise, sequence, method, e, true);
    } catch (const std::exception& e) {
      rejectForward(promise, sequence, method, e, false);
    }
  });
  return promise.promise();
}

}  // namespace

Napi::Array tensorTypeTable(Napi::Env env) {
  size_t count;
  const TensorTypeInfo* types = tensorTypes(&count);
  Napi::Array table = Napi::Array::New(env, count);
  for (size_t i = 0; i < count; ++i) {
    Napi::Object t = Napi::Object::New(env);
    t.Set("id", Napi::Number::New(env, double(uint32_t(types[i].type))));
    t.Set("name", Napi::String::New(env, types[i].name));
    t.Set("blockValues", Napi::Number::New(env, types[i].blockValues));
    t.Set("blockBytes", Napi::Number::New(env, types[i].blockBytes));
    t.Set("weight", Napi::Boolean::New(env, types[i].weight));
    t.Set("kernelSuffix",
          types[i].kernelSuffix ? Napi::Value(Napi::String::New(env, types[i].kernelSuffix)) : env.Null());
    table.Set(uint32_t(i), t);
  }
  return table;
}

// ---- Transformer ----

Napi::Function TransformerHandle::define(Napi::Env env) {
  return DefineClass(env, "Transformer",
                     {
                         InstanceAccessor("fileSize", &TransformerHandle::FileSize, nullptr),
                         InstanceAccessor("threads", &TransformerHandle::Threads, nullptr),
                         InstanceAccessor("isa", &TransformerHandle::Isa, nullptr),
                         InstanceMethod("prefetch", &TransformerHandle::Prefetch),
                         InstanceMethod("repackWeights", &TransformerHandle::RepackWeights),
                         InstanceMethod("fileProblem", &TransformerHandle::FileProblem),
                         InstanceMethod("createSequence", &TransformerHandle::CreateSequence),
                         InstanceMethod("shiftCache", &TransformerHandle::ShiftCache),
                         InstanceMethod("evaluateSequences", &TransformerHandle::EvaluateSequences),
                         InstanceMethod("dispose", &TransformerHandle::Dispose),
                     });
}

TransformerHandle::TransformerHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TransformerHandle>(info) {
  Napi::Env env = info.Env();
  if (info.Length() != 5 || !info[0].IsString() || !info[4].IsString())
    typeError(env, "Transformer: expected (path, config, tensors, threads, isa)");
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  const ModelConfig config = parseConfig(info[1]);
  const std::vector<TensorEntry> tensors = parseTensors(info[2]);
  const uint32_t threads = uint32Argument(info, 3, "Transformer", "threads", 1, 256);
  const std::string isa = info[4].As<Napi::String>().Utf8Value();
  auto shared = std::make_shared<TransformerShared>();
  try {
    const DotTable& dots = isa == "auto" ? bestDotTable() : dotTableNamed(isa.c_str());
    shared->file = std::make_shared<MappedFile>(path);
    ModelWeights weights = bindWeights(config, tensors, shared->file->data(), shared->file->size());
    shared->transformer = std::make_unique<Transformer>(config, std::move(weights), int(threads), dots);
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
  shared_ = std::move(shared);
}

TransformerHandle::~TransformerHandle() = default;

std::shared_ptr<TransformerShared> TransformerHandle::live(Napi::Env env, const char* method) const {
  if (!shared_) throw Napi::Error::New(env, std::string(method) + ": the model was disposed");
  return shared_;
}

Napi::Value TransformerHandle::FileProblem(const Napi::CallbackInfo& info) {
  const std::string problem = live(info.Env(), "fileProblem")->file->changed();
  return problem.empty() ? info.Env().Undefined() : Napi::String::New(info.Env(), problem);
}

std::shared_ptr<MappedFile> TransformerHandle::mappedFileOf(Napi::Env env, Napi::Value value) {
  if (!value.IsObject()) return nullptr;
  Napi::FunctionReference& ctor = env.GetInstanceData<MetalDecodeAddon>()->transformerConstructor();
  if (!value.As<Napi::Object>().InstanceOf(ctor.Value())) return nullptr;
  return Unwrap(value.As<Napi::Object>())->live(env, "mapFile")->file;
}

Napi::Value TransformerHandle::FileSize(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(live(info.Env(), "fileSize")->file->size()));
}
Napi::Value TransformerHandle::Threads(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), live(info.Env(), "threads")->transformer->threads());
}
Napi::Value TransformerHandle::Isa(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), live(info.Env(), "isa")->transformer->isa());
}

Napi::Value TransformerHandle::Prefetch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto model = live(env, "prefetch");
  auto number = [&](size_t i, const char* name) {
    const double x = info[i].IsNumber() ? info[i].As<Napi::Number>().DoubleValue() : -1;
    if (!(x >= 0 && x <= 9007199254740991.0 && x == std::floor(x)))
      throw Napi::RangeError::New(env, std::string("prefetch: ") + name + " must be a non-negative integer");
    return uint64_t(x);
  };
  const uint64_t begin = number(0, "begin"), end = number(1, "end");
  DevicePromise promise(env, "metal-decode:prefetch");
  model->jobs.post([model, promise, begin, end]() mutable {
    const uint64_t bytes = model->file->prefetch(begin, end);
    promise.settle([bytes](Napi::Env env) { return Napi::Number::New(env, double(bytes)); });
  });
  return promise.promise();
}

// The matrices the CPU's tiles read repacked (repack_weights.h), on the
// model's thread (after the jobs posted before, such as the prefetch),
// their mapped pages let go: resolves with the bytes copied (0 where the
// kernels have no repacked tiles).
Napi::Value TransformerHandle::RepackWeights(const Napi::CallbackInfo& info) {
  auto model = live(info.Env(), "repackWeights");
  DevicePromise promise(info.Env(), "metal-decode:repackWeights");
  model->jobs.post([model, promise]() mutable {
    try {
      const uint64_t bytes =
          model->transformer->repackWeights([&](const uint8_t* p, size_t n) { model->file->release(p, n); });
      promise.settle([bytes](Napi::Env env) { return Napi::Number::New(env, double(bytes)); });
    } catch (const std::exception& e) {
      promise.reject(std::string("repackWeights: ") + e.what());
    }
  });
  return promise.promise();
}

Napi::Value TransformerHandle::CreateSequence(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto model = live(env, "createSequence");
  const uint32_t contextSize = uint32Argument(info, 0, "createSequence", "contextSize", 1, 1u << 24);
  const uint32_t maxBatch = uint32Argument(info, 1, "createSequence", "maxBatch", 1, 1u << 16);
  const uint32_t cacheType = uint32Argument(info, 2, "createSequence", "cacheType", 0, 1u << 16);
  return SequenceHandle::create(env, model, contextSize, maxBatch, TensorType(cacheType));
}

Napi::Value TransformerHandle::ShiftCache(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto model = live(env, "shiftCache");
  const ModelConfig& c = model->transformer->config();
  if (info.Length() != 6 || !info[0].IsArray() || !info[1].IsArray())
    typeError(env, "shiftCache: expected (keys: GpuBuffer[], values: GpuBuffer[], cacheType, length, keep, discard)");
  const uint32_t cacheType = uint32Argument(info, 2, "shiftCache", "cacheType", 0, 1u << 16);
  const TensorType type = TensorType(cacheType);
  if (type != TensorType::F16 && type != TensorType::F32 && type != TensorType::Q8_0)
    throw Napi::RangeError::New(
        env, "shiftCache: cacheType must be F16, F32 or Q8_0, got type " + std::to_string(cacheType));
  const KvShift shift{uint32Argument(info, 3, "shiftCache", "length", 0, 1u << 24),
                      uint32Argument(info, 4, "shiftCache", "keep", 0, 1u << 24),
                      uint32Argument(info, 5, "shiftCache", "discard", 0, 1u << 24)};
  try {
    checkKvShift(shift);
  } catch (const std::out_of_range& e) {
    throw Napi::RangeError::New(env, std::string("shiftCache: ") + e.what());
  }
  const size_t needed = size_t(shift.length) * rowBytes(tensorTypeInfo(type), uint64_t(c.headCountKv) * c.headDim);
  // The buffers are held until the job ends, so disposing one meanwhile frees nothing under it.
  std::vector<std::shared_ptr<Buffer>> held;
  std::vector<KvCacheLayer> layers;
  auto buffersOf = [&](uint32_t arg, const char* name) {
    Napi::Array array = info[arg].As<Napi::Array>();
    if (array.Length() != c.blockCount)
      throw Napi::RangeError::New(env, std::string("shiftCache: ") + name + " must hold one buffer per layer (" +
                                           std::to_string(c.blockCount) + "), got " + std::to_string(array.Length()));
    std::vector<uint8_t*> out;
    for (uint32_t i = 0; i < array.Length(); ++i) {
      BufferHandle* handle = BufferHandle::unwrap(array.Get(i));
      if (handle == nullptr || !handle->buffer())
        typeError(env, std::string("shiftCache: ") + name + "[" + std::to_string(i) + "] is not a live GpuBuffer");
      if (handle->buffer()->length() < needed)
        throw Napi::RangeError::New(env, std::string("shiftCache: ") + name + "[" + std::to_string(i) + "] holds " +
                                             std::to_string(handle->buffer()->length()) + " bytes, under the " +
                                             std::to_string(needed) + " of " + std::to_string(shift.length) +
                                             " positions");
      held.push_back(handle->buffer());
      out.push_back(static_cast<uint8_t*>(handle->buffer()->contents()));
    }
    return out;
  };
  const std::vector<uint8_t*> keys = buffersOf(0, "keys"), values = buffersOf(1, "values");
  for (size_t i = 0; i < keys.size(); ++i) layers.push_back({keys[i], values[i]});
  // The caches' positions (their length over a position's bytes): phi3's RoPE factors depend on it.
  const uint32_t contextSize =
      uint32_t(held[0]->length() / rowBytes(tensorTypeInfo(type), uint64_t(c.headCountKv) * c.headDim));
  DevicePromise promise(env, "metal-decode:shift");
  model->jobs.post(
      [model, promise, held = std::move(held), layers = std::move(layers), type, shift, contextSize]() mutable {
        try {
          checkFile(*model->file);  // RoPE factors are read from the file
          model->transformer->shiftCache(layers, type, shift, contextSize);
          promise.settle([](Napi::Env env) { return env.Undefined(); });
        } catch (const std::exception& e) {
          std::string message = std::string("shiftCache: ") + e.what();
          promise.settle([message](Napi::Env env) -> Napi::Value { throw Napi::Error::New(env, message); });
        }
      });
  return promise.promise();
}

Napi::Value TransformerHandle::EvaluateSequences(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* method = "evaluateSequences";
  auto model = live(env, method);
  if (info.Length() != 4 || !info[0].IsArray() || !info[1].IsTypedArray() || !info[2].IsTypedArray() ||
      !info[3].IsArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array ||
      info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
    typeError(env,
              "evaluateSequences: expected (sequences: TransformerSequence[], tokens: Uint32Array, positions: "
              "Uint32Array, picks: (null | [slots, biasTokens, biasValues])[])");
  Napi::Array list = info[0].As<Napi::Array>(), pickList = info[3].As<Napi::Array>();
  Napi::Uint32Array tokens = info[1].As<Napi::Uint32Array>(), positions = info[2].As<Napi::Uint32Array>();
  const uint32_t n = list.Length();
  if (n == 0 || tokens.ElementLength() != n || positions.ElementLength() != n || pickList.Length() != n)
    throw Napi::RangeError::New(env, "evaluateSequences: expected one token, position and pick per sequence, for " +
                                         std::to_string(n) + " sequences");
  const uint32_t vocab = model->transformer->config().vocabSize;
  std::vector<std::shared_ptr<SequenceShared>> sequences;
  std::vector<SequenceStep> steps;
  std::vector<HeadPick> picks(n);
  std::vector<bool> picking(n, false);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string name = "evaluateSequences: sequences[" + std::to_string(i) + "]";
    auto sequence = SequenceHandle::sharedOf(env, list.Get(i));
    if (!sequence) typeError(env, name + " is not a live sequence");
    if (sequence->model != model) typeError(env, name + " is another model's sequence");
    if (sequence->busy) throw Napi::Error::New(env, name + ": a forward pass of this sequence is still running");
    Napi::Value pick = pickList.Get(i);
    if (!pick.IsNull()) {
      Napi::Array parts = pick.IsArray() ? pick.As<Napi::Array>() : Napi::Array::New(env);
      if (parts.Length() != 3)
        typeError(
            env, "evaluateSequences: picks[" + std::to_string(i) + "] must be null or [slots, biasTokens, biasValues]");
      picks[i] = parseHeadPick(env, parts.Get(0u), parts.Get(1u), parts.Get(2u), vocab, method);
      picking[i] = true;
    }
    steps.push_back({&sequence->state, tokens[i], positions[i]});
    sequences.push_back(std::move(sequence));
  }
  std::shared_ptr<std::vector<float>> logits;
  try {
    logits = std::make_shared<std::vector<float>>(size_t(n) * vocab);
  } catch (const std::bad_alloc&) {
    throw Napi::RangeError::New(env,
                                "evaluateSequences: not enough memory for " + std::to_string(n) + " rows of logits");
  }
  for (auto& sequence : sequences) sequence->busy = true;
  DevicePromise promise(env, "metal-decode:forward");
  auto release = [sequences]() {
    for (auto& sequence : sequences) sequence->busy = false;
  };
  model->jobs.post([model, promise, sequences, steps = std::move(steps), picks = std::move(picks),
                    picking = std::move(picking), logits, vocab, release]() mutable {
    auto fail = [&](const std::exception& e, bool range) {
      std::string message = std::string("evaluateSequences: ") + e.what();
      promise.settle([release, message, range](Napi::Env env) -> Napi::Value {
        release();
        if (range) throw Napi::RangeError::New(env, message);
        throw Napi::Error::New(env, message);
      });
    };
    try {
      checkFile(*model->file);
      model->transformer->evaluateSequences(steps, logits->data());
      // Each row to its sequence's logits, or the token its pick draws from them.
      auto picked = std::make_shared<std::vector<uint32_t>>(steps.size(), MD_NO_TOKEN);
      for (size_t i = 0; i < steps.size(); ++i) {
        const float* row = logits->data() + i * vocab;
        if (picking[i])
          (*picked)[i] = pickFromLogits(picks[i], row, vocab);
        else
          std::copy(row, row + vocab, sequences[i]->logits->data());
      }
      promise.settle([release, picked](Napi::Env env) -> Napi::Value {
        release();
        Napi::Uint32Array out = Napi::Uint32Array::New(env, picked->size());
        std::copy(picked->begin(), picked->end(), out.Data());
        return out;
      });
    } catch (const std::out_of_range& e) {
      fail(e, true);
    } catch (const std::exception& e) {
      fail(e, false);
    }
  });
  return promise.promise();
}

Napi::Value TransformerHandle::Dispose(const Napi::CallbackInfo& info) {
  // Sequences and work in flight hold the model until they end.
  shared_.reset();
  return info.Env().Undefined();
}

// ---- TransformerSequence ----

Napi::Function SequenceHandle::define(Napi::Env env) {
  return DefineClass(env, "TransformerSequence",
                     {
                         InstanceAccessor("logits", &SequenceHandle::Logits, nullptr),
                         InstanceAccessor("length", &SequenceHandle::Length, nullptr),
                         InstanceAccessor("contextSize", &SequenceHandle::ContextSize, nullptr),
                         InstanceAccessor("kvCacheBytes", &SequenceHandle::KvCacheBytes, nullptr),
                         InstanceMethod("evaluate", &SequenceHandle::Evaluate),
                         InstanceMethod("evaluateAndPick", &SequenceHandle::EvaluateAndPick),
                         InstanceMethod("shift", &SequenceHandle::Shift),
                         InstanceMethod("embed", &SequenceHandle::Embed),
                         InstanceMethod("dispose", &SequenceHandle::Dispose),
                     });
}

SequenceHandle::SequenceHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SequenceHandle>(info) {}

SequenceHandle::~SequenceHandle() {
  if (shared_) Napi::MemoryManagement::AdjustExternalMemory(Env(), -int64_t(shared_->state.kvCacheBytes()));
}

Napi::Object SequenceHandle::create(Napi::Env env, std::shared_ptr<TransformerShared> model, uint32_t contextSize,
                                    uint32_t maxBatch, TensorType cacheType) {
  std::shared_ptr<SequenceShared> shared;
  try {
    shared = std::make_shared<SequenceShared>(std::move(model), contextSize, maxBatch, cacheType);
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, std::string("createSequence: ") + e.what());
  } catch (const std::bad_alloc&) {
    throw Napi::RangeError::New(
        env, "createSequence: not enough memory for a KV cache of contextSize " + std::to_string(contextSize));
  }
  Napi::Object object = env.GetInstanceData<MetalDecodeAddon>()->sequenceConstructor().New({});
  SequenceHandle* handle = Napi::ObjectWrap<SequenceHandle>::Unwrap(object);
  handle->logits_ = Napi::Persistent(floatArrayOver(env, shared->logits));
  Napi::MemoryManagement::AdjustExternalMemory(env, int64_t(shared->state.kvCacheBytes()));
  handle->shared_ = std::move(shared);
  return object;
}

std::shared_ptr<SequenceShared> SequenceHandle::sharedOf(Napi::Env env, Napi::Value value) {
  if (!value.IsObject() ||
      !value.As<Napi::Object>().InstanceOf(env.GetInstanceData<MetalDecodeAddon>()->sequenceConstructor().Value()))
    return nullptr;
  return Napi::ObjectWrap<SequenceHandle>::Unwrap(value.As<Napi::Object>())->shared_;
}

Napi::Value SequenceHandle::Logits(const Napi::CallbackInfo& info) {
  if (logits_.IsEmpty()) return info.Env().Undefined();
  return logits_.Value();
}
Napi::Value SequenceHandle::Length(const Napi::CallbackInfo& info) {
  if (!shared_) throw Napi::Error::New(info.Env(), "length: the sequence was disposed");
  return Napi::Number::New(info.Env(), shared_->state.length());
}
Napi::Value SequenceHandle::ContextSize(const Napi::CallbackInfo& info) {
  if (!shared_) throw Napi::Error::New(info.Env(), "contextSize: the sequence was disposed");
  return Napi::Number::New(info.Env(), shared_->state.contextSize());
}
Napi::Value SequenceHandle::KvCacheBytes(const Napi::CallbackInfo& info) {
  if (!shared_) throw Napi::Error::New(info.Env(), "kvCacheBytes: the sequence was disposed");
  return Napi::Number::New(info.Env(), double(shared_->state.kvCacheBytes()));
}

Napi::Value SequenceHandle::Evaluate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!shared_) throw Napi::Error::New(env, "evaluate: the sequence was disposed");
  if (shared_->busy) throw Napi::Error::New(env, "evaluate: a forward pass of this sequence is still running");
  if ((info.Length() != 2 && info.Length() != 3) || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
    typeError(env, "evaluate: expected (tokens: Uint32Array, start, rows?)");
  Napi::Uint32Array array = info[0].As<Napi::Uint32Array>();
  std::vector<uint32_t> tokens(array.Data(), array.Data() + array.ElementLength());
  const uint32_t start = uint32Argument(info, 1, "evaluate", "start", 0, 4294967295u);
  // rows > 1: the logits after each of the last `rows` tokens, in a new
  // Float32Array (speculative verification); 1: the sequence's own logits.
  const uint32_t rows = info.Length() == 3 ? uint32Argument(info, 2, "evaluate", "rows", 1, 4294967295u) : 1;
  if (rows > tokens.size())
    throw Napi::RangeError::New(
        env, "evaluate: rows must be at most the " + std::to_string(tokens.size()) + " tokens given");
  const size_t vocab = shared_->model->transformer->config().vocabSize;
  std::shared_ptr<std::vector<float>> out;
  try {
    out = rows == 1 ? shared_->logits : std::make_shared<std::vector<float>>(size_t(rows) * vocab);
  } catch (const std::bad_alloc&) {
    throw Napi::RangeError::New(env, "evaluate: not enough memory for " + std::to_string(rows) + " rows of logits");
  }
  return runOnSequence(
      env, shared_, "evaluate", "metal-decode:forward",
      [sequence = shared_, tokens = std::move(tokens), start, rows, out]() {
        sequence->model->transformer->evaluate(sequence->state, tokens.data(), int64_t(tokens.size()), start,
                                               out->data(), int64_t(rows));
        return out;
      },
      [rows](Napi::Env env, const std::shared_ptr<std::vector<float>>& values) -> Napi::Value {
        return rows == 1 ? env.Undefined() : Napi::Value(floatArrayOver(env, values));
      });
}

Napi::Value SequenceHandle::EvaluateAndPick(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!shared_) throw Napi::Error::New(env, "evaluateAndPick: the sequence was disposed");
  if (shared_->busy) throw Napi::Error::New(env, "evaluateAndPick: a forward pass of this sequence is still running");
  if (info.Length() != 5 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
    typeError(env,
              "evaluateAndPick: expected (tokens: Uint32Array, start, slots: Float64Array, biasTokens: Uint32Array, "
              "biasValues: Float32Array)");
  Napi::Uint32Array array = info[0].As<Napi::Uint32Array>();
  std::vector<uint32_t> tokens(array.Data(), array.Data() + array.ElementLength());
  const uint32_t start = uint32Argument(info, 1, "evaluateAndPick", "start", 0, 4294967295u);
  HeadPick pick = parseHeadPick(info, 2, shared_->model->transformer->config().vocabSize, "evaluateAndPick");
  return runOnSequence(
      env, shared_, "evaluateAndPick", "metal-decode:forward",
      [sequence = shared_, tokens = std::move(tokens), start, pick = std::move(pick)]() {
        return sequence->model->transformer->evaluateAndPick(sequence->state, tokens.data(), int64_t(tokens.size()),
                                                             start, pick);
      },
      [](Napi::Env env, uint32_t token) -> Napi::Value { return Napi::Number::New(env, token); });
}

Napi::Value SequenceHandle::Embed(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!shared_) throw Napi::Error::New(env, "embed: the sequence was disposed");
  if (shared_->busy) throw Napi::Error::New(env, "embed: a forward pass of this sequence is still running");
  if (info.Length() != 2 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
    typeError(env, "embed: expected (tokens: Uint32Array, rows)");
  Napi::Uint32Array array = info[0].As<Napi::Uint32Array>();
  std::vector<uint32_t> tokens(array.Data(), array.Data() + array.ElementLength());
  const uint32_t rows = uint32Argument(info, 1, "embed", "rows", 1, 4294967295u);
  if (rows > tokens.size())
    throw Napi::RangeError::New(env,
                                "embed: rows must be at most the " + std::to_string(tokens.size()) + " tokens given");
  std::shared_ptr<std::vector<float>> out;
  try {
    out = std::make_shared<std::vector<float>>(size_t(rows) * shared_->model->transformer->config().embeddingLength);
  } catch (const std::bad_alloc&) {
    throw Napi::RangeError::New(env, "embed: not enough memory for " + std::to_string(rows) + " rows");
  }
  return runOnSequence(
      env, shared_, "embed", "metal-decode:embed",
      [sequence = shared_, tokens = std::move(tokens), rows, out]() {
        sequence->model->transformer->embed(sequence->state, tokens.data(), int64_t(tokens.size()), 0, out->data(),
                                            int64_t(rows));
        return out;
      },
      [](Napi::Env env, const std::shared_ptr<std::vector<float>>& values) -> Napi::Value {
        return floatArrayOver(env, values);
      });
}

Napi::Value SequenceHandle::Shift(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!shared_) throw Napi::Error::New(env, "shift: the sequence was disposed");
  if (shared_->busy) throw Napi::Error::New(env, "shift: a forward pass of this sequence is still running");
  if (info.Length() != 2) typeError(env, "shift: expected (keep, discard)");
  const uint32_t keep = uint32Argument(info, 0, "shift", "keep", 0, 4294967295u);
  const uint32_t discard = uint32Argument(info, 1, "shift", "discard", 0, 4294967295u);
  try {
    checkKvShift({shared_->state.length(), keep, discard});
  } catch (const std::out_of_range& e) {
    throw Napi::RangeError::New(env, std::string("shift: ") + e.what());
  }
  return runOnSequence(
      env, shared_, "shift", "metal-decode:shift",
      [sequence = shared_, keep, discard]() {
        sequence->model->transformer->shift(sequence->state, keep, discard);
        return true;
      },
      [](Napi::Env env, bool) -> Napi::Value { return env.Undefined(); });
}

Napi::Value SequenceHandle::Dispose(const Napi::CallbackInfo& info) {
  if (shared_) Napi::MemoryManagement::AdjustExternalMemory(info.Env(), -int64_t(shared_->state.kvCacheBytes()));
  shared_.reset();
  logits_.Reset();
  return info.Env().Undefined();
}

}  // namespace md::addon
