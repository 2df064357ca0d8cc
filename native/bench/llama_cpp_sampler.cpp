// llama_cpp_sampler.cpp: loading libllama and timing its sampler chain.
#include "llama_cpp_sampler.h"

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace md::bench {
namespace {

// The part of llama.cpp's C API (llama.h) the chain needs, declared as
// llama.h declares it: the library is loaded, never linked, so its header
// is not needed to build.
struct llama_sampler;
struct llama_token_data {
  int32_t id;
  float logit;
  float p;
};
struct llama_token_data_array {
  llama_token_data* data;
  size_t size;
  int64_t selected;
  bool sorted;
};
struct llama_sampler_chain_params {
  bool no_perf;
};

}  // namespace

struct LlamaCppSampler::Api {
  void* library = nullptr;
  llama_sampler_chain_params (*chainDefaultParams)();
  llama_sampler* (*chainInit)(llama_sampler_chain_params);
  void (*chainAdd)(llama_sampler*, llama_sampler*);
  llama_sampler* (*initGreedy)();
  llama_sampler* (*initDist)(uint32_t);
  llama_sampler* (*initTopK)(int32_t);
  llama_sampler* (*initTopP)(float, size_t);
  llama_sampler* (*initMinP)(float, size_t);
  llama_sampler* (*initTemp)(float);
  llama_sampler* (*initPenalties)(int32_t, float, float, float);
  void (*accept)(llama_sampler*, int32_t);
  void (*apply)(llama_sampler*, llama_token_data_array*);
  void (*free)(llama_sampler*);
};

namespace {

template <class F>
void resolve(void* library, const std::string& path, const char* name, F& out) {
  void* symbol = dlsym(library, name);
  if (!symbol) throw std::runtime_error(path + " has no " + name + ": not a libllama with the sampler API");
  out = reinterpret_cast<F>(symbol);
}

}  // namespace

LlamaCppSampler::LlamaCppSampler(const std::string& libraryPath) : api_(std::make_unique<Api>()) {
  // Kept loaded for the life of the process: ggml registers process-wide
  // state that unloading would leave dangling.
  api_->library = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api_->library) {
    const char* why = dlerror();
    throw std::runtime_error("cannot load " + libraryPath + ": " + (why ? why : "dlopen failed"));
  }
  void* l = api_->library;
  const std::string& p = libraryPath;
  resolve(l, p, "llama_sampler_chain_default_params", api_->chainDefaultParams);
  resolve(l, p, "llama_sampler_chain_init", api_->chainInit);
  resolve(l, p, "llama_sampler_chain_add", api_->chainAdd);
  resolve(l, p, "llama_sampler_init_greedy", api_->initGreedy);
  resolve(l, p, "llama_sampler_init_dist", api_->initDist);
  resolve(l, p, "llama_sampler_init_top_k", api_->initTopK);
  resolve(l, p, "llama_sampler_init_top_p", api_->initTopP);
  resolve(l, p, "llama_sampler_init_min_p", api_->initMinP);
  resolve(l, p, "llama_sampler_init_temp", api_->initTemp);
  resolve(l, p, "llama_sampler_init_penalties", api_->initPenalties);
  resolve(l, p, "llama_sampler_accept", api_->accept);
  resolve(l, p, "llama_sampler_apply", api_->apply);
  resolve(l, p, "llama_sampler_free", api_->free);
}

LlamaCppSampler::~LlamaCppSampler() = default;

LlamaSamplerTimes LlamaCppSampler::time(const float* rows, uint32_t rowCount, uint32_t vocab, const LlamaChainConfig& c,
                                        const std::vector<int32_t>& history, uint32_t iterations, uint32_t warmup) {
  const Api& a = *api_;
  llama_sampler* chain = a.chainInit(a.chainDefaultParams());
  const bool penalties =
      c.lastTokens > 0 && (c.repeatPenalty != 1 || c.frequencyPenalty != 0 || c.presencePenalty != 0);
  if (c.temperature == 0) {
    a.chainAdd(chain, a.initGreedy());
  } else {
    if (penalties)
      a.chainAdd(chain, a.initPenalties(c.lastTokens, c.repeatPenalty, c.frequencyPenalty, c.presencePenalty));
    if (c.topK > 0) a.chainAdd(chain, a.initTopK(c.topK));
    if (c.topP < 1) a.chainAdd(chain, a.initTopP(c.topP, 1));
    if (c.minP > 0) a.chainAdd(chain, a.initMinP(c.minP, 1));
    a.chainAdd(chain, a.initTemp(c.temperature));
    a.chainAdd(chain, a.initDist(c.seed));
  }
  for (int32_t token : history) a.accept(chain, token);

  // One array reused, as common_sampler keeps one: each call refills it
  // from the row (the samplers sort and shrink it), as llama.cpp does
  // after every decode.
  std::vector<llama_token_data> cur(vocab);
  LlamaSamplerTimes out;
  out.microseconds.reserve(iterations);
  out.tokens.reserve(iterations);
  for (uint32_t i = 0; i < warmup + iterations; ++i) {
    const float* row = rows + size_t(i % rowCount) * vocab;
    const auto start = std::chrono::steady_clock::now();
    for (uint32_t t = 0; t < vocab; ++t) cur[t] = llama_token_data{int32_t(t), row[t], 0.0f};
    llama_token_data_array array{cur.data(), cur.size(), -1, false};
    a.apply(chain, &array);
    const auto end = std::chrono::steady_clock::now();
    if (i < warmup) continue;
    out.microseconds.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    const bool selected = array.selected >= 0 && size_t(array.selected) < array.size;
    out.tokens.push_back(selected ? array.data[array.selected].id : -1);
  }
  a.free(chain);
  return out;
}

}  // namespace md::bench
