// moe_kernels_test.cpp: the mixture-of-experts kernels (metal/moe.metal,
// md_matvec_id_*, md_matmul_id_*) on the emulated device against their
// CPU twins: the router's choice against chooseExperts, the grouping and
// the weighted sum against the CPU's loops, and each indexed kernel's rows
// against the plain kernel run on the chosen expert's matrix alone, bit
// for bit.
#include "md_exact_float.h"  // this file's float sums, like the kernels': unfused

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "emulated_kernels.h"
#include "kernel_contracts.h"
#include "md_transformer.h"
#include "random_weights.h"
#include "transformer/moe_ffn.h"

namespace {

using md::testing::buffer;
using md::testing::command;
using md::testing::contents;
using md::testing::device;
using md::testing::floatBits;
using md::testing::normals;
using md::testing::runWith;
using md::testing::typedBuffer;

// The router's choice for `count` tokens, by the kernel (a SIMD group per
// token, two to a threadgroup) and by chooseExperts.
void expectTheCpusChoice(const std::vector<float>& logits, uint32_t experts, uint32_t used, uint32_t count) {
  auto lb = buffer(logits);
  auto ids = device().newBuffer(size_t(count) * used * 4), weights = device().newBuffer(size_t(count) * used * 4);
  runWith("md_moe_route_f32", {{0, lb.get()}, {2, ids.get()}, {3, weights.get()}}, 1,
          md_moe_params{experts, used, count, 0}, (count + 1) / 2, 64);
  const auto gotIds = contents<uint32_t>(*ids, size_t(count) * used);
  const auto gotWeights = contents(*weights, size_t(count) * used);
  for (uint32_t t = 0; t < count; ++t) {
    std::vector<uint32_t> chosen(used);
    std::vector<float> expected(used);
    md::chooseExperts(logits.data() + size_t(t) * experts, experts, used, chosen.data(), expected.data());
    for (uint32_t j = 0; j < used; ++j) {
      ASSERT_EQ(gotIds[size_t(t) * used + j], chosen[j]) << experts << " experts, " << used << " used, token " << t;
      // The softmax's sum in another order: a few roundings of 2^-24 apart.
      EXPECT_NEAR(gotWeights[size_t(t) * used + j], expected[j], 1e-6f) << "token " << t << " slot " << j;
    }
  }
}

TEST(MoeKernels, TheRouterChoosesTheCpusExpertsWithItsWeights) {
  for (uint32_t experts : {8u, 60u, 128u, MD_MOE_MAX_EXPERTS}) {
    for (uint32_t used : {1u, 2u, 8u, MD_MOE_MAX_USED}) {
      if (used > experts) continue;
      const uint32_t count = 5;
      expectTheCpusChoice(normals(size_t(count) * experts, experts * 31 + used, 2.0f), experts, used, count);
    }
  }
}

TEST(MoeKernels, TheRouterBreaksTiesToTheLowerExpertAsTheCpu) {
  // Token 0: all equal; token 1: experts 3, 35 and 67 tied best (other lanes, other places in a lane).
  const uint32_t experts = 96, used = 4;
  std::vector<float> logits(2 * experts, 0.25f);
  for (uint32_t e : {67u, 35u, 3u}) logits[experts + e] = 2.0f;
  expectTheCpusChoice(logits, experts, used, 2);
  auto lb = buffer(logits);
  auto ids = device().newBuffer(2 * used * 4), weights = device().newBuffer(2 * used * 4);
  runWith("md_moe_route_f32", {{0, lb.get()}, {2, ids.get()}, {3, weights.get()}}, 1,
          md_moe_params{experts, used, 2, 0}, 1, 64);
  EXPECT_EQ(contents<uint32_t>(*ids, 2 * used), (std::vector<uint32_t>{0, 1, 2, 3, 3, 35, 67, 0}));
}

// Token t's `used` distinct experts: the first `common` of them are chosen
// by every token (an expert with more pairs than a tile of tokens), the
// rest spread.
std::vector<uint32_t> someChoices(uint32_t count, uint32_t used, uint32_t experts, uint32_t seed) {
  std::vector<uint32_t> ids;
  for (uint32_t t = 0; t < count; ++t) {
    std::vector<uint32_t> order(experts);
    for (uint32_t e = 0; e < experts; ++e) order[e] = e;
    std::mt19937 rng(seed + t);
    std::shuffle(order.begin() + 1, order.end(), rng);  // expert 0 first: chosen by every token
    ids.insert(ids.end(), order.begin(), order.begin() + used);
  }
  return ids;
}

TEST(MoeKernels, TheGroupingListsEachExpertsPairsInOrderAndTheSumAddsInSlotOrder) {
  const uint32_t count = 7, used = 3, experts = 70, dim = 37;
  const auto ids = someChoices(count, used, experts, 5);
  auto ib = typedBuffer(ids);
  auto counts = device().newBuffer(experts * 4), pairs = device().newBuffer(size_t(experts) * count * 4);
  runWith("md_moe_group_u32", {{0, ib.get()}, {2, counts.get()}, {3, pairs.get()}}, 1,
          md_moe_params{experts, used, count, 0}, 2, 64);
  const auto gotCounts = contents<uint32_t>(*counts, experts);
  const auto gotPairs = contents<uint32_t>(*pairs, size_t(experts) * count);
  for (uint32_t e = 0; e < experts; ++e) {
    std::vector<uint32_t> mine;
    for (uint32_t p = 0; p < count * used; ++p)
      if (ids[p] == e) mine.push_back(p);
    ASSERT_EQ(gotCounts[e], mine.size()) << "expert " << e;
    for (size_t i = 0; i < mine.size(); ++i) EXPECT_EQ(gotPairs[size_t(e) * count + i], mine[i]) << "expert " << e;
  }

  const auto outputs = normals(size_t(count) * used * dim, 3, 1.0f), weights = normals(size_t(count) * used, 4, 0.5f);
  const auto hidden = normals(size_t(count) * dim, 6, 1.0f);
  auto ob = buffer(outputs), wb = buffer(weights), hb = buffer(hidden);
  runWith("md_moe_sum_f32", {{0, ob.get()}, {1, wb.get()}, {3, hb.get()}}, 2, md_moe_params{experts, used, count, dim},
          (count * dim + 63) / 64, 64);
  const auto got = contents(*hb, size_t(count) * dim);
  for (uint32_t t = 0; t < count; ++t) {
    for (uint32_t i = 0; i < dim; ++i) {
      float sum = 0;
      for (uint32_t j = 0; j < used; ++j) {
        const float product = outputs[(size_t(t) * used + j) * dim + i] * weights[size_t(t) * used + j];
        sum = j == 0 ? product : sum + product;
      }
      EXPECT_EQ(floatBits(got[size_t(t) * dim + i]), floatBits(hidden[size_t(t) * dim + i] + sum))
          << "token " << t << " value " << i;
    }
  }
}

// `experts` random matrices of rows x cols of `type`, one after another.
std::vector<uint8_t> stackedExperts(md::TensorType type, uint32_t experts, uint32_t rows, uint32_t cols,
                                    uint32_t seed) {
  std::vector<uint8_t> all;
  for (uint32_t e = 0; e < experts; ++e) {
    const auto one = randomRows(type, rows, cols, seed + e);
    all.insert(all.end(), one.begin(), one.end());
  }
  return all;
}

std::shared_ptr<md::Buffer> bytesBuffer(const uint8_t* data, size_t n) {
  auto b = device().newBuffer(n);
  std::memcpy(b->contents(), data, n);
  return b;
}

uint32_t testCols(md::TensorType type) { return md::tensorTypeInfo(type).blockValues == 256 ? 512 : 96; }

// Each pair's row of the indexed kernel is md_matvec_*'s on its expert's
// matrix alone (SwiGLU: gate and up; store: x a row per pair); a pair whose
// id is no expert is left alone.
TEST(MoeKernels, TheIndexedMatvecGivesEachPairTheBitsOfItsExpertsMatrixAlone) {
  for (const TypeCase& t : kWeightTypes) {
    const uint32_t experts = 5, used = 2, count = 3, pairs = count * used, rows = 16, cols = testCols(t.type);
    const uint32_t simdgroups = 2;
    const auto gates = stackedExperts(t.type, experts, rows, cols, 100),
               ups = stackedExperts(t.type, experts, rows, cols, 200);
    const uint32_t expertBytes = uint32_t(gates.size() / experts);
    auto gb = bytesBuffer(gates.data(), gates.size()), ub = bytesBuffer(ups.data(), ups.size());
    auto ids = someChoices(count, used, experts, 9);
    for (uint32_t mode : {MD_MATVEC_SWIGLU, MD_MATVEC_STORE}) {
      const bool perPair = mode == MD_MATVEC_STORE;
      if (perPair) ids[pairs - 1] = experts;  // no expert: its row keeps what it held
      const auto x = normals(size_t(perPair ? pairs : count) * cols, cols + mode, 1.0f);
      const auto start = normals(size_t(pairs) * rows, 7, 1.0f);
      auto xb = buffer(x), yb = buffer(start), ib = typedBuffer(ids);
      const md_matvec_id_params p{cols, mode, rows, pairs, used, perPair ? 1u : 0u, experts, expertBytes, 0, 0};
      runWith((std::string("md_matvec_id_") + t.suffix).c_str(),
              {{0, gb.get()}, {1, xb.get()}, {3, yb.get()}, {4, ub.get()}, {5, ib.get()}}, 2, p,
              pairs * MD_MATVEC_ID_GROUPS(rows, simdgroups), 32 * simdgroups);
      const auto got = contents(*yb, size_t(pairs) * rows);
      for (uint32_t pair = 0; pair < pairs; ++pair) {
        const uint32_t e = ids[pair];
        if (e >= experts) {
          for (uint32_t r = 0; r < rows; ++r)
            EXPECT_EQ(floatBits(got[size_t(pair) * rows + r]), floatBits(start[size_t(pair) * rows + r]));
          continue;
        }
        auto g1 = bytesBuffer(gates.data() + size_t(e) * expertBytes, expertBytes);
        auto u1 = bytesBuffer(ups.data() + size_t(e) * expertBytes, expertBytes);
        const size_t xRow = perPair ? pair : pair / used;
        auto x1 = buffer(std::vector<float>(x.begin() + xRow * cols, x.begin() + (xRow + 1) * cols));
        auto y1 = device().newBuffer(size_t(rows) * 4);
        runWith(
            (std::string("md_matvec_") + t.suffix).c_str(),
            {{0, g1.get()}, {1, x1.get()}, {3, y1.get()}, {4, u1.get()}, {5, y1.get()}, {6, g1.get()}, {7, y1.get()}},
            2, md_matvec_params{cols, mode, {rows, perPair ? 0u : rows, 0}, 1, 0, 0},
            MD_MATVEC_ID_GROUPS(rows, simdgroups), 32 * simdgroups);
        const auto alone = contents(*y1, rows);
        for (uint32_t r = 0; r < rows; ++r)
          ASSERT_EQ(floatBits(got[size_t(pair) * rows + r]), floatBits(alone[r]))
              << t.suffix << " mode " << mode << " pair " << pair << " row " << r;
      }
    }
  }
}

// Each expert's rows of the grouped kernel are md_matmul_*'s on its
// matrix alone over its pairs' x rows, gathered in pair order: the same
// tiles, the same bits. Expert 0 has every token (two tiles of tokens);
// 70 rows are two tiles of rows, the second part empty.
TEST(MoeKernels, TheGroupedMatmulGivesEachExpertsPairsTheBitsOfItsMatrixAlone) {
  for (const TypeCase& t : kWeightTypes) {
    const uint32_t experts = 4, used = 2, count = 37, pairs = count * used, rows = 70, cols = testCols(t.type);
    const auto weights = stackedExperts(t.type, experts, rows, cols, 300);
    const uint32_t expertBytes = uint32_t(weights.size() / experts);
    auto wb = bytesBuffer(weights.data(), weights.size());
    const auto ids = someChoices(count, used, experts, 21);
    auto ib = typedBuffer(ids);
    auto counts = device().newBuffer(experts * 4), pairList = device().newBuffer(size_t(experts) * count * 4);
    runWith("md_moe_group_u32", {{0, ib.get()}, {2, counts.get()}, {3, pairList.get()}}, 1,
            md_moe_params{experts, used, count, 0}, 1, 64);
    for (const bool perPair : {false, true}) {
      const auto x = normals(size_t(perPair ? pairs : count) * cols, cols + perPair, 1.0f);
      auto xb = buffer(x), yb = device().newBuffer(size_t(pairs) * rows * 4);
      const md_matmul_id_params p{rows, cols, count, used, perPair ? 1u : 0u, experts, expertBytes, 0};
      const uint32_t tiles =
          (rows + MD_MATMUL_ROWS - 1) / MD_MATMUL_ROWS * ((count + MD_MATMUL_TOKENS - 1) / MD_MATMUL_TOKENS);
      runWith((std::string("md_matmul_id_") + t.suffix).c_str(),
              {{0, wb.get()}, {1, xb.get()}, {3, yb.get()}, {4, counts.get()}, {5, pairList.get()}}, 2, p,
              experts * tiles, MD_MATMUL_THREADS);
      const auto got = contents(*yb, size_t(pairs) * rows);
      for (uint32_t e = 0; e < experts; ++e) {
        std::vector<uint32_t> mine;
        for (uint32_t pair = 0; pair < pairs; ++pair)
          if (ids[pair] == e) mine.push_back(pair);
        if (e == 0) {
          ASSERT_EQ(mine.size(), count);
        }
        if (mine.empty()) continue;
        std::vector<float> gathered;
        for (uint32_t pair : mine) {
          const size_t row = perPair ? pair : pair / used;
          gathered.insert(gathered.end(), x.begin() + row * cols, x.begin() + (row + 1) * cols);
        }
        const uint32_t n = uint32_t(mine.size());
        auto w1 = bytesBuffer(weights.data() + size_t(e) * expertBytes, expertBytes);
        auto x1 = buffer(gathered), y1 = device().newBuffer(size_t(n) * rows * 4);
        runWith((std::string("md_matmul_") + t.suffix).c_str(), {{0, w1.get()}, {1, x1.get()}, {3, y1.get()}}, 2,
                md_matmul_params{rows, cols, n, 0},
                (rows + MD_MATMUL_ROWS - 1) / MD_MATMUL_ROWS * ((n + MD_MATMUL_TOKENS - 1) / MD_MATMUL_TOKENS),
                MD_MATMUL_THREADS);
        const auto alone = contents(*y1, size_t(n) * rows);
        for (uint32_t i = 0; i < n; ++i)
          for (uint32_t r = 0; r < rows; ++r)
            ASSERT_EQ(floatBits(got[size_t(mine[i]) * rows + r]), floatBits(alone[size_t(i) * rows + r]))
                << t.suffix << (perPair ? " x per pair" : " x per token") << " expert " << e << " pair " << mine[i]
                << " row " << r;
      }
    }
  }
}

// The contracts name what a table got wrong: an expert's size that is not
// its rows', a buffer too small for the experts or the pairs, a grid too
// small for the pairs, a router asked for more experts than it holds.
TEST(MoeKernels, ContractsNameTheExpertsSizeTheBuffersAndTheGrid) {
  const uint32_t rows = 8, cols = 64, expertBytes = rows * 2 * 18;  // Q4_0: 2 blocks of 18 bytes per row
  auto w = device().newBuffer(4 * expertBytes), x = device().newBuffer(4 * 2 * cols),
       y = device().newBuffer(4 * 2 * rows), ids = device().newBuffer(4 * 2), one = device().newBuffer(4);
  const std::vector<std::pair<uint32_t, md::Buffer*>> bound = {
      {0, w.get()}, {1, x.get()}, {3, y.get()}, {4, one.get()}, {5, ids.get()}};
  auto mv = command("md_matvec_id_q4_0", bound, 2,
                    md_matvec_id_params{cols, MD_MATVEC_STORE, rows, 2, 2, 1, 4, expertBytes, 0, 0});
  mv.threadgroups = 2;
  mv.threadsPerThreadgroup = 128;
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0), "");
  mv.threadgroups = 1;
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0),
            "md_matvec_id_q4_0: 1 threadgroups: expected at least 2, MD_MATVEC_ID_GROUPS(rows, SIMD groups) per pair");
  mv = command("md_matvec_id_q4_0", bound, 2,
               md_matvec_id_params{cols, MD_MATVEC_STORE, rows, 2, 2, 1, 4, expertBytes - 4, 0, 0});
  mv.threadgroups = 2;
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0),
            "md_matvec_id_q4_0: expert_bytes is 284, but one expert's rows x cols is 288 bytes");
  mv = command("md_matvec_id_q4_0", bound, 2,
               md_matvec_id_params{cols, MD_MATVEC_STORE, rows, 2, 2, 1, 5, expertBytes, 0, 0});
  mv.threadgroups = 2;
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0),
            "md_matvec_id_q4_0: buffer 0 (w: experts x expert_bytes) needs 1440 bytes from byte 0, but the buffer has "
            "1152");
  mv = command("md_matvec_id_q4_0", bound, 2,
               md_matvec_id_params{cols, MD_MATVEC_STORE, rows, 3, 2, 1, 4, expertBytes, 0, 0});
  mv.threadgroups = 3;
  EXPECT_EQ(md::kernelContractProblem(mv, mv.params, 0),
            "md_matvec_id_q4_0: pairs 3 is not a whole number of tokens of used 2 of 4 experts");

  auto counts = device().newBuffer(4 * 4), pairs = device().newBuffer(4 * 4);
  auto mm =
      command("md_matmul_id_q4_0", {{0, w.get()}, {1, x.get()}, {3, y.get()}, {4, counts.get()}, {5, pairs.get()}}, 2,
              md_matmul_id_params{rows, cols, 1, 2, 1, 4, expertBytes, 0});
  mm.threadgroups = 4;
  mm.threadsPerThreadgroup = MD_MATMUL_THREADS;
  EXPECT_EQ(md::kernelContractProblem(mm, mm.params, 0), "");
  mm.threadgroups = 1;
  EXPECT_EQ(md::kernelContractProblem(mm, mm.params, 0),
            "md_matmul_id_q4_0: 1 threadgroups: expected experts x tiles of 64 rows x 32 tokens, 4");
  mm = command("md_matmul_id_q4_0", {{0, w.get()}, {1, x.get()}, {3, y.get()}, {4, counts.get()}, {5, pairs.get()}}, 2,
               md_matmul_id_params{rows, cols, 2, 2, 1, 4, expertBytes, 0});
  mm.threadgroups = 4;
  mm.threadsPerThreadgroup = MD_MATMUL_THREADS;
  EXPECT_EQ(md::kernelContractProblem(mm, mm.params, 0),
            "md_matmul_id_q4_0: buffer 1 (x: count x used x cols floats) needs 1024 bytes from byte 0, but the buffer "
            "has 512");

  auto logits = device().newBuffer(4 * 8);
  auto route =
      command("md_moe_route_f32", {{0, logits.get()}, {2, ids.get()}, {3, ids.get()}}, 1, md_moe_params{8, 9, 1, 0});
  route.threadsPerThreadgroup = 32;
  EXPECT_EQ(md::kernelContractProblem(route, route.params, 0),
            "md_moe_route_f32: used 9 is not from 1 to experts and MD_MOE_MAX_USED (16)");
  route = command("md_moe_route_f32", {{0, logits.get()}, {2, ids.get()}, {3, ids.get()}}, 1,
                  md_moe_params{MD_MOE_MAX_EXPERTS + 1, 2, 1, 0});
  route.threadsPerThreadgroup = 32;
  EXPECT_EQ(md::kernelContractProblem(route, route.params, 0), "md_moe_route_f32: experts 257 is not from 1 to 256");
}

}  // namespace
