// sampler_bench.cpp: the CPU sampler without Node in the way, for profiling.
//   md_sampler_bench [vocab] [config 0-3] [shape lm|flat] [iterations] [f16|f32]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "cpu_sampler.h"
#include "float16.h"

int main(int argc, char** argv) {
  uint32_t vocab = argc > 1 ? std::atoi(argv[1]) : 128256;
  int config = argc > 2 ? std::atoi(argv[2]) : 0;
  bool flat = argc > 3 && std::strcmp(argv[3], "flat") == 0;
  int iterations = argc > 4 ? std::atoi(argv[4]) : 500;
  bool f32 = argc > 5 && std::strcmp(argv[5], "f32") == 0;

  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 2);
  std::vector<uint16_t> row(vocab);
  for (auto& h : row) h = md::halfFromFloat(normal(rng));
  if (!flat)
    for (int j = 0; j < 8; ++j) row[rng() % vocab] = md::halfFromFloat(12 + 6 * (rng() % 1000) / 1000.0f);

  std::vector<uint32_t> history(64);
  for (int i = 0; i < 64; ++i) history[i] = (i * 7919) % 1000;
  md::SamplingInputs in{};
  md_sampling_params& p = in.params;
  p = md::greedySamplingParams(vocab);
  p.seed = 7;
  if (config == 1) {
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.1f;
    p.history_count = 64;
    p.history_window = 64;
  }
  if (config == 2) {
    p.temperature = 0.8f;
    p.top_p = 0.9f;
  }
  if (config == 3) {
    p.temperature = 0.8f;
  }
  in.history = history.data();

  md::CpuSampler sampler;
  md::LogitsRow r{row.data(), md::LogitsFormat::Float16, vocab};
  std::vector<float> floats(vocab);
  for (uint32_t i = 0; i < vocab; ++i) floats[i] = md::halfToFloat(row[i]);
  if (f32) r = {floats.data(), md::LogitsFormat::Float32, vocab};
  std::vector<double> us;
  uint64_t sink = 0;
  for (int i = 0; i < iterations; ++i) {
    p.position = i;
    auto t0 = std::chrono::steady_clock::now();
    sink += sampler.sample(r, in);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("V=%u config=%d %s %s: median %.1f us (sink %llu)\n", vocab, config, flat ? "flat" : "lm",
              f32 ? "f32" : "f16", us[us.size() / 2], (unsigned long long)sink);
}
