// sampler_fuzz.cpp: libFuzzer target for the C++ sampler, built with
// AddressSanitizer and UndefinedBehaviorSanitizer (scripts/fuzz-native.sh).
//
// The input bytes are read as one sampling step, any bytes at all: raw
// md_sampling_params (every float and count as the fuzzer makes them), the
// row format, the logits, the history and the bias list. What
// checkSamplingInputs refuses must be refused without a fault; what it
// accepts is sampled by the optimised sampler and by the plain reference
// sampler (native/tests/reference_sampler.h), which must agree: a crash,
// a sanitizer report or a disagreement stops the fuzzer with the input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cpu_sampler.h"
#include "float16.h"
#include "reference_sampler.h"

namespace {

// Takes bytes from the front of the input; zeros once it runs out.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <class T>
  T take() {
    T value{};
    const size_t n = std::min(sizeof(T), size_ - at_);
    std::memcpy(&value, data_ + at_, n);
    at_ += n;
    return value;
  }
  size_t left() const { return size_ - at_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  md_sampling_params p = in.take<md_sampling_params>();
  const bool half = in.take<uint8_t>() & 1;
  // Sizes small enough to run thousands of cases a second; the counts are
  // the fuzzer's, checked against them as the addon checks user input.
  const uint32_t vocab = 1 + in.take<uint16_t>() % 9000;  // past 4096: top-p's heavy-levels path
  const uint32_t history = in.take<uint8_t>() % 64;
  const uint32_t bias = in.take<uint8_t>() % 16;
  p.vocab_size = in.take<uint8_t>() == 0 ? p.vocab_size : vocab;  // usually consistent, sometimes not
  p.history_count = history;
  p.bias_count = bias;

  reference::Case c;
  c.isHalf = half;
  std::vector<uint16_t> halves(vocab);
  std::vector<float> floats(vocab);
  for (uint32_t i = 0; i < vocab; ++i) {
    if (half) {
      halves[i] = in.take<uint16_t>();
      floats[i] = md::halfToFloat(halves[i]);
    } else {
      floats[i] = in.take<float>();
    }
  }
  std::vector<uint32_t> window(history), biasTokens(bias);
  std::vector<float> biasValues(bias);
  for (auto& t : window) t = in.take<uint16_t>() % (vocab + 8);  // a few out of the vocabulary
  for (uint32_t i = 0; i < bias; ++i) {
    biasTokens[i] = in.take<uint16_t>() % (vocab + 8);
    biasValues[i] = in.take<float>();
  }

  md::LogitsRow row{half ? static_cast<const void*>(halves.data()) : floats.data(),
                    half ? md::LogitsFormat::Float16 : md::LogitsFormat::Float32, vocab};
  md::SamplingInputs inputs{p, window.data(), biasTokens.data(), biasValues.data()};
  if (md::checkSamplingInputs(row, inputs) != nullptr) return 0;  // refused, cleanly

  static md::CpuSampler sampler;
  const uint32_t token = sampler.sample(row, inputs);
  c.values = floats;
  c.params = p;
  // The reference takes the penalty window itself: the last history_window
  // tokens of the history.
  const uint32_t kept = std::min(p.history_window, history);
  c.window.assign(window.end() - kept, window.end());
  c.biasTokens = biasTokens;
  c.biasValues = biasValues;
  const uint32_t expected = reference::sample(c);
  if (const char* dump = std::getenv("MD_FUZZ_DUMP")) {
    // The case as JSON, to replay through sample() on every backend.
    if (FILE* f = std::fopen(dump, "w")) {
      std::fprintf(f,
                   "{\"half\":%d,\"token\":%u,\"reference\":%u,\"params\":[%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%u,%u,%u,%u,%"
                   "u,%u,%u,%u],",
                   int(half), token, expected, p.temperature, p.top_p, p.min_p, p.repeat_penalty, p.frequency_penalty,
                   p.presence_penalty, p.top_k, p.seed, p.position, p.vocab_size, p.history_count, p.history_window,
                   p.bias_count, p.flags);
      std::fprintf(f, "\"logits\":[");
      for (uint32_t i = 0; i < vocab; ++i) std::fprintf(f, "%s%.9g", i ? "," : "", double(floats[i]));
      std::fprintf(f, "],\"history\":[");
      for (uint32_t i = 0; i < history; ++i) std::fprintf(f, "%s%u", i ? "," : "", window[i]);
      std::fprintf(f, "],\"bias\":[");
      for (uint32_t i = 0; i < bias; ++i)
        std::fprintf(f, "%s[%u,%.9g]", i ? "," : "", biasTokens[i], double(biasValues[i]));
      std::fprintf(f, "]}\n");
      std::fclose(f);
    }
  }
  if (token != expected) {
    std::fprintf(stderr, "sampler_fuzz: the optimised sampler gave %u, the reference %u (V=%u, half=%d)\n", token,
                 expected, vocab, int(half));
    std::abort();
  }
  return 0;
}
