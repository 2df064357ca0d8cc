// kernel_sampler_test.cpp: the .metal kernels, run by the emulated device,
// against the native CPU sampler (the oracle), token for token. ctest runs
// this binary once per fiber order (MD_EMU_FIBER_ORDER).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "emulated_device.h"
#include "kernel_sampler.h"
#include "random_cases.h"

namespace {

using reference::Case;
using testing_cases::CaseRow;

md::emu::EmulatedDevice& device() {
  static md::emu::EmulatedDevice d;
  return d;
}

uint32_t onKernel(const Case& c, uint32_t threads = 0, md::RowLaunch launch = {}) {
  md::KernelSampler sampler(device(), threads, launch);
  CaseRow r(c);
  EXPECT_EQ(md::checkSamplingInputs(r.row, r.inputs), nullptr);
  return sampler.sample(r.row, 1, r.inputs).at(0);
}

uint32_t onCpu(const Case& c) {
  static md::CpuSampler cpu;
  CaseRow r(c);
  return cpu.sample(r.row, r.inputs);
}

Case rowOf(std::vector<float> values) {
  Case c;
  c.isHalf = true;
  for (float v : values) c.values.push_back(md::halfToFloat(md::halfFromFloat(v)));
  c.params = md::greedySamplingParams(uint32_t(values.size()));
  return c;
}

Case sampled(Case c, float temperature, uint32_t seed) {
  c.params.temperature = temperature;
  c.params.seed = seed;
  return c;
}

// Agreement on random float16 rows: every vocabulary shape the kernel has a
// path for (below one thread per token, not a multiple of the threadgroup,
// one token), every parameter combination. The native sampler sums top-p
// masses in double and the kernel in float32, so the spec allows a
// disagreement at a top-p boundary within 1e-5 of p * W; none occurs in
// these cases, and the test demands equality.
TEST(EmulatedSampler, AgreesWithTheNativeSamplerOnRandomRows) {
  std::mt19937 rng(77);
  int greedy = 0, greedySame = 0, drawn = 0, drawnSame = 0;
  for (int c = 0; c < 400; ++c) {
    uint32_t vocab = std::vector<uint32_t>{1, 2, 31, 100, 1000, 1023, 1025, 3000, 20000}[rng() % 9];
    Case k = testing_cases::randomCase(rng, vocab, c % 5, true);
    uint32_t cpu = onCpu(k), gpu = onKernel(k);
    bool isGreedy = k.params.temperature == 0.0f;
    (isGreedy ? greedy : drawn)++;
    (isGreedy ? greedySame : drawnSame) += cpu == gpu;
    EXPECT_EQ(gpu, cpu) << "case " << c << " V=" << vocab;
  }
  std::printf("[ agreement ] greedy %d/%d, sampled %d/%d\n", greedySame, greedy, drawnSame, drawn);
  EXPECT_GT(greedy, 0);
  EXPECT_GT(drawn, 0);
}

TEST(EmulatedSampler, VocabularyOf262144) {
  std::mt19937 rng(5);
  for (int c = 0; c < 6; ++c) {
    Case k = testing_cases::randomCase(rng, 262144, c % 5, true);
    if (c == 0) k.params.temperature = 0;
    if (c == 1) k.params.top_k = 0, k.params.top_p = 0.9f, k.params.min_p = 0;  // the histogram's worst case
    EXPECT_EQ(onKernel(k), onCpu(k)) << "case " << c;
  }
}

TEST(EmulatedSampler, VocabularyOfOne) {
  Case c = sampled(rowOf({-3}), 1.5f, 9);
  c.params.top_k = 1;
  c.params.top_p = 0.5f;
  EXPECT_EQ(onKernel(c), 0u);
}

TEST(EmulatedSampler, AllValuesEqualFollowTheNoise) {
  Case c = sampled(rowOf(std::vector<float>(3000, 0.5f)), 1.0f, 1234);
  std::set<uint32_t> tokens;
  for (uint32_t pos = 0; pos < 20; ++pos) {
    c.params.position = pos;
    uint32_t t = onKernel(c);
    EXPECT_EQ(t, onCpu(c));
    tokens.insert(t);
  }
  EXPECT_GT(tokens.size(), 15u);  // 20 draws from 3000 equal tokens
}

TEST(EmulatedSampler, HeavyTiesAtTheTopKBoundarySurvive) {
  // Values 9 (x3), 7 (x500), 5 (x rest): top-k 4 keeps all 503 tokens >= 7.
  std::vector<float> values(2000, 5.0f);
  for (int i = 0; i < 3; ++i) values[100 + i * 400] = 9;
  for (int i = 0; i < 500; ++i) values[3 + i * 3] = 7;
  Case c = sampled(rowOf(values), 50.0f, 3);  // hot: the 7s win often
  c.params.top_k = 4;
  std::set<uint32_t> tokens;
  for (uint32_t pos = 0; pos < 40; ++pos) {
    c.params.position = pos;
    uint32_t t = onKernel(c);
    EXPECT_EQ(t, onCpu(c));
    EXPECT_GE(c.values[t], 7.0f) << "token " << t << " is below the top-k boundary";
    tokens.insert(t);
  }
  EXPECT_GT(tokens.size(), 4u);  // more than k tokens are drawn: the ties survived
}

TEST(EmulatedSampler, AllMinusInfinityGivesTheSentinel) {
  Case c = sampled(rowOf({-INFINITY, NAN, -INFINITY}), 1.0f, 1);
  EXPECT_EQ(onKernel(c), MD_NO_TOKEN);
  c.params.temperature = 0;
  EXPECT_EQ(onKernel(c), MD_NO_TOKEN);
  // A -inf bias on the only finite token empties the row too.
  Case b = sampled(rowOf({-INFINITY, 2, -INFINITY}), 1.0f, 1);
  b.biasTokens = {1};
  b.biasValues = {-INFINITY};
  b.params.bias_count = 1;
  EXPECT_EQ(onKernel(b), MD_NO_TOKEN);
}

// Any multiple of 32 works: fewer threads than tokens, and (as a pipeline
// limit might impose) 1024 threads for 7 tokens.
TEST(EmulatedSampler, EveryThreadgroupSizeGivesTheSameTokens) {
  std::mt19937 rng(8);
  for (int c = 0; c < 30; ++c) {
    Case k = testing_cases::randomCase(rng, std::vector<uint32_t>{7, 500, 5000}[c % 3], c % 5, true);
    uint32_t cpu = onCpu(k);
    for (uint32_t threads : {32u, 96u, 1024u}) EXPECT_EQ(onKernel(k, threads), cpu) << "case " << c << ", " << threads;
  }
}

// The wide kernels (one row over many threadgroups) against md_sample_f16
// (one threadgroup): the same token, bit for bit, for every launch shape;
// no near-tie allowance. Rows with heavy ties and top-p boundaries are in
// the random cases (modes 0-4), and V = 20000 and 262144 make slices of
// uneven lengths, some empty (262144 over 7 threadgroups is not a whole
// number of 32-token slices; 31 tokens over 64 threadgroups leaves 63 empty).
TEST(EmulatedSampler, WideKernelsGiveTheOneThreadgroupTokenForEveryLaunch) {
  std::mt19937 rng(21);
  const md::RowLaunch narrow{false, 0};
  int compared = 0;
  for (int c = 0; c < 60; ++c) {
    uint32_t vocab = std::vector<uint32_t>{1, 31, 1000, 3000, 20000, 262144}[c % 6];
    Case k = testing_cases::randomCase(rng, vocab, c % 5, true);
    if (c % 12 == 4) k.params.top_k = 0, k.params.top_p = 0.9f, k.params.min_p = 0;  // top-p alone: every bin weighed
    const uint32_t expected = onKernel(k, 1024, narrow);
    EXPECT_EQ(onKernel(k, 32, narrow), expected) << "case " << c << ": md_sample_f16 depends on its threads";
    const std::vector<std::pair<uint32_t, uint32_t>> shapes =
        vocab > 100000 ? std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {7, 256}}
                       : std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {1, 32}, {2, 96}, {7, 1024}, {64, 32}};
    for (auto [groups, threads] : shapes) {
      EXPECT_EQ(onKernel(k, threads, md::RowLaunch{true, groups}), expected)
          << "case " << c << " V=" << vocab << ": " << groups << " threadgroups of " << threads << " threads";
      ++compared;
    }
    EXPECT_EQ(expected, onCpu(k)) << "case " << c;
  }
  EXPECT_GT(compared, 200);
}

// Every token is some slice's: the maximum placed at each slice's first and
// last token is found, greedily and at a low temperature.
TEST(EmulatedSampler, WideKernelsSeeEverySliceEdge) {
  const uint32_t vocab = 3000, groups = 7;
  const uint32_t per = ((vocab + groups - 1) / groups + 31) / 32 * 32;  // md_slice_range's slices
  for (uint32_t g = 0; g * per < vocab; ++g) {
    for (uint32_t at : {g * per, std::min(vocab, (g + 1) * per) - 1}) {
      std::vector<float> values(vocab, 0.0f);
      values[at] = 30.0f;
      Case c = rowOf(values);
      EXPECT_EQ(onKernel(c, 32, md::RowLaunch{true, groups}), at) << "greedy, slice " << g;
      c = sampled(c, 0.5f, 3);
      EXPECT_EQ(onKernel(c, 32, md::RowLaunch{true, groups}), at) << "sampled, slice " << g;
    }
  }
}

// The wide kernels' top-p walk on a row built so that the threshold falls
// inside a mass block: one token per float16 value over a wide range, so
// blocks, groups of blocks and single keys are each entered.
TEST(EmulatedSampler, WideTopPWalkEntersBlocksAndKeys) {
  std::vector<float> values;
  for (int i = 0; i < 5000; ++i) values.push_back(-8.0f + 16.0f * float(i) / 5000.0f);
  for (float p : {0.05f, 0.5f, 0.93f, 0.999f}) {
    Case c = sampled(rowOf(values), 1.0f, 7);
    c.params.top_p = p;
    for (uint32_t pos = 0; pos < 6; ++pos) {
      c.params.position = pos;
      const uint32_t expected = onKernel(c, 1024, md::RowLaunch{false, 0});
      EXPECT_EQ(expected, onCpu(c)) << "p " << p << " position " << pos;
      for (uint32_t groups : {1u, 3u, 16u}) EXPECT_EQ(onKernel(c, 64, md::RowLaunch{true, groups}), expected);
    }
  }
}

// The batched form: row r at position + r, with the r tokens before it
// appended to the history, equals sampling each row alone.
TEST(EmulatedSampler, BatchedRowsEqualOneRowAtATime) {
  std::mt19937 rng(13);
  const uint32_t vocab = 700, rows = 5;
  Case base = testing_cases::randomCase(rng, vocab, 0, true);
  base.params.temperature = 0.9f;
  base.params.repeat_penalty = 1.3f;
  base.params.frequency_penalty = 0.2f;
  base.window = {1, 2, 3, 2};
  base.params.history_count = 4;
  base.params.history_window = 5;  // the window fills up across the rows
  std::vector<uint32_t> history = base.window;
  std::vector<float> all;
  std::vector<uint32_t> expected;
  for (uint32_t r = 0; r < rows; ++r) {
    Case row = testing_cases::randomCase(rng, vocab, 1, true);
    row.params = base.params;
    row.params.position = base.params.position + r;
    row.window = history;
    row.params.history_count = uint32_t(history.size());
    expected.push_back(onCpu(row));
    all.insert(all.end(), row.values.begin(), row.values.end());
    history.push_back(expected.back());  // the "draft" token row r + 1 sees
  }
  Case batch = base;
  batch.values = all;
  batch.window = history;
  CaseRow r(batch);
  r.row.size = vocab;
  md::KernelSampler sampler(device());
  EXPECT_EQ(sampler.sample(r.row, rows, r.inputs), expected);
}

// ---- argmax kernels ----------------------------------------------------------

std::vector<uint32_t> argmaxRows(const void* data, size_t bytes, bool isHalf, uint32_t vocab, uint32_t rows,
                                 size_t tokenOffset = 0) {
  md::Device& d = device();
  auto logits = d.newBuffer(bytes);
  std::memcpy(logits->contents(), data, bytes);
  auto tokens = d.newBuffer(tokenOffset + rows * 4);
  std::memset(tokens->contents(), 0xEE, tokens->length());
  md_argmax_params args{vocab};
  auto cb = d.newCommandBuffer();
  cb->setPipeline(d.pipeline(isHalf ? "md_argmax_f16" : "md_argmax_f32"));
  cb->setBuffer(0, *logits, 0);
  cb->setBytes(1, &args, sizeof args);
  cb->setBuffer(2, *tokens, tokenOffset);
  auto noMask = d.newBuffer(4);
  cb->setBuffer(3, *noMask, 0);
  cb->dispatch(rows, 1024);
  cb->commit();
  cb->wait();
  const auto* out = reinterpret_cast<const uint32_t*>(static_cast<char*>(tokens->contents()) + tokenOffset);
  if (tokenOffset) {
    EXPECT_EQ(*static_cast<uint32_t*>(tokens->contents()), 0xEEEEEEEEu);  // before the offset: untouched
  }
  return std::vector<uint32_t>(out, out + rows);
}

TEST(EmulatedArgmax, Float32RowsMatchTheCpuIncludingTiesAndSentinel) {
  const uint32_t vocab = 5000;
  std::vector<float> rows(vocab * 4);
  std::mt19937 rng(3);
  for (float& v : rows) v = std::round(std::normal_distribution<float>(0, 3)(rng));  // many ties
  for (uint32_t i = 0; i < vocab; ++i) rows[3 * vocab + i] = i % 2 ? -INFINITY : NAN;
  rows[vocab + 4321] = INFINITY;  // +inf counts as the largest finite value
  std::vector<uint32_t> expected;
  for (uint32_t r = 0; r < 4; ++r) {
    Case c;
    c.values.assign(rows.begin() + r * vocab, rows.begin() + (r + 1) * vocab);
    c.params = md::greedySamplingParams(vocab);
    expected.push_back(onCpu(c));
  }
  EXPECT_EQ(expected[1], 4321u);
  EXPECT_EQ(expected[3], MD_NO_TOKEN);
  EXPECT_EQ(argmaxRows(rows.data(), rows.size() * 4, false, vocab, 4, 8), expected);
}

// KernelSampler picks one float32 row greedily with the wide argmax.
TEST(EmulatedArgmax, OneFloat32RowThroughTheSamplerMatchesTheCpu) {
  std::mt19937 rng(9);
  for (int r = 0; r < 12; ++r) {
    Case c;
    const uint32_t vocab = std::vector<uint32_t>{1, 70, 5000, 130000}[r % 4];
    for (uint32_t i = 0; i < vocab; ++i) c.values.push_back(std::round(std::normal_distribution<float>(0, 3)(rng)));
    if (r % 3 == 1) c.values[rng() % vocab] = INFINITY;
    if (r % 3 == 2)
      for (uint32_t i = 0; i < vocab; i += 3) c.values[i] = NAN;
    c.params = md::greedySamplingParams(vocab);
    const uint32_t cpu = onCpu(c);
    EXPECT_EQ(onKernel(c), cpu) << "row " << r;
    EXPECT_EQ(onKernel(c, 64, md::RowLaunch{true, 5}), cpu) << "row " << r;
    EXPECT_EQ(onKernel(c, 0, md::RowLaunch{false, 0}), cpu) << "row " << r;
  }
}

TEST(EmulatedArgmax, Float16RowsMatchTheCpu) {
  std::mt19937 rng(4);
  for (uint32_t vocab : {1u, 33u, 1024u, 1500u, 262144u}) {
    Case c = testing_cases::randomCase(rng, vocab, 1, true);
    c.params = md::greedySamplingParams(vocab);
    CaseRow r(c);
    EXPECT_EQ(argmaxRows(r.halves.data(), r.halves.size() * 2, true, vocab, 1), std::vector<uint32_t>{onCpu(c)})
        << "V=" << vocab;
  }
}

// argmax.metal's one row over many threadgroups against md_argmax_*: the
// same token for every launch shape, on rows with heavy ties, +-inf and
// NaN, with and without a mask, float16 and float32.
std::vector<uint32_t> wideArgmax(const void* data, size_t bytes, bool isHalf, uint32_t vocab, uint32_t groups,
                                 uint32_t threads, const std::vector<uint32_t>& maskWords) {
  md::Device& d = device();
  auto logits = d.newBuffer(bytes);
  std::memcpy(logits->contents(), data, bytes);
  auto tokens = d.newBuffer(4), partials = d.newBuffer(groups * sizeof(md_wide_partial)),
       state = d.newBuffer(sizeof(md_wide_state)), mask = d.newBuffer(std::max<size_t>(4, maskWords.size() * 4));
  if (!maskWords.empty()) std::memcpy(mask->contents(), maskWords.data(), maskWords.size() * 4);
  md_argmax_params args{vocab, maskWords.empty() ? 0u : MD_FLAG_TOKEN_MASK};
  auto cb = d.newCommandBuffer();
  for (const char* kernel : isHalf ? std::vector<const char*>{"md_argmax_slices_f16", "md_argmax_pick_f16"}
                                   : std::vector<const char*>{"md_argmax_slices_f32", "md_argmax_pick_f32"}) {
    cb->setPipeline(d.pipeline(kernel));
    cb->setBuffer(0, *logits, 0);
    cb->setBytes(1, &args, sizeof args);
    cb->setBuffer(2, *tokens, 0);
    cb->setBuffer(3, *mask, 0);
    cb->setBuffer(4, *partials, 0);
    cb->setBuffer(5, *state, 0);
    cb->dispatch(std::strstr(kernel, "slices") ? groups : 1, threads);
  }
  cb->commit();
  cb->wait();
  return {*static_cast<uint32_t*>(tokens->contents())};
}

TEST(EmulatedArgmax, WideArgmaxGivesTheOneThreadgroupTokenForEveryLaunch) {
  std::mt19937 rng(31);
  int compared = 0;
  for (int c = 0; c < 40; ++c) {
    const uint32_t vocab = std::vector<uint32_t>{1, 33, 1500, 20000}[c % 4];
    std::vector<float> values(vocab);
    for (float& v : values) v = std::round(std::normal_distribution<float>(0, 2)(rng));  // heavy ties
    if (c % 5 == 1)
      for (uint32_t i = 0; i < vocab; i += 7) values[i] = i % 2 ? NAN : -INFINITY;
    if (c % 5 == 2) values[rng() % vocab] = INFINITY;
    if (c % 5 == 3) std::fill(values.begin(), values.end(), -INFINITY);
    std::vector<uint32_t> maskWords;
    if (c % 3 == 0) {
      maskWords.assign(md_mask_words(vocab), 0);
      for (uint32_t t = 0; t < vocab; ++t)
        if (rng() % 4 == 0) maskWords[t >> 5] |= 1u << (t & 31);
    }
    std::vector<uint16_t> halves;
    for (float v : values) halves.push_back(md::halfFromFloat(v));
    for (bool isHalf : {false, true}) {
      const void* data = isHalf ? static_cast<const void*>(halves.data()) : values.data();
      const size_t bytes = isHalf ? halves.size() * 2 : values.size() * 4;
      // md_argmax_* with the same mask is the reference.
      md::Device& d = device();
      auto logits = d.newBuffer(bytes), tokens = d.newBuffer(4),
           mask = d.newBuffer(std::max<size_t>(4, maskWords.size() * 4));
      std::memcpy(logits->contents(), data, bytes);
      if (!maskWords.empty()) std::memcpy(mask->contents(), maskWords.data(), maskWords.size() * 4);
      md_argmax_params args{vocab, maskWords.empty() ? 0u : MD_FLAG_TOKEN_MASK};
      auto cb = d.newCommandBuffer();
      cb->setPipeline(d.pipeline(isHalf ? "md_argmax_f16" : "md_argmax_f32"));
      cb->setBuffer(0, *logits, 0);
      cb->setBytes(1, &args, sizeof args);
      cb->setBuffer(2, *tokens, 0);
      cb->setBuffer(3, *mask, 0);
      cb->dispatch(1, 1024);
      cb->commit();
      cb->wait();
      const uint32_t expected = *static_cast<uint32_t*>(tokens->contents());
      if (c % 5 == 3 && maskWords.empty()) {
        EXPECT_EQ(expected, MD_NO_TOKEN);
      }
      for (auto [groups, threads] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 32}, {3, 96}, {7, 1024}, {64, 32}}) {
        EXPECT_EQ(wideArgmax(data, bytes, isHalf, vocab, groups, threads, maskWords), std::vector<uint32_t>{expected})
            << "case " << c << (isHalf ? " float16" : " float32") << ", " << groups << " x " << threads;
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 40 * 2 * 4);
}

TEST(KernelInputs, Float32SamplingIsRefusedWithTheReason) {
  Case c = sampled(rowOf({1, 2}), 0.7f, 1);
  c.isHalf = false;
  CaseRow r(c);
  const char* why = md::checkKernelInputs(r.row, r.inputs);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::strstr(why, "float16"), nullptr);
  r.inputs.params.temperature = 0;
  EXPECT_EQ(md::checkKernelInputs(r.row, r.inputs), nullptr);
}

}  // namespace
