// transformer_kernels_test.cpp: the transformer kernels of
// metal/transformer_rows.metal on the emulated device against their CPU
// twins (native/core/transformer/ops.h), and their contracts. Run once per
// fiber order, like every kernel test: a missing barrier shows in one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "emulated_device.h"
#include "emulated_kernels.h"
#include "float16.h"
#include "kernel_contracts.h"
#include "md_blocks.h"
#include "md_transformer.h"
#include "quant/convert_rows.h"
#include "random_weights.h"
#include "transformer/ops.h"

namespace {

using md::testing::buffer;
using md::testing::command;
using md::testing::contents;
using md::testing::device;
using md::testing::floatBits;
using md::testing::normals;
using md::testing::runWith;

// Runs `kernel` with buffers at [[buffer(0)]], [[buffer(1)]] (and (3)), the
// params at [[buffer(2)]].
void run(const char* kernel, std::vector<std::pair<uint32_t, md::Buffer*>> buffers, md_rows_params params,
         uint32_t groups, uint32_t threads) {
  auto cb = device().newCommandBuffer();
  cb->setPipeline(device().pipeline(kernel));
  for (auto& [index, b] : buffers) cb->setBuffer(index, *b, 0);
  cb->setBytes(2, &params, sizeof params);
  cb->dispatch(groups, threads);
  cb->commit();
  cb->wait();
}

// The GPU sums the squares in float32 (a fixed order), the CPU in double as
// llama.cpp does: the scale differs by a few float32 roundings of the sum,
// about n * 2^-24 relative at worst; 1e-5 holds that for the n here.
constexpr float kNormTolerance = 1e-5f;

TEST(TransformerKernels, RmsNormMatchesTheCpuForEveryRowLengthAndThreadgroupSize) {
  for (uint32_t n : {1u, 31u, 64u, 1000u, 2048u}) {
    for (uint32_t threads : {32u, 256u, 1024u}) {
      const uint32_t rows = 3;
      auto x = normals(size_t(n) * rows, n + threads, 2.0f);
      auto weight = normals(n, 7 * n, 1.0f);
      auto xb = buffer(x), wb = buffer(weight), out = device().newBuffer(size_t(n) * rows * 4);
      const md_rows_params p{n, rows, 1e-5f, 0};
      run("md_rms_norm_f32", {{0, xb.get()}, {1, wb.get()}, {3, out.get()}}, p, rows, threads);
      const auto gpu = contents(*out, size_t(n) * rows);
      std::vector<float> cpu(n);
      for (uint32_t r = 0; r < rows; ++r) {
        md::rmsNorm(x.data() + size_t(r) * n, weight.data(), cpu.data(), n, 1e-5f);
        for (uint32_t i = 0; i < n; ++i) {
          const float g = gpu[size_t(r) * n + i];
          ASSERT_NEAR(g, cpu[i], kNormTolerance * std::fabs(cpu[i]) + 1e-30f)
              << "n " << n << " threads " << threads << " row " << r << " i " << i;
        }
      }
    }
  }
}

TEST(TransformerKernels, SwigluAndTheResidualAddMatchTheCpu) {
  const uint32_t n = 1000, rows = 2, total = n * rows;
  const auto gate = normals(total, 1, 4.0f), up = normals(total, 2, 1.0f), y = normals(total, 3, 1.0f);
  auto gb = buffer(gate), ub = buffer(up);
  const md_rows_params p{n, rows, 0.0f, 0};
  run("md_swiglu_f32", {{0, gb.get()}, {1, ub.get()}}, p, (total + 255) / 256, 256);
  auto cpu = gate;
  md::swiglu(cpu.data(), up.data(), total);
  const auto swiglu = contents(*gb, total);
  // exp is the platform's on each side (the emulator's std::exp, Metal's
  // exp): within a few float32 ulps of each other.
  for (uint32_t i = 0; i < total; ++i) ASSERT_NEAR(swiglu[i], cpu[i], 1e-6f * std::fabs(cpu[i]) + 1e-30f) << i;

  auto xb = buffer(gate), yb = buffer(y);
  run("md_add_f32", {{0, xb.get()}, {1, yb.get()}}, p, (total + 255) / 256, 256);
  auto sum = gate;
  md::addInPlace(sum.data(), y.data(), total);
  EXPECT_EQ(contents(*xb, total), sum);  // one float addition each: the same bits
}

// Gemma's GeGLU: the GPU's GELU rounds through half as the CPU's table does,
// with its own tanh: within a half's rounding step of the CPU's (its
// subnormal steps near 0), and exact
// past the +-10 cut-offs (inputs spread to +-16 to reach them).
TEST(TransformerKernels, GegluMatchesTheCpu) {
  const uint32_t n = 1000, rows = 2, total = n * rows;
  const auto gate = normals(total, 4, 6.0f), up = normals(total, 5, 1.0f);
  auto gb = buffer(gate), ub = buffer(up);
  const md_rows_params p{n, rows, 0.0f, 0};
  run("md_geglu_f32", {{0, gb.get()}, {1, ub.get()}}, p, (total + 255) / 256, 256);
  auto cpu = gate;
  md::geglu(cpu.data(), up.data(), total);
  const auto geglu = contents(*gb, total);
  int pastCutOff = 0;
  for (uint32_t i = 0; i < total; ++i) {
    if (std::fabs(gate[i]) >= 10.0f) {
      ++pastCutOff;
      EXPECT_EQ(geglu[i], cpu[i]) << i;
    }
    // A half's relative step, or two of its smallest (subnormal) steps near 0, times up.
    ASSERT_NEAR(geglu[i], cpu[i], std::ldexp(std::fabs(cpu[i]), -10) + std::ldexp(std::fabs(up[i]), -23))
        << i << " gate " << gate[i];
  }
  EXPECT_GT(pastCutOff, 0);
  // GELU itself: 0 at 0, x for large x, the tanh curve's known value at 1 (0.8412, to half precision).
  EXPECT_EQ(md::geluTanh(0.0f), 0.0f);
  EXPECT_EQ(md::geluTanh(12.0f), 12.0f);
  EXPECT_EQ(md::geluTanh(-12.0f), 0.0f);
  EXPECT_NEAR(md::geluTanh(1.0f), 0.841192f, 1e-3f);
}

// y = W x on the GPU against the dequantized rows' dot products in double.
// The kernel adds in float32: per block, then across the 32 lanes, then
// scales by the block's d, so each result is within about (cols + 8)
// roundings of 2^-24 of sum |w x|: the bound the test allows. Three
// matrices of different heights in one dispatch (Q, K and V), each row
// the same bits as its matrix alone; accumulate adds the same sums to what
// y held; SwiGLU of two matrices is the CPU's swiglu of their products.
TEST(TransformerKernels, MatvecMatchesTheDequantizedRowsForEveryTypeAlsoFused) {
  for (const TypeCase& t : kWeightTypes) {
    const std::string name = std::string("md_matvec_") + t.suffix;
    const char* kernel = name.c_str();
    // The last four: float rows whose length is not a whole number of the lanes' 32-value parts.
    for (auto [rows, cols, simdgroups] :
         {std::tuple{1u, 256u, 1u}, std::tuple{7u, 768u, 2u}, std::tuple{70u, 1024u, 4u}, std::tuple{33u, 2048u, 4u},
          std::tuple{11u, 1280u, 4u},  // 40 parts: a full window of 32 (x loaded coalesced) and a short one
          std::tuple{5u, 96u, 1u}, std::tuple{9u, 172u, 2u}, std::tuple{6u, 45u, 1u}, std::tuple{3u, 8u, 1u},
          std::tuple{2u, 1u, 1u}}) {
      if (!rowsFit(t.type, cols)) continue;
      const uint32_t heights[3] = {rows, rows / 2 + 3, 5};
      std::vector<std::vector<uint8_t>> bytes;
      std::vector<std::shared_ptr<md::Buffer>> w, y;
      for (uint32_t m = 0; m < 3; ++m) {
        bytes.push_back(randomRows(t.type, heights[m], cols, rows * 131 + cols + 1000 * m));
        w.push_back(device().newBuffer(bytes[m].size()));
        std::memcpy(w[m]->contents(), bytes[m].data(), bytes[m].size());
        y.push_back(device().newBuffer(size_t(heights[m]) * 4));
      }
      const auto x = normals(cols, cols + 5, 1.0f);
      auto xb = buffer(x);
      auto dispatch = [&](uint32_t mode, std::vector<uint32_t> matrices) {
        md_matvec_params p{cols, mode, {0, 0, 0}, 1, 0, 0};
        uint32_t simdGroupsNeeded = 0;
        for (size_t i = 0; i < matrices.size(); ++i) {
          p.rows[i] = heights[matrices[i]];
          simdGroupsNeeded += (heights[matrices[i]] + MD_MATVEC_ROWS - 1) / MD_MATVEC_ROWS;
        }
        if (mode == MD_MATVEC_SWIGLU) simdGroupsNeeded = (heights[matrices[0]] + MD_MATVEC_ROWS - 1) / MD_MATVEC_ROWS;
        auto at = [&](size_t i) { return matrices[i < matrices.size() ? i : 0]; };
        runWith(kernel,
                {{0, w[at(0)].get()},
                 {1, xb.get()},
                 {3, y[at(0)].get()},
                 {4, w[at(1)].get()},
                 {5, y[at(1)].get()},
                 {6, w[at(2)].get()},
                 {7, y[at(2)].get()}},
                2, p, (simdGroupsNeeded + simdgroups - 1) / simdgroups, 32 * simdgroups);
      };
      dispatch(MD_MATVEC_STORE, {0, 1, 2});
      std::vector<std::vector<float>> fused;
      for (uint32_t m = 0; m < 3; ++m) fused.push_back(contents(*y[m], heights[m]));
      for (uint32_t m = 0; m < 3; ++m) {
        const size_t rowBytes = bytes[m].size() / heights[m];
        std::vector<float> wr(cols);
        for (uint32_t r = 0; r < heights[m]; ++r) {
          md::dequantizeRow(t.type, bytes[m].data() + r * rowBytes, wr.data(), cols);
          double exact = 0, magnitude = 0;
          for (uint32_t j = 0; j < cols; ++j) {
            exact += double(wr[j]) * x[j];
            magnitude += std::fabs(double(wr[j]) * x[j]);
          }
          ASSERT_NEAR(fused[m][r], exact, (cols + 8) * std::ldexp(magnitude, -24) + 1e-30)
              << kernel << " matrix " << m << " rows " << heights[m] << " cols " << cols << " row " << r;
        }
      }
      dispatch(MD_MATVEC_STORE, {1});
      ASSERT_EQ(contents(*y[1], heights[1]), fused[1]) << kernel << ": one matrix alone";
      dispatch(MD_MATVEC_ACCUMULATE, {0});
      const auto doubled = contents(*y[0], rows);
      for (uint32_t r = 0; r < rows; ++r)
        ASSERT_EQ(doubled[r], fused[0][r] + fused[0][r]) << kernel << " accumulate, row " << r;
      // SwiGLU of W0 (the gate) and an up matrix of its rows, into y0.
      const auto upBytes = randomRows(t.type, rows, cols, rows + cols + 7);
      auto up = device().newBuffer(upBytes.size()), upOut = device().newBuffer(size_t(rows) * 4);
      std::memcpy(up->contents(), upBytes.data(), upBytes.size());
      const uint32_t groups = ((rows + MD_MATVEC_ROWS - 1) / MD_MATVEC_ROWS + simdgroups - 1) / simdgroups;
      runWith(kernel,
              {{0, w[0].get()},
               {1, xb.get()},
               {3, y[0].get()},
               {4, up.get()},
               {5, y[0].get()},
               {6, w[0].get()},
               {7, y[0].get()}},
              2, md_matvec_params{cols, MD_MATVEC_SWIGLU, {rows, rows, 0}, 1, 0, 0}, groups, 32 * simdgroups);
      const auto swiglu = contents(*y[0], rows);
      runWith(kernel,
              {{0, up.get()},
               {1, xb.get()},
               {3, upOut.get()},
               {4, up.get()},
               {5, upOut.get()},
               {6, up.get()},
               {7, upOut.get()}},
              2, md_matvec_params{cols, MD_MATVEC_STORE, {rows, 0, 0}, 1, 0, 0}, groups, 32 * simdgroups);
      auto expected = fused[0];
      md::swiglu(expected.data(), contents(*upOut, rows).data(), rows);
      // exp is the platform's on each side: within a few float32 ulps.
      for (uint32_t r = 0; r < rows; ++r)
        ASSERT_NEAR(swiglu[r], expected[r], 1e-6f * std::fabs(expected[r]) + 1e-30f) << kernel << " SwiGLU row " << r;
    }
  }
}

// The batch kernel gives each of its tokens the bits md_matvec_* gives
// that token alone, in every mode, for every type: what lets speculative
// verification on the GPU give the tokens of one-token decoding.
TEST(TransformerKernels, MatvecBatchGivesEachTokenTheBitsOfTheOneTokenKernel) {
  for (const TypeCase& t : kWeightTypes) {
    const std::string one = std::string("md_matvec_") + t.suffix, batch = std::string("md_matvec_batch_") + t.suffix;
    const bool superBlocks =
        t.type == md::TensorType::Q4_K || t.type == md::TensorType::Q5_K || t.type == md::TensorType::Q6_K;
    // 172: a float row with a short last part; 1280: a full window of 32 parts and a short one.
    for (const uint32_t cols : {superBlocks ? 512u : 96u, 172u, 1280u}) {
      if (!rowsFit(t.type, cols)) continue;
      const uint32_t rows = 13, simdgroups = 2;
      const uint32_t groups = ((rows + MD_MATVEC_ROWS - 1) / MD_MATVEC_ROWS + simdgroups - 1) / simdgroups;
      const uint32_t batchGroups =
          ((rows + MD_MATVEC_BATCH_ROWS - 1) / MD_MATVEC_BATCH_ROWS + simdgroups - 1) / simdgroups;
      const auto gateBytes = randomRows(t.type, rows, cols, cols + 11),
                 upBytes = randomRows(t.type, rows, cols, cols + 12);
      auto gate = device().newBuffer(gateBytes.size()), up = device().newBuffer(upBytes.size());
      std::memcpy(gate->contents(), gateBytes.data(), gateBytes.size());
      std::memcpy(up->contents(), upBytes.data(), upBytes.size());
      for (uint32_t count : {1u, 3u, MD_MATVEC_BATCH}) {
        const auto x = normals(size_t(count) * cols, count * 7 + cols, 1.0f);
        const auto start = normals(size_t(count) * rows, count + 3, 1.0f);  // what an accumulate adds to
        for (uint32_t mode : {MD_MATVEC_STORE, MD_MATVEC_ACCUMULATE, MD_MATVEC_SWIGLU}) {
          auto xb = buffer(x), yb = buffer(start);
          const uint32_t upRows = mode == MD_MATVEC_SWIGLU ? rows : 0;
          runWith(batch.c_str(),
                  {{0, gate.get()},
                   {1, xb.get()},
                   {3, yb.get()},
                   {4, up.get()},
                   {5, yb.get()},
                   {6, gate.get()},
                   {7, yb.get()}},
                  2, md_matvec_params{cols, mode, {rows, upRows, 0}, count, 0, 0}, batchGroups, 32 * simdgroups);
          const auto together = contents(*yb, size_t(count) * rows);
          for (uint32_t token = 0; token < count; ++token) {
            auto xt =
                buffer(std::vector<float>(x.begin() + size_t(token) * cols, x.begin() + size_t(token + 1) * cols));
            auto yt = buffer(
                std::vector<float>(start.begin() + size_t(token) * rows, start.begin() + size_t(token + 1) * rows));
            runWith(one.c_str(),
                    {{0, gate.get()},
                     {1, xt.get()},
                     {3, yt.get()},
                     {4, up.get()},
                     {5, yt.get()},
                     {6, gate.get()},
                     {7, yt.get()}},
                    2, md_matvec_params{cols, mode, {rows, upRows, 0}, 1, 0, 0}, groups, 32 * simdgroups);
            const auto alone = contents(*yt, rows);
            for (uint32_t r = 0; r < rows; ++r) {
              ASSERT_EQ(floatBits(together[size_t(token) * rows + r]), floatBits(alone[r]))
                  << batch << " cols " << cols << " count " << count << " mode " << mode << " token " << token
                  << " row " << r;
            }
          }
        }
      }
    }
  }
}

// Y = X W^T for a batch against the dequantized rows in double. The kernel
// adds in float32, one product at a time in column order, so each output
// is within cols roundings of 2^-24 of sum |w x|: the bound allowed.
// Batches that fill a tile, leave it part empty, and span two. The CPU
// twin: each dequantized value rounded to the type of W's tile (half; float
// for f32 and bf16 rows), then the dot in double. The kernel sums those
// products in float in an order of its matrix units, so it is within cols
// float roundings of the twin's magnitude; and the twin is within half's
// rounding of the unrounded dot (checked too, a looser bound: 2^-11 of
// each product, plus half's subnormal spacing 2^-24 over 2 times |x|).
TEST(TransformerKernels, MatmulMatchesTheDequantizedRowsForEveryTypeAndBatch) {
  for (const TypeCase& t : kWeightTypes) {
    const std::string name = std::string("md_matmul_") + t.suffix;
    const bool halfTile = t.type != md::TensorType::F32 && t.type != md::TensorType::BF16;
    // The last three: float rows whose last 32-column step is short.
    for (auto [rows, cols, count] :
         {std::tuple{7u, 256u, 1u}, std::tuple{70u, 512u, 5u}, std::tuple{64u, 256u, 32u}, std::tuple{130u, 96u, 37u},
          std::tuple{9u, 172u, 33u}, std::tuple{5u, 45u, 3u}, std::tuple{4u, 8u, 2u}}) {
      if (!rowsFit(t.type, cols)) continue;
      const auto bytes = randomRows(t.type, rows, cols, rows * 7 + cols + count);
      const auto x = normals(size_t(count) * cols, count + cols, 1.0f);
      auto wb = device().newBuffer(bytes.size());
      std::memcpy(wb->contents(), bytes.data(), bytes.size());
      auto xb = buffer(x), yb = device().newBuffer(size_t(rows) * count * 4);
      const uint32_t groups =
          ((rows + MD_MATMUL_ROWS - 1) / MD_MATMUL_ROWS) * ((count + MD_MATMUL_TOKENS - 1) / MD_MATMUL_TOKENS);
      runWith(name.c_str(), {{0, wb.get()}, {1, xb.get()}, {3, yb.get()}}, 2, md_matmul_params{rows, cols, count, 0},
              groups, MD_MATMUL_THREADS);
      const auto y = contents(*yb, size_t(rows) * count);
      runWith(name.c_str(), {{0, wb.get()}, {1, xb.get()}, {3, yb.get()}}, 2, md_matmul_params{rows, cols, count, 1},
              groups, MD_MATMUL_THREADS);
      const auto doubled = contents(*yb, size_t(rows) * count);
      for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(doubled[i], y[i] + y[i]) << name << " accumulate, output " << i;
      const size_t rowBytes = bytes.size() / rows;
      std::vector<float> w(cols);
      for (uint32_t r = 0; r < rows; ++r) {
        md::dequantizeRow(t.type, bytes.data() + r * rowBytes, w.data(), cols);
        for (uint32_t token = 0; token < count; ++token) {
          double twin = 0, magnitude = 0, exact = 0, exactMagnitude = 0, xMagnitude = 0;
          for (uint32_t j = 0; j < cols; ++j) {
            const double xj = x[size_t(token) * cols + j];
            const double tiled = halfTile ? md::halfToFloat(md::halfFromFloat(w[j])) : w[j];
            twin += tiled * xj;
            magnitude += std::fabs(tiled * xj);
            exact += double(w[j]) * xj;
            exactMagnitude += std::fabs(double(w[j]) * xj);
            xMagnitude += std::fabs(xj);
          }
          const float got = y[size_t(token) * rows + r];
          ASSERT_NEAR(got, twin, cols * std::ldexp(magnitude, -24) + 1e-30)
              << name << " rows " << rows << " cols " << cols << " count " << count << " row " << r << " token "
              << token;
          const double rounding = halfTile ? std::ldexp(exactMagnitude, -11) + std::ldexp(xMagnitude, -25) : 0;
          ASSERT_NEAR(got, exact, rounding + cols * std::ldexp(magnitude, -24) + 1e-30) << name << " row " << r;
        }
      }
    }
  }
}

// The batched forms are the one-token forms applied to each token: the
// same operations, so the same bits.
TEST(TransformerKernels, BatchedEmbeddingRopeKvStoreAndBiasAreTheOneTokenOpsBitForBit) {
  const uint32_t vocab = 9, dim = 64, count = 5;
  const auto bytes = randomRows(md::TensorType::Q4_K, vocab, 256, 3);
  auto table = device().newBuffer(bytes.size());
  std::memcpy(table->contents(), bytes.data(), bytes.size());
  const uint32_t tokens[count] = {3, 0, 8, 3, 12};
  auto tokenBuffer = device().newBuffer(sizeof tokens);
  std::memcpy(tokenBuffer->contents(), tokens, sizeof tokens);
  auto out = device().newBuffer(count * 256 * 4);
  runWith("md_embed_rows_q4_k", {{0, tokenBuffer.get()}, {1, table.get()}, {3, out.get()}}, 2,
          md_embed_params{vocab, 256, count, 1.0f}, (count * 256 + 127) / 128, 128);
  const auto batch = contents(*out, count * 256);
  for (uint32_t i = 0; i < count; ++i) {
    std::vector<float> expected(256, 0.0f);
    if (tokens[i] < vocab)
      md::dequantizeRow(md::TensorType::Q4_K, bytes.data() + tokens[i] * (bytes.size() / vocab), expected.data(), 256);
    EXPECT_EQ(std::vector<float>(batch.begin() + i * 256, batch.begin() + (i + 1) * 256), expected) << "token " << i;
  }

  // RoPE of a batch's Q heads (3) and K heads (2) in one dispatch: each
  // token's heads as the one-token, one-matrix dispatch rotates them.
  const uint32_t heads = 3, kHeads = 2, headDim = 64, position = 11;
  const auto x = normals(size_t(count) * heads * headDim, 5, 1.0f),
             kx = normals(size_t(count) * kHeads * headDim, 15, 1.0f);
  auto batched = buffer(x), batchedK = buffer(kx), factors = buffer({0.0f});
  md_rope_params rope{heads, headDim, headDim, 2,      position, std::pow(10000.0f, -2.0f / 64),
                      1.0f,  0,       count,   kHeads, 1.0f,     0};
  runWith("md_rope_f32", {{0, batched.get()}, {1, factors.get()}, {3, batchedK.get()}}, 2, rope,
          (count * (heads + kHeads) * 32 + 63) / 64, 64);
  for (auto [rows, headCount, roped] :
       {std::tuple{&x, heads, contents(*batched, x.size())}, std::tuple{&kx, kHeads, contents(*batchedK, kx.size())}}) {
    const size_t stride = size_t(headCount) * headDim;
    for (uint32_t i = 0; i < count; ++i) {
      std::vector<float> one(rows->begin() + i * stride, rows->begin() + (i + 1) * stride);
      auto single = buffer(one);
      md_rope_params p = rope;
      p.heads = headCount;
      p.k_heads = 0;
      p.position = position + i;
      p.count = 1;
      runWith("md_rope_f32", {{0, single.get()}, {1, factors.get()}, {3, single.get()}}, 2, p, 2, 64);
      EXPECT_EQ(std::vector<float>(roped.begin() + i * stride, roped.begin() + (i + 1) * stride),
                contents(*single, one.size()))
          << headCount << " heads, token " << i;
    }
  }

  const uint32_t kvDim = 64, context = 20;
  const auto k = normals(count * kvDim, 6, 1.0f), v = normals(count * kvDim, 7, 1.0f);
  auto kb = buffer(k), vb = buffer(v);
  auto keys = device().newBuffer(context * kvDim * 2), values = device().newBuffer(context * kvDim * 2);
  runWith("md_kv_store_f16", {{0, kb.get()}, {1, vb.get()}, {3, keys.get()}, {4, values.get()}}, 2,
          md_kv_store_params{kvDim, position, count, 0}, (count * kvDim + 63) / 64, 64);
  const auto* cachedKeys = static_cast<const uint16_t*>(keys->contents());
  const auto* cachedValues = static_cast<const uint16_t*>(values->contents());
  for (uint32_t i = 0; i < count * kvDim; ++i) {
    ASSERT_EQ(cachedKeys[position * kvDim + i], md::halfFromFloat(k[i])) << i;
    ASSERT_EQ(cachedValues[position * kvDim + i], md::halfFromFloat(v[i])) << i;
  }

  const auto rowsOf = normals(count * dim, 8, 1.0f), bias = normals(dim, 9, 1.0f);
  auto xb = buffer(rowsOf), bb = buffer(bias);
  runWith("md_add_f32", {{0, xb.get()}, {1, bb.get()}}, 2, md_rows_params{dim, count, 0.0f, 1},
          (count * dim + 255) / 256, 256);
  auto expected = rowsOf;
  for (uint32_t i = 0; i < count; ++i) md::addInPlace(expected.data() + i * dim, bias.data(), dim);
  EXPECT_EQ(contents(*xb, count * dim), expected);
}

TEST(TransformerKernels, EmbeddingRowsAreTheDequantizedRowsBitForBit) {
  for (const TypeCase& t : kWeightTypes) {
    const std::string name = std::string("md_embed_rows_") + t.suffix;
    const char* kernel = name.c_str();
    for (const uint32_t dim : {512u, 172u, 45u}) {  // float tables may have rows of any length
      if (!rowsFit(t.type, dim)) continue;
      const uint32_t vocab = 5;
      const auto bytes = randomRows(t.type, vocab, dim, 17);
      auto table = device().newBuffer(bytes.size());
      std::memcpy(table->contents(), bytes.data(), bytes.size());
      auto out = device().newBuffer(dim * 4);
      for (uint32_t token : {0u, 3u, 4u, 9u}) {
        auto tokenBuffer = device().newBuffer(4);
        std::memcpy(tokenBuffer->contents(), &token, 4);
        runWith(kernel, {{0, tokenBuffer.get()}, {1, table.get()}, {3, out.get()}}, 2,
                md_embed_params{vocab, dim, 1, 1.0f}, (dim + 127) / 128, 128);
        std::vector<float> expected(dim, 0.0f);  // a token outside the vocabulary reads as zeros
        if (token < vocab)
          md::dequantizeRow(t.type, bytes.data() + token * (bytes.size() / vocab), expected.data(), dim);
        EXPECT_EQ(contents(*out, dim), expected) << kernel << " dim " << dim << " token " << token;
      }
    }
  }
}

// cos and sin are the platform's on each side (std's here, Metal's on a
// GPU): within a few float32 ulps, so each rotated value is within about
// 1e-6 (|x0| + |x1|) of the CPU's; the values here are below 4, hence 8e-6.
// The angle itself is the CPU's, operation for operation.
TEST(TransformerKernels, RopeMatchesTheCpuInBothModesWithAndWithoutFactors) {
  for (md::RopeMode mode : {md::RopeMode::AdjacentPairs, md::RopeMode::SplitHalves}) {
    for (uint32_t ropeDims : {64u, 32u}) {
      for (bool withFactors : {false, true}) {
        for (uint32_t position : {0u, 1u, 17u, 4000u}) {
          md::ModelConfig c;
          c.headDim = 64;
          c.ropeDims = ropeDims;
          c.ropeMode = mode;
          c.ropeBase = 500000.0f;
          c.ropeFreqScale = 0.5f;
          c.ropeAttnFactor = withFactors ? 1.19f : 1.0f;  // LongRoPE's attention factor comes with its factors
          const uint32_t heads = 3, pairs = ropeDims / 2;
          std::vector<float> factors(pairs);
          for (uint32_t i = 0; i < pairs; ++i) factors[i] = 1.0f + float(i % 7);
          const auto x = normals(heads * c.headDim, position + ropeDims, 1.0f);
          auto xb = buffer(x), fb = buffer(withFactors ? factors : std::vector<float>{0.0f});
          const md_rope_params p{heads,
                                 c.headDim,
                                 ropeDims,
                                 mode == md::RopeMode::AdjacentPairs ? 0u : 2u,
                                 position,
                                 std::pow(c.ropeBase, -2.0f / float(ropeDims)),
                                 c.ropeFreqScale,
                                 withFactors ? 1u : 0u,
                                 1,
                                 0,
                                 c.ropeAttnFactor,
                                 0};
          runWith("md_rope_f32", {{0, xb.get()}, {1, fb.get()}, {3, xb.get()}}, 2, p, 1, 128);
          std::vector<float> cosines(pairs), sines(pairs), cpu = x;
          md::ropeAngles(c, md::RopeFrequencies{c.ropeBase, c.ropeFreqScale}, withFactors ? factors.data() : nullptr,
                         position, cosines.data(), sines.data());
          for (uint32_t h = 0; h < heads; ++h)
            md::applyRope(mode, int(ropeDims), cosines.data(), sines.data(), cpu.data() + h * c.headDim);
          const auto gpu = contents(*xb, x.size());
          for (size_t i = 0; i < x.size(); ++i)
            ASSERT_NEAR(gpu[i], cpu[i], 8e-6f) << "position " << position << " i " << i;
        }
      }
    }
  }
}

// K and V go into the cache as float16 (exactly the CPU's rounding); the
// attention of each query head is compared with a double reference that
// rounds the query to float16 as the kernel (and llama.cpp) does and keeps
// the softmax weights exact, as the kernel keeps them float32. What is
// left is float32 arithmetic: dots of at most 128 products, an exponential
// per weight, sums over at most 40 positions, a rescale per new maximum:
// a few hundred roundings of 2^-24 at most, so the bound is 2^-14 of
// sum |p v| per output (weights rounded to float16 fail it).
// The KV cache types: the store and attention kernels' suffix, the tensor
// type of a cache row, and whether the query is rounded to float16 (the
// F16 cache, as llama.cpp).
struct CacheCase {
  const char* suffix;
  md::TensorType type;
  bool rounds;
};
constexpr CacheCase kCacheCases[] = {
    {"f16", md::TensorType::F16, true}, {"f32", md::TensorType::F32, false}, {"q8_0", md::TensorType::Q8_0, false}};

// For each cache type: the stored rows are the CPU's quantizeActivations
// of K and V bit for bit; attention matches a double reference over the
// cached values.
// A threadgroup serves a KV head's whole group of query heads, at most
// MD_ATTENTION_GROUP per pass: groups of 2 (one pass) and 9 (two passes).
// A SIMD group's lanes hold a head's values: heads of 32 (half the lanes
// hold an F16 word), 96 (a partial second word), 128, and odd heads (F16
// value by value; not Q8_0, whose heads are whole blocks).
TEST(TransformerKernels, KvStoreAndAttentionMatchAReferenceForGroupedHeads) {
  for (const CacheCase& cc : kCacheCases) {
    for (const auto& [heads, kvHeads, headDim] :
         {std::tuple{4u, 2u, 32u}, std::tuple{18u, 2u, 96u}, std::tuple{2u, 1u, 128u}, std::tuple{4u, 2u, 33u},
          std::tuple{2u, 2u, 1u}}) {
      if (headDim % MD_QK != 0 && cc.type == md::TensorType::Q8_0) continue;
      const std::string store = std::string("md_kv_store_") + cc.suffix,
                        kernel = std::string("md_attention_") + cc.suffix,
                        attend = kernel + " (" + std::to_string(heads) + " heads of " + std::to_string(headDim) + ")";
      const uint32_t context = 40, kvDim = kvHeads * headDim;
      const size_t rowBytes = md::rowBytes(md::tensorTypeInfo(cc.type), kvDim);
      auto keys = device().newBuffer(size_t(context) * rowBytes),
           values = device().newBuffer(size_t(context) * rowBytes);
      std::vector<std::vector<float>> ks, vs;
      const uint32_t storeThreads =
          cc.type == md::TensorType::Q8_0 ? kvDim / MD_QK : kvDim;  // Q8_0: a thread per block
      for (uint32_t position = 0; position < 37; ++position) {
        ks.push_back(normals(kvDim, 2 * position + 1, 1.0f));
        vs.push_back(normals(kvDim, 2 * position + 2, 1.0f));
        auto kb = buffer(ks.back()), vb = buffer(vs.back());
        runWith(store.c_str(), {{0, kb.get()}, {1, vb.get()}, {3, keys.get()}, {4, values.get()}}, 2,
                md_kv_store_params{kvDim, position, 1, 0}, (storeThreads + 63) / 64, 64);
      }
      std::vector<float> cachedKeys(size_t(37) * kvDim), cachedValues(size_t(37) * kvDim);
      std::vector<uint8_t> expectedRow(rowBytes);
      for (uint32_t t = 0; t < 37; ++t) {
        const auto* k = static_cast<const uint8_t*>(keys->contents()) + t * rowBytes;
        const auto* v = static_cast<const uint8_t*>(values->contents()) + t * rowBytes;
        md::quantizeActivations(cc.type, ks[t].data(), expectedRow.data(), kvDim);
        ASSERT_EQ(std::vector<uint8_t>(k, k + rowBytes), expectedRow) << store << " keys, position " << t;
        md::quantizeActivations(cc.type, vs[t].data(), expectedRow.data(), kvDim);
        ASSERT_EQ(std::vector<uint8_t>(v, v + rowBytes), expectedRow) << store << " values, position " << t;
        md::dequantizeRow(cc.type, k, cachedKeys.data() + size_t(t) * kvDim, kvDim);
        md::dequantizeRow(cc.type, v, cachedValues.data() + size_t(t) * kvDim, kvDim);
      }
      auto operand = [&](float x) { return cc.rounds ? md::halfToFloat(md::halfFromFloat(x)) : x; };
      const float scale = 1.0f / std::sqrt(float(headDim));
      // Query i of a batch attends over the first length + i positions.
      // With a window, query i sees only the last `window` of them.
      auto expectAttention = [&](const std::vector<float>& q, const std::vector<float>& gpu, uint32_t count,
                                 uint32_t length, const std::string& what, uint32_t window = 0) {
        for (uint32_t i = 0; i < count; ++i) {
          for (uint32_t h = 0; h < heads; ++h) {
            const uint32_t g = h / (heads / kvHeads), n = length + i;
            const uint32_t from = window != 0 && n > window ? n - window : 0;
            const float* qh = q.data() + (size_t(i) * heads + h) * headDim;
            std::vector<double> p(n, -INFINITY);
            double max = -INFINITY, sum = 0;
            for (uint32_t t = from; t < n; ++t) {
              double dot = 0;
              if (cc.type == md::TensorType::Q8_0) {
                // The query in Q8_0 blocks, as the CPU's dot takes it.
                std::vector<uint8_t> qq(md::rowBytes(md::tensorTypeInfo(cc.type), headDim));
                std::vector<float> qd(headDim);
                md::quantizeActivations(cc.type, qh, qq.data(), headDim);
                md::dequantizeRow(cc.type, qq.data(), qd.data(), headDim);
                for (uint32_t d = 0; d < headDim; ++d) dot += double(qd[d]) * cachedKeys[t * kvDim + g * headDim + d];
              } else {
                for (uint32_t d = 0; d < headDim; ++d)
                  dot += double(operand(qh[d])) * cachedKeys[t * kvDim + g * headDim + d];
              }
              p[t] = dot * scale;
              max = std::max(max, p[t]);
            }
            for (double& x : p) sum += (x = std::exp(x - max));
            for (uint32_t d = 0; d < headDim; ++d) {
              double expected = 0, magnitude = 0;
              for (uint32_t t = from; t < n; ++t) {
                const double weight = p[t] / sum;
                const double v = cachedValues[t * kvDim + g * headDim + d];
                expected += weight * v;
                magnitude += std::fabs(weight * v);
              }
              ASSERT_NEAR(gpu[(size_t(i) * heads + h) * headDim + d], expected, std::ldexp(magnitude, -14) + 1e-6)
                  << attend << " " << what << " query " << i << " head " << h << " dim " << d;
            }
          }
        }
      };
      for (uint32_t length : {1u, 5u, 37u}) {
        for (uint32_t threads : {32u, 128u, 256u}) {
          const auto q = normals(heads * headDim, length, 1.0f);
          auto qb = buffer(q), out = device().newBuffer(heads * headDim * 4);
          runWith(kernel.c_str(), {{0, qb.get()}, {1, keys.get()}, {2, values.get()}, {4, out.get()}, {5, out.get()}},
                  3, md_attention_params{heads, kvHeads, headDim, length, context, scale, 1, 1, 0, 0}, kvHeads,
                  threads);
          expectAttention(q, contents(*out, heads * headDim), 1, length,
                          "length " + std::to_string(length) + " threads " + std::to_string(threads));
        }
      }
      // A batch of queries (causal), and the positions split over threadgroups
      // and merged: splits that leave some threadgroups empty (length < splits)
      // and uneven ranges.
      // Sliding windows (gemma's): shorter than the positions, split or not,
      // and longer than them (every position seen).
      for (auto [count, length, splits, window] :
           {std::tuple{1u, 3u, 8u, 0u}, std::tuple{1u, 37u, 3u, 0u}, std::tuple{6u, 1u, 1u, 0u},
            std::tuple{6u, 30u, 4u, 0u}, std::tuple{4u, 34u, 5u, 0u}, std::tuple{4u, 34u, 3u, 7u},
            std::tuple{6u, 30u, 1u, 10u}, std::tuple{1u, 37u, 2u, 40u}, std::tuple{3u, 5u, 1u, 1u}}) {
        const auto q = normals(size_t(count) * heads * headDim, 100 + count * length, 1.0f);
        const size_t outFloats = size_t(count) * heads * headDim;
        auto qb = buffer(q), out = device().newBuffer(outFloats * 4);
        auto partials = device().newBuffer(size_t(count) * heads * splits * MD_ATTENTION_PARTIAL_FLOATS(headDim) * 4);
        const md_attention_params p{heads, kvHeads, headDim, length, context, scale, count, splits, window, 0};
        auto cb = device().newCommandBuffer();
        cb->setPipeline(device().pipeline(kernel.c_str()));
        for (auto [index, b] : std::initializer_list<std::pair<uint32_t, md::Buffer*>>{
                 {0, qb.get()}, {1, keys.get()}, {2, values.get()}, {4, out.get()}, {5, partials.get()}})
          cb->setBuffer(index, *b, 0);
        cb->setBytes(3, &p, sizeof p);
        cb->dispatch(count * kvHeads * splits, 64);
        if (splits > 1) {
          cb->setPipeline(device().pipeline("md_attention_merge_f32"));
          cb->setBuffer(0, *partials, 0);
          cb->setBytes(1, &p, sizeof p);
          cb->setBuffer(2, *out, 0);
          cb->dispatch(uint32_t((outFloats + 63) / 64), 64);
        }
        cb->commit();
        cb->wait();
        expectAttention(q, contents(*out, outFloats), count, length,
                        "count " + std::to_string(count) + " length " + std::to_string(length) + " splits " +
                            std::to_string(splits) + " window " + std::to_string(window),
                        window);
      }
    }
  }
}

// The contract refuses a threadgroup that is not whole SIMD groups, or is
// more than `limit` threads, naming the count; it takes `limit`.
void expectThreadLimit(md::DispatchCmd cmd, uint32_t limit) {
  for (uint32_t threads : {48u, 2 * limit}) {
    cmd.threadsPerThreadgroup = threads;
    EXPECT_EQ(md::kernelContractProblem(cmd, cmd.params, 0),
              cmd.pipeline->name() + ": " + std::to_string(threads) +
                  " threads per threadgroup: expected whole SIMD groups, at most " + std::to_string(limit));
  }
  cmd.threadsPerThreadgroup = limit;
  EXPECT_EQ(md::kernelContractProblem(cmd, cmd.params, 0), "");
}

TEST(TransformerKernels, ContractsNameTheBufferThatIsTooSmall) {
  auto x = device().newBuffer(4 * 64 * 2), weight = device().newBuffer(4 * 64), out = device().newBuffer(4 * 64);
  const md_rows_params p{64, 2, 1e-5f, 0};
  auto norm = command("md_rms_norm_f32", {{0, x.get()}, {1, weight.get()}, {3, out.get()}}, 2, p);
  EXPECT_EQ(md::kernelContractProblem(norm, norm.params, 0),
            "md_rms_norm_f32: buffer 3 (out: rows x n floats) needs 512 bytes from byte 0, but the buffer has 256");
  auto add = command("md_add_f32", {{0, x.get()}, {1, weight.get()}}, 2, p);
  EXPECT_EQ(md::kernelContractProblem(add, add.params, 0),
            "md_add_f32: buffer 1 (y: rows x n floats) needs 512 bytes from byte 0, but the buffer has 256");

  // A Q4_0 matrix of 8 rows of 64 values is 8 x 2 blocks of 18 bytes.
  auto w = device().newBuffer(8 * 2 * 18 - 1), vx = device().newBuffer(4 * 64), vy = device().newBuffer(4 * 8);
  auto mv = command("md_matvec_q4_0", {{0, w.get()}, {1, vx.get()}, {3, vy.get()}}, 2,
                    md_matvec_params{64, MD_MATVEC_STORE, {8, 0, 0}, 1, 0, 0});
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0),
            "md_matvec_q4_0: buffer 0 (w0: rows[0] x cols / values blocks) needs 288 bytes from byte 0, but the buffer "
            "has 287");
  mv = command("md_matvec_q4_0", {{0, w.get()}, {1, vx.get()}, {3, vy.get()}}, 2,
               md_matvec_params{48, MD_MATVEC_STORE, {8, 0, 0}, 1, 0, 0});
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0),
            "md_matvec_q4_0: cols 48 is not a whole number of 32-value blocks");
  // Float rows have any length: 3 rows of 45 F16 values are 270 bytes.
  auto wf = device().newBuffer(3 * 45 * 2 - 2), xf = device().newBuffer(4 * 45), yf = device().newBuffer(4 * 3);
  mv = command("md_matvec_f16", {{0, wf.get()}, {1, xf.get()}, {3, yf.get()}}, 2,
               md_matvec_params{45, MD_MATVEC_STORE, {3, 0, 0}, 1, 0, 0});
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0),
            "md_matvec_f16: buffer 0 (w0: rows[0] x cols / values blocks) needs 270 bytes from byte 0, but the buffer "
            "has 268");
  // Counts: one token for md_matvec_*, up to MD_MATVEC_BATCH for the batch kernel, whose x and y hold them all.
  auto w8 = device().newBuffer(8 * 2 * 18);
  // A threadgroup is whole SIMD groups, at most MD_MATVEC_MAX_THREADS (their stages fill threadgroup memory).
  mv =
      command("md_matvec_q4_0",
              {{0, w8.get()}, {1, vx.get()}, {3, vy.get()}, {4, w8.get()}, {5, vy.get()}, {6, w8.get()}, {7, vy.get()}},
              2, md_matvec_params{64, MD_MATVEC_STORE, {8, 0, 0}, 1, 0, 0});
  expectThreadLimit(mv, 128);
  // Each matrix's line phase is where its binding starts in a 128-byte line (a wrong one costs a Mac twice the lines).
  auto wOffset = device().newBuffer(160 + 8 * 2 * 18);
  mv = command(
      "md_matvec_q4_0",
      {{0, wOffset.get()}, {1, vx.get()}, {3, vy.get()}, {4, w8.get()}, {5, vy.get()}, {6, w8.get()}, {7, vy.get()}}, 2,
      md_matvec_params{64, MD_MATVEC_STORE, {8, 0, 0}, 1, MD_LINE_PHASES(32, 0, 0), 0});
  mv.buffers[0].offset = 160;
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0), "");
  mv.buffers[0].offset = 128;
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0),
            "md_matvec_q4_0: line_phases byte 0 is 32, but buffer 0 is bound at offset 128, 0 into its 128-byte line");
  mv = command("md_matvec_q4_0", {{0, w8.get()}, {1, vx.get()}, {3, vy.get()}}, 2,
               md_matvec_params{64, MD_MATVEC_STORE, {8, 0, 0}, 2, 0, 0});
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0), "md_matvec_q4_0: count 2 is not a token count from 1 to 1");
  mv = command("md_matvec_batch_q4_0", {{0, w8.get()}, {1, vx.get()}, {3, vy.get()}}, 2,
               md_matvec_params{64, MD_MATVEC_STORE, {8, 0, 0}, 9, 0, 0});
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0),
            "md_matvec_batch_q4_0: count 9 is not a token count from 1 to 8");
  mv = command("md_matvec_batch_q4_0", {{0, w8.get()}, {1, vx.get()}, {3, vy.get()}}, 2,
               md_matvec_params{64, MD_MATVEC_STORE, {8, 0, 0}, 2, 0, 0});
  EXPECT_EQ(
      md::kernelContractProblem(mv, mv.params, 0),
      "md_matvec_batch_q4_0: buffer 1 (x: count x cols floats) needs 512 bytes from byte 0, but the buffer has 256");
  // A batch of 2 tokens needs 2 x 8 outputs.
  auto mm = command("md_matmul_q4_0", {{0, w.get()}, {1, vx.get()}, {3, vy.get()}}, 2, md_matmul_params{8, 32, 2, 0});
  EXPECT_EQ(md::kernelContractProblem(mm, mm.params, 0),
            "md_matmul_q4_0: buffer 3 (y: count x rows floats) needs 64 bytes from byte 0, but the buffer has 32");
  // With room for Y: exactly the threads its tiles are laid out for, and one threadgroup per tile.
  auto wideY = device().newBuffer(64);
  mm = command("md_matmul_q4_0", {{0, w.get()}, {1, vx.get()}, {3, wideY.get()}}, 2, md_matmul_params{8, 32, 2, 0});
  mm.threadgroups = 1;
  mm.threadsPerThreadgroup = 64;
  EXPECT_EQ(md::kernelContractProblem(mm, mm.params, 0), "md_matmul_q4_0: 64 threads per threadgroup: expected 128");
  mm.threadsPerThreadgroup = MD_MATMUL_THREADS;
  mm.threadgroups = 2;
  EXPECT_EQ(md::kernelContractProblem(mm, mm.params, 0),
            "md_matmul_q4_0: 2 threadgroups: expected one per tile of 64 rows x 32 tokens, 1");
  mm.threadgroups = 1;
  EXPECT_EQ(md::kernelContractProblem(mm, mm.params, 0), "");

  // Attention: the last query of a batch must fit the context, and splits need their partials.
  // A head is at most MD_ATTENTION_MAX_HEAD_DIM values, a threadgroup at most MD_ATTENTION_MAX_THREADS threads.
  auto q = device().newBuffer(4 * 512 * 3), cache = device().newBuffer(2 * 512 * 16),
       o = device().newBuffer(4 * 512 * 3);
  auto partials = device().newBuffer(4);
  const std::vector<std::pair<uint32_t, md::Buffer*>> attentionBuffers = {
      {0, q.get()}, {1, cache.get()}, {2, cache.get()}, {4, o.get()}, {5, partials.get()}};
  auto at = command("md_attention_f16", attentionBuffers, 3, md_attention_params{1, 1, 64, 15, 16, 0.125f, 3, 1, 0, 0});
  EXPECT_EQ(md::kernelContractProblem(at, at.params, 0),
            "md_attention_f16: kv_length 15 + count 3 - 1 is past the context 16");
  at = command("md_attention_f16", attentionBuffers, 3, md_attention_params{1, 1, 64, 14, 16, 0.125f, 3, 2, 0, 0});
  EXPECT_EQ(md::kernelContractProblem(at, at.params, 0),
            "md_attention_f16: buffer 5 (partials: count x heads x splits x (head_dim + 2) floats) needs 1584 bytes "
            "from byte 0, but the buffer has 4");
  at = command("md_attention_f32", attentionBuffers, 3, md_attention_params{1, 1, 288, 1, 16, 0.125f, 1, 1, 0, 0});
  EXPECT_EQ(md::kernelContractProblem(at, at.params, 0), "md_attention_f32: head_dim 288 is not from 1 to 256");
  at = command("md_attention_f16", attentionBuffers, 3, md_attention_params{1, 1, 0, 1, 16, 0.125f, 1, 1, 0, 0});
  EXPECT_EQ(md::kernelContractProblem(at, at.params, 0), "md_attention_f16: head_dim 0 is not from 1 to 256");
  at = command("md_attention_f16", attentionBuffers, 3, md_attention_params{1, 1, 64, 1, 16, 0.125f, 1, 1, 0, 0});
  expectThreadLimit(at, 256);
}

}  // namespace
