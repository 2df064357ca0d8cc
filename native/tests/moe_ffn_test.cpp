// moe_ffn_test.cpp: the mixture-of-experts FFN on the CPU (moe_ffn.h):
// the router's choice, the sum of the chosen experts against a double
// reference, only the chosen experts' rows read (the others are NaN, and
// the outputs stay finite), and a batch grouped by expert giving each token
// the bits it gets alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "quant/dot.h"
#include "thread_pool.h"
#include "transformer/moe_ffn.h"

namespace md {
namespace {

TEST(MoeFfn, TheRouterPicksTheMostProbableExpertsAndNormalisesTheirWeights) {
  const float logits[6] = {0.5f, 3.0f, -1.0f, 3.0f, 2.0f, 0.0f};
  uint32_t chosen[3];
  float weights[3];
  chooseExperts(logits, 6, 3, chosen, weights);
  // Descending probability; the tie of experts 1 and 3 goes to the lower index.
  EXPECT_EQ(chosen[0], 1u);
  EXPECT_EQ(chosen[1], 3u);
  EXPECT_EQ(chosen[2], 4u);
  const double e1 = std::exp(3.0), e4 = std::exp(2.0), sum = 2 * e1 + e4;
  EXPECT_NEAR(weights[0], e1 / sum, 1e-6);
  EXPECT_NEAR(weights[1], e1 / sum, 1e-6);
  EXPECT_NEAR(weights[2], e4 / sum, 1e-6);
  EXPECT_NEAR(weights[0] + weights[1] + weights[2], 1.0, 1e-6);
}

struct Experts {
  ModelConfig c;
  std::vector<float> router, gates, ups, downs;
  TensorView view(std::vector<float>& values, uint64_t cols, uint64_t rows) {
    TensorView v;
    v.type = TensorType::F32;
    v.cols = cols;
    v.rows = rows;
    v.data = reinterpret_cast<const uint8_t*>(values.data());
    v.rowBytes = cols * 4;
    return v;
  }
};

Experts makeExperts(uint32_t seed) {
  Experts e;
  e.c.embeddingLength = 64;
  e.c.expertCount = 6;
  e.c.expertUsedCount = 2;
  e.c.expertFfnLength = 32;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto fill = [&](std::vector<float>& v, size_t n, float sigma) {
    v.resize(n);
    for (float& x : v) x = normal(rng) * sigma;
  };
  const uint32_t d = 64, n = 6, f = 32;
  fill(e.router, size_t(n) * d, 0.5f);
  fill(e.gates, size_t(n) * f * d, 0.2f);
  fill(e.ups, size_t(n) * f * d, 0.2f);
  fill(e.downs, size_t(n) * d * f, 0.2f);
  return e;
}

TEST(MoeFfn, TheChosenExpertsAloneAreReadAndSummedAsTheReferenceSumsThem) {
  Experts e = makeExperts(7);
  const uint32_t d = 64, n = 6, f = 32, used = 2;
  const int64_t count = 5;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(size_t(count) * d), hidden(size_t(count) * d);
  for (float& v : x) v = normal(rng);
  for (float& v : hidden) v = normal(rng);
  // Which experts each token takes, from the router alone (double).
  std::vector<bool> chosenByAny(n, false);
  std::vector<std::vector<uint32_t>> chosen(count, std::vector<uint32_t>(used));
  std::vector<std::vector<float>> weights(count, std::vector<float>(used));
  for (int64_t t = 0; t < count; ++t) {
    float logits[6];
    for (uint32_t k = 0; k < n; ++k) {
      double dot = 0;
      for (uint32_t i = 0; i < d; ++i) dot += double(e.router[k * d + i]) * x[size_t(t) * d + i];
      logits[k] = float(dot);
    }
    chooseExperts(logits, n, used, chosen[size_t(t)].data(), weights[size_t(t)].data());
    for (uint32_t k : chosen[size_t(t)]) chosenByAny[k] = true;
  }
  // The experts no token chose: NaN, which any read would carry into the output.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  int poisoned = 0;
  for (uint32_t k = 0; k < n; ++k) {
    if (chosenByAny[k]) continue;
    ++poisoned;
    std::fill(e.gates.begin() + k * f * d, e.gates.begin() + (k + 1) * f * d, nan);
    std::fill(e.ups.begin() + k * f * d, e.ups.begin() + (k + 1) * f * d, nan);
    std::fill(e.downs.begin() + k * d * f, e.downs.begin() + (k + 1) * d * f, nan);
  }
  ASSERT_GT(poisoned, 0) << "every expert was chosen: nothing shows that the others are not read";

  const TensorView router = e.view(e.router, d, n), gates = e.view(e.gates, d, n * f), ups = e.view(e.ups, d, n * f),
                   downs = e.view(e.downs, f, n * d);
  const MoeWeights w{&router, &gates, &ups, &downs};
  ThreadPool pool(2);
  const DotTable& dots = bestDotTable();
  MoeScratch scratch;
  std::vector<float> batched = hidden;
  moeFfn(pool, dots, e.c, w, x.data(), count, batched.data(), scratch);

  for (int64_t t = 0; t < count; ++t) {
    // One token alone: the same bits as in the batch.
    std::vector<float> alone(hidden.begin() + t * d, hidden.begin() + (t + 1) * d);
    MoeScratch own;
    moeFfn(pool, dots, e.c, w, x.data() + t * d, 1, alone.data(), own);
    for (uint32_t i = 0; i < d; ++i) ASSERT_EQ(alone[i], batched[size_t(t) * d + i]) << "token " << t << " value " << i;
    // The double reference: hidden + sum_j w_j * down_j(silu(gate_j x) * up_j x).
    for (uint32_t i = 0; i < d; ++i) {
      double expected = hidden[size_t(t) * d + i];
      for (uint32_t j = 0; j < used; ++j) {
        const uint32_t k = chosen[size_t(t)][j];
        double out = 0;
        for (uint32_t r = 0; r < f; ++r) {
          double g = 0, u = 0;
          for (uint32_t c = 0; c < d; ++c) {
            g += double(e.gates[(size_t(k) * f + r) * d + c]) * x[size_t(t) * d + c];
            u += double(e.ups[(size_t(k) * f + r) * d + c]) * x[size_t(t) * d + c];
          }
          out += double(e.downs[(size_t(k) * d + i) * f + r]) * (g / (1 + std::exp(-g)) * u);
        }
        expected += weights[size_t(t)][j] * out;
      }
      ASSERT_TRUE(std::isfinite(batched[size_t(t) * d + i]));
      EXPECT_NEAR(batched[size_t(t) * d + i], expected, 1e-4 * (1 + std::fabs(expected))) << "token " << t;
    }
  }
}

}  // namespace
}  // namespace md
