// transformer_kernels_test.cpp: the transformer kernels of
// metal/transformer_rows.metal on the emulated device against their CPU
// twins (native/core/transformer/ops.h), and their contracts. Run once per
// fiber order, like every kernel test: a missing barrier shows in one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "emulated_device.h"
#include "kernel_contracts.h"
#include "md_transformer.h"
#include "transformer/ops.h"

namespace {

md::emu::EmulatedDevice& device() {
  static md::emu::EmulatedDevice d;
  return d;
}

std::shared_ptr<md::Buffer> buffer(const std::vector<float>& values) {
  auto b = device().newBuffer(values.size() * 4);
  std::memcpy(b->contents(), values.data(), values.size() * 4);
  return b;
}

std::vector<float> contents(md::Buffer& b, size_t n) {
  std::vector<float> out(n);
  std::memcpy(out.data(), b.contents(), n * 4);
  return out;
}

std::vector<float> normals(size_t n, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Runs `kernel` with buffers at [[buffer(0)]], [[buffer(1)]] (and (3)), the
// params at [[buffer(2)]].
void run(const char* kernel, std::vector<std::pair<uint32_t, md::Buffer*>> buffers, md_rows_params params, uint32_t groups,
         uint32_t threads) {
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
          ASSERT_NEAR(g, cpu[i], kNormTolerance * std::fabs(cpu[i]) + 1e-30f) << "n " << n << " threads " << threads << " row " << r << " i " << i;
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

TEST(TransformerKernels, ContractsNameTheBufferThatIsTooSmall) {
  auto x = device().newBuffer(4 * 64 * 2), weight = device().newBuffer(4 * 64), out = device().newBuffer(4 * 64);
  md::DispatchCmd cmd;
  cmd.pipeline = &device().pipeline("md_rms_norm_f32");
  cmd.buffers[0] = md::BufferBinding{x.get(), 0, 0};
  cmd.buffers[1] = md::BufferBinding{weight.get(), 0, 1};
  cmd.buffers[2] = md::BufferBinding{out.get(), 0, 3};
  cmd.bufferCount = 3;
  const md_rows_params p{64, 2, 1e-5f, 0};
  std::memcpy(cmd.params, &p, sizeof p);
  cmd.paramsSize = sizeof p;
  cmd.paramsIndex = 2;
  EXPECT_EQ(md::kernelContractProblem(cmd, cmd.params, 0),
            "md_rms_norm_f32: buffer 3 (out: rows x n floats) needs 512 bytes from byte 0, but the buffer has 256");
  cmd.pipeline = &device().pipeline("md_add_f32");
  cmd.bufferCount = 2;
  EXPECT_EQ(md::kernelContractProblem(cmd, cmd.params, 0),
            "md_add_f32: buffer 1 (y: rows x n floats) needs 512 bytes from byte 0, but the buffer has 256");
}

}  // namespace
