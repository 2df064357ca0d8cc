// head_sampling_test.cpp: FlashSampling (metal/head_sampling.metal) on the
// emulated device against the unfused path it replaces: md_matvec_* storing
// the logits, then md_argmax_f32 over them (greedy) or md_half_from_f32 and
// the sampling kernels (KernelSampler: greedy with a bias, temperature-only
// sampling with or without one). The token must be the same, for every
// weight type, every mode and every launch shape: what a chain table that
// fuses its LM head relies on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "emulated_device.h"
#include "float16.h"
#include "kernel_contracts.h"
#include "kernel_sampler.h"
#include "md_transformer.h"
#include "random_weights.h"

namespace {

md::emu::EmulatedDevice& device() {
  static md::emu::EmulatedDevice d;
  return d;
}

std::shared_ptr<md::Buffer> bytesBuffer(const void* data, size_t bytes) {
  auto b = device().newBuffer(bytes);
  std::memcpy(b->contents(), data, bytes);
  return b;
}

template <class Params>
void dispatch(const std::string& kernel, std::vector<std::pair<uint32_t, md::Buffer*>> buffers, uint32_t paramsIndex,
              const Params& params, uint32_t groups, uint32_t threads) {
  auto cb = device().newCommandBuffer();
  cb->setPipeline(device().pipeline(kernel.c_str()));
  for (auto& [index, b] : buffers) cb->setBuffer(index, *b, 0);
  cb->setBytes(paramsIndex, &params, sizeof params);
  cb->dispatch(groups, threads);
  cb->commit();
  cb->wait();
}

// One LM head: W (rows x cols of a type) and x, with its unfused logits.
struct Head {
  const TypeCase* type;
  uint32_t rows, cols;
  std::shared_ptr<md::Buffer> w, x;
  std::vector<float> logits;     // md_matvec_*'s
  std::vector<uint16_t> halves;  // md_half_from_f32's
};

Head makeHead(const TypeCase& t, uint32_t rows, uint32_t cols, uint32_t seed) {
  Head h{&t, rows, cols, nullptr, nullptr, {}, {}};
  auto bytes = randomRows(t.type, rows, cols, seed);
  // The largest row copied to an earlier one: a tie the lowest index must win.
  const size_t rowBytes = bytes.size() / rows;
  std::vector<float> xs(cols);
  std::mt19937 rng(seed + 1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : xs) v = normal(rng);
  h.x = bytesBuffer(xs.data(), xs.size() * 4);
  auto logitsOf = [&](const std::vector<uint8_t>& weights) {
    h.w = bytesBuffer(weights.data(), weights.size());
    auto y = device().newBuffer(size_t(rows) * 4);
    const uint32_t simdGroups = (rows + MD_MATVEC_ROWS - 1) / MD_MATVEC_ROWS;
    dispatch("md_matvec_" + std::string(t.suffix),
             {{0, h.w.get()}, {1, h.x.get()}, {3, y.get()}, {4, h.w.get()}, {5, y.get()}, {6, h.w.get()}, {7, y.get()}},
             2, md_matvec_params{cols, MD_MATVEC_STORE, {rows, 0, 0}, 1, 0, 0}, (simdGroups + 3) / 4, 128);
    std::vector<float> out(rows);
    std::memcpy(out.data(), y->contents(), size_t(rows) * 4);
    return out;
  };
  auto first = logitsOf(bytes);
  size_t top = 0;
  for (size_t i = 1; i < rows; ++i)
    if (first[i] > first[top]) top = i;
  if (top > 0) std::memcpy(bytes.data() + (top / 2) * rowBytes, bytes.data() + top * rowBytes, rowBytes);
  h.logits = logitsOf(bytes);
  auto y = bytesBuffer(h.logits.data(), size_t(rows) * 4);
  auto halves = device().newBuffer(size_t(rows) * 2);
  dispatch("md_half_from_f32", {{0, y.get()}, {1, halves.get()}}, 2, md_rows_params{rows, 1, 0.0f, 0},
           (rows + 255) / 256, 256);
  h.halves.resize(rows);
  std::memcpy(h.halves.data(), halves->contents(), size_t(rows) * 2);
  return h;
}

// A mode of the fused kernel and the unfused sampler's inputs for it.
struct Mode {
  uint32_t flags;
  float temperature;
  std::vector<uint32_t> biasTokens;  // a repeated token keeps its first bias
  std::vector<float> biasValues;
};

uint32_t unfused(const Head& h, const Mode& m, uint32_t seed, uint32_t position) {
  md::SamplingInputs in{md::greedySamplingParams(h.rows), nullptr, m.biasTokens.data(), m.biasValues.data()};
  in.params.temperature = m.temperature;
  in.params.seed = seed;
  in.params.position = position;
  in.params.bias_count = uint32_t(m.biasTokens.size());
  const bool half = (m.flags & MD_HEAD_HALF) != 0;
  const md::LogitsRow row{half ? static_cast<const void*>(h.halves.data()) : h.logits.data(),
                          half ? md::LogitsFormat::Float16 : md::LogitsFormat::Float32, h.rows};
  EXPECT_EQ(md::checkSamplingInputs(row, in), nullptr);
  EXPECT_EQ(md::checkKernelInputs(row, in), nullptr);
  md::KernelSampler sampler(device());
  return sampler.sample(row, 1, in).at(0);
}

uint32_t fused(const Head& h, const Mode& m, uint32_t seed, uint32_t position, uint32_t tiles, uint32_t threads) {
  std::vector<float> dense(h.rows, 0.0f);
  std::vector<bool> seen(h.rows, false);
  for (size_t j = 0; j < m.biasTokens.size(); ++j) {
    const uint32_t t = m.biasTokens[j];
    if (t < h.rows && !seen[t]) dense[t] = m.biasValues[j], seen[t] = true;
  }
  auto bias = bytesBuffer(dense.data(), dense.size() * 4);
  auto partials = device().newBuffer(sizeof(md_wide_partial) * tiles),
       state = device().newBuffer(sizeof(md_wide_state));
  auto token = device().newBuffer(4);
  const md_head_sampling_params p{h.rows, h.cols, m.flags, m.temperature, seed, position, 0, 0};
  const std::vector<std::pair<uint32_t, md::Buffer*>> buffers = {
      {0, h.w.get()}, {1, h.x.get()}, {3, bias.get()}, {4, partials.get()}, {5, state.get()}, {6, token.get()}};
  dispatch("md_head_sample_" + std::string(h.type->suffix), buffers, 2, p, tiles, threads);
  dispatch("md_head_sample_pick", buffers, 2, p, 1, threads);
  uint32_t out;
  std::memcpy(&out, token->contents(), 4);
  return out;
}

TEST(HeadSampling, GivesTheUnfusedTokenForEveryTypeModeAndLaunchShape) {
  const float negInf = -std::numeric_limits<float>::infinity();
  for (const TypeCase& t : kWeightTypes) {
    const bool superBlocks =
        t.type == md::TensorType::Q4_K || t.type == md::TensorType::Q5_K || t.type == md::TensorType::Q6_K;
    // Rows: one, and counts that are no multiple of a tile's 16 (small enough
    // that the aarch64 run under qemu stays within a few minutes).
    for (uint32_t rows : {1u, 203u, 517u}) {
      // 40: a float row whose second 32-value part is short (once, to keep the qemu run short).
      for (const uint32_t cols : {superBlocks ? 512u : 96u, 40u}) {
        if (!rowsFit(t.type, cols) || (cols == 40 && rows != 203)) continue;
        const Head h = makeHead(t, rows, cols, rows * 7 + cols);
        uint32_t top = 0;
        for (uint32_t i = 1; i < rows; ++i)
          if (h.logits[i] > h.logits[top]) top = i;
        const uint32_t other = rows / 3;
        // The bias that lifts `other` just past the argmax (float16 steps
        // here are about 2^-10): a bias added wrongly moves the token.
        const float gap = md::halfToFloat(h.halves[top]) - md::halfToFloat(h.halves[other]);
        const std::vector<Mode> modes = {
            {0, 0.0f, {}, {}},
            {MD_HEAD_HALF, 0.0f, {}, {}},
            // A repeated token keeps its first bias; a token beyond the vocabulary is ignored.
            {MD_HEAD_HALF | MD_HEAD_BIAS, 0.0f, {other, other, rows + 5}, {gap + 0.01f, -50.0f, 9.0f}},
            {MD_HEAD_HALF | MD_HEAD_BIAS, 0.0f, {top}, {negInf}},
            {MD_HEAD_HALF, 0.7f, {}, {}},
            {MD_HEAD_HALF, 3.0f, {}, {}},
            {MD_HEAD_HALF | MD_HEAD_BIAS, 1.0f, {top, other, rows + 5}, {negInf, gap + 0.5f, 9.0f}},
        };
        for (size_t m = 0; m < modes.size(); ++m) {
          // The position only changes the noise: greedy modes are checked at one
          // (the aarch64 run under qemu spent minutes repeating them).
          const uint32_t positions = modes[m].temperature > 0.0f ? 3 : 1;
          for (uint32_t position = 0; position < positions; ++position) {
            const uint32_t seed = 1234 + uint32_t(m);
            const uint32_t expected = unfused(h, modes[m], seed, position);
            const uint32_t simdGroups = (rows + MD_MATVEC_ROWS - 1) / MD_MATVEC_ROWS;
            for (auto [tiles, threads] :
                 {std::pair{1u, 32u}, std::pair{3u, 64u}, std::pair{(simdGroups + 3) / 4, 128u}, std::pair{7u, 96u}}) {
              ASSERT_EQ(fused(h, modes[m], seed, position, tiles, threads), expected)
                  << t.suffix << " rows " << rows << " cols " << cols << " mode " << m << " position " << position
                  << " tiles " << tiles << " threads " << threads;
            }
          }
        }
      }
    }
  }
}

TEST(HeadSampling, EveryTokenRefusedGivesNoTokenInEveryMode) {
  const Head h = makeHead(kWeightTypes[4], 70, 96, 5);  // Q4_0
  std::vector<uint32_t> all(h.rows);
  for (uint32_t i = 0; i < h.rows; ++i) all[i] = i;
  for (float temperature : {0.0f, 0.8f}) {
    const Mode m{MD_HEAD_HALF | MD_HEAD_BIAS, temperature, all, std::vector<float>(h.rows, -INFINITY)};
    EXPECT_EQ(unfused(h, m, 1, 2), MD_NO_TOKEN);
    EXPECT_EQ(fused(h, m, 1, 2, 2, 64), MD_NO_TOKEN) << "temperature " << temperature;
  }
}

// A command of `kernel` with buffers {index, buffer} and params at [[buffer(2)]].
md::DispatchCmd command(const std::string& kernel, std::vector<std::pair<uint32_t, md::Buffer*>> buffers,
                        const md_head_sampling_params& params, uint32_t groups) {
  md::DispatchCmd cmd;
  cmd.pipeline = &device().pipeline(kernel.c_str());
  for (auto& [index, b] : buffers) cmd.buffers[cmd.bufferCount++] = md::BufferBinding{b, 0, index};
  std::memcpy(cmd.params, &params, sizeof params);
  cmd.paramsSize = sizeof params;
  cmd.paramsIndex = 2;
  cmd.threadgroups = groups;
  return cmd;
}

TEST(HeadSampling, ContractsNameTheProblem) {
  // A Q4_0 matrix of 8 rows of 64 values is 8 x 2 blocks of 18 bytes.
  auto w = device().newBuffer(8 * 2 * 18), x = device().newBuffer(4 * 64), bias = device().newBuffer(4 * 7);
  auto partials = device().newBuffer(sizeof(md_wide_partial) * 2), state = device().newBuffer(sizeof(md_wide_state));
  auto token = device().newBuffer(4);
  const std::vector<std::pair<uint32_t, md::Buffer*>> all = {{0, w.get()},        {1, x.get()},     {3, bias.get()},
                                                             {4, partials.get()}, {5, state.get()}, {6, token.get()}};
  auto problem = [&](const std::string& kernel, md_head_sampling_params p, uint32_t groups) {
    const md::DispatchCmd cmd = command(kernel, all, p, groups);
    return md::kernelContractProblem(cmd, cmd.params, 0);
  };
  const md_head_sampling_params ok{8, 64, MD_HEAD_HALF, 0.5f, 1, 0, 0, 0};
  EXPECT_EQ(problem("md_head_sample_q4_0", ok, 2), "");
  EXPECT_EQ(problem("md_head_sample_pick", ok, 1), "");
  EXPECT_EQ(problem("md_head_sample_q4_0", ok, 3),
            "md_head_sample_q4_0: buffer 4 (partials: one md_wide_partial per threadgroup of the tiles) needs 48 bytes "
            "from byte 0, but the buffer has 32");
  EXPECT_EQ(problem("md_head_sample_pick", ok, 2),
            "md_head_sample_pick: runs as one threadgroup: it reduces what the tiles left");
  EXPECT_EQ(problem("md_head_sample_q4_0", {8, 64, MD_HEAD_HALF | MD_HEAD_BIAS, 0.5f, 1, 0, 0, 0}, 1),
            "md_head_sample_q4_0: buffer 3 (bias: rows floats) needs 32 bytes from byte 0, but the buffer has 28");
  EXPECT_EQ(problem("md_head_sample_q4_0", {8, 64, 0, 0.5f, 1, 0, 0, 0}, 1),
            "md_head_sample_q4_0: a temperature needs MD_HEAD_HALF (sampling reads float16 logits)");
  EXPECT_EQ(problem("md_head_sample_q4_0", {8, 64, MD_HEAD_BIAS, 0.0f, 1, 0, 0, 0}, 1),
            "md_head_sample_q4_0: MD_HEAD_BIAS needs MD_HEAD_HALF (the bias is added to float16 logits)");
  EXPECT_EQ(problem("md_head_sample_q4_0", {8, 48, MD_HEAD_HALF, 0.5f, 1, 0, 0, 0}, 1),
            "md_head_sample_q4_0: cols 48 is not a whole number of 32-value blocks");
  EXPECT_EQ(problem("md_head_sample_q4_0", {9, 64, MD_HEAD_HALF, 0.5f, 1, 0, 0, 0}, 1),
            "md_head_sample_q4_0: buffer 0 (w: rows x cols / values blocks) needs 324 bytes from byte 0, but the "
            "buffer has 288");
  EXPECT_EQ(problem("md_head_sample_q4_0", ok, MD_HEAD_MAX_TILES + 1),
            "md_head_sample_q4_0: at most MD_HEAD_MAX_TILES threadgroups (the partials the pick reduces)");
}

}  // namespace
