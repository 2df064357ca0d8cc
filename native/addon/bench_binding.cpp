// bench_binding.cpp: timeLlamaCppSampler, llama.cpp's sampler chain timed
// off the event loop for `metal-decode bench sampler`'s comparison column.
#include <cmath>
#include <string>

#include "../bench/llama_cpp_sampler.h"
#include "addon.h"

namespace md::addon {
namespace {

class LlamaSamplerWorker : public Napi::AsyncWorker {
 public:
  LlamaSamplerWorker(Napi::Env env, std::string library, std::vector<float> rows, uint32_t rowCount, uint32_t vocab,
                     bench::LlamaChainConfig config, std::vector<int32_t> history, uint32_t iterations, uint32_t warmup)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        library_(std::move(library)),
        rows_(std::move(rows)),
        rowCount_(rowCount),
        vocab_(vocab),
        config_(config),
        history_(std::move(history)),
        iterations_(iterations),
        warmup_(warmup) {}

  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      bench::LlamaCppSampler sampler(library_);
      times_ = sampler.time(rows_.data(), rowCount_, vocab_, config_, history_, iterations_, warmup_);
    } catch (const std::exception& e) {
      SetError(std::string("timeLlamaCppSampler: ") + e.what());
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    auto microseconds = Napi::Float64Array::New(env, times_.microseconds.size());
    auto tokens = Napi::Int32Array::New(env, times_.tokens.size());
    for (size_t i = 0; i < times_.microseconds.size(); ++i) microseconds[i] = times_.microseconds[i];
    for (size_t i = 0; i < times_.tokens.size(); ++i) tokens[i] = times_.tokens[i];
    Napi::Object out = Napi::Object::New(env);
    out.Set("microseconds", microseconds);
    out.Set("tokens", tokens);
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::string library_;
  std::vector<float> rows_;
  uint32_t rowCount_, vocab_;
  bench::LlamaChainConfig config_;
  std::vector<int32_t> history_;
  uint32_t iterations_, warmup_;
  bench::LlamaSamplerTimes times_;
};

uint32_t countArgument(const Napi::Env& env, const Napi::Value& v, const char* name, uint32_t min) {
  const double x = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
  if (!(x >= min && x <= 1e7 && x == std::floor(x)))
    throw Napi::RangeError::New(env, std::string("timeLlamaCppSampler: ") + name + " must be an integer from " +
                                         std::to_string(min) + " to 10000000");
  return uint32_t(x);
}

float numberField(const Napi::Env& env, const Napi::Object& o, const char* name) {
  Napi::Value v = o.Get(name);
  if (!v.IsNumber() || !std::isfinite(v.As<Napi::Number>().DoubleValue()))
    throw Napi::TypeError::New(env, std::string("timeLlamaCppSampler: config.") + name + " must be a finite number");
  return v.As<Napi::Number>().FloatValue();
}

}  // namespace

Napi::Value MetalDecodeAddon::TimeLlamaCppSampler(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 7 || !info[0].IsString() || !info[1].IsTypedArray() ||
      info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array || !info[3].IsObject() ||
      !info[4].IsTypedArray() || info[4].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    throw Napi::TypeError::New(
        env,
        "timeLlamaCppSampler(libraryPath: string, rows: Float32Array, vocab: number, config: object, "
        "history: Int32Array, iterations: number, warmup: number)");
  const uint32_t vocab = countArgument(env, info[2], "vocab", 1);
  Napi::Float32Array rows = info[1].As<Napi::Float32Array>();
  if (rows.ElementLength() == 0 || rows.ElementLength() % vocab != 0)
    throw Napi::RangeError::New(
        env, "timeLlamaCppSampler: rows must hold a whole number of rows of vocab floats, at least one");
  Napi::Object c = info[3].As<Napi::Object>();
  bench::LlamaChainConfig config;
  config.temperature = numberField(env, c, "temperature");
  config.topK = int32_t(numberField(env, c, "topK"));
  config.topP = numberField(env, c, "topP");
  config.minP = numberField(env, c, "minP");
  config.repeatPenalty = numberField(env, c, "repeatPenalty");
  config.frequencyPenalty = numberField(env, c, "frequencyPenalty");
  config.presencePenalty = numberField(env, c, "presencePenalty");
  config.lastTokens = int32_t(numberField(env, c, "lastTokens"));
  config.seed = uint32_t(numberField(env, c, "seed"));
  Napi::Int32Array history = info[4].As<Napi::Int32Array>();
  auto* worker = new LlamaSamplerWorker(
      env, info[0].As<Napi::String>().Utf8Value(), std::vector<float>(rows.Data(), rows.Data() + rows.ElementLength()),
      uint32_t(rows.ElementLength() / vocab), vocab, config,
      std::vector<int32_t>(history.Data(), history.Data() + history.ElementLength()),
      countArgument(env, info[5], "iterations", 1), countArgument(env, info[6], "warmup", 0));
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

}  // namespace md::addon
