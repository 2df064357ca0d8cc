// llama_cpp_sampler.h: llama.cpp's sampler chain on rows of logits we
// give it, for the sampler benchmark's comparison column. The library is
// someone else's build (node-llama-cpp's prebuilt libllama), loaded at run
// time; nothing of it is linked, so the package builds and runs without it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace md::bench {

// One sampling configuration as llama.cpp's chain: penalties, top-k,
// top-p, min-p, temperature, then the draw (common_sampler's order), each
// stage only when it is on; temperature 0 is llama.cpp's greedy sampler.
struct LlamaChainConfig {
  float temperature = 0;
  int32_t topK = 0;  // 0: off
  float topP = 1;    // 1: off
  float minP = 0;    // 0: off
  float repeatPenalty = 1, frequencyPenalty = 0, presencePenalty = 0;
  int32_t lastTokens = 0;  // the penalties' window; 0: no penalties
  uint32_t seed = 0;
};

struct LlamaSamplerTimes {
  std::vector<double> microseconds;  // per call: the row into llama_token_data, then the chain
  std::vector<int32_t> tokens;       // what each call selected
};

class LlamaCppSampler {
 public:
  // Loads libllama from `libraryPath`; throws std::runtime_error naming the
  // file and what is missing (dlerror's reason, or the symbol).
  explicit LlamaCppSampler(const std::string& libraryPath);
  ~LlamaCppSampler();

  // `iterations` calls, call i on row i % rowCount of `rows` (rowCount rows
  // of `vocab` floats), after `warmup` untimed calls. The chain sees
  // `history` as its accepted tokens (fixed, as the other backends' calls
  // see the same history each time).
  LlamaSamplerTimes time(const float* rows, uint32_t rowCount, uint32_t vocab, const LlamaChainConfig& config,
                         const std::vector<int32_t>& history, uint32_t iterations, uint32_t warmup);

 private:
  struct Api;
  std::unique_ptr<Api> api_;
};

}  // namespace md::bench
