// quant_dot_test.cpp: every dot kernel, on every instruction set this
// machine runs (portable and AVX2 on x86-64; portable and NEON under
// qemu-user for arm64), against the dot product of the dequantized rows
// in double.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "float16.h"
#include "quant/blocks.h"
#include "quant/convert_rows.h"
#include "quant/cpu_features.h"
#include "quant/dot.h"
#include "quant/dot_neon_f16.h"
#include "quant/repack.h"

namespace md {
namespace {

// Random bytes with every scale field set to a sane float16, so the values
// are finite and of the size real weights have.
std::vector<uint8_t> randomRow(TensorType type, int64_t n, std::mt19937& rng) {
  const TensorTypeInfo& info = tensorTypeInfo(type);
  std::vector<uint8_t> bytes(rowBytes(info, uint64_t(n)));
  for (uint8_t& b : bytes) b = uint8_t(rng());
  std::uniform_real_distribution<float> scale(0.001f, 0.02f), value(-1.f, 1.f);
  auto half = [&](float f) { return halfFromFloat(f); };
  const int64_t nb = n / info.blockValues;
  uint8_t* p = bytes.data();
  for (int64_t i = 0; i < nb; ++i, p += info.blockBytes) {
    switch (type) {
      case TensorType::F32: {
        float f = value(rng);
        std::memcpy(p, &f, 4);
        break;
      }
      case TensorType::F16: {
        uint16_t h = half(value(rng));
        std::memcpy(p, &h, 2);
        break;
      }
      case TensorType::BF16: {
        uint16_t h = bf16FromFloat(value(rng));
        std::memcpy(p, &h, 2);
        break;
      }
      case TensorType::Q4_0: reinterpret_cast<blocks::Q4_0*>(p)->d = half(scale(rng)); break;
      case TensorType::IQ4_NL: reinterpret_cast<blocks::IQ4_NL*>(p)->d = half(scale(rng) / 16); break;
      case TensorType::IQ4_XS: reinterpret_cast<blocks::IQ4_XS*>(p)->d = half(scale(rng) / 256); break;
      case TensorType::Q5_0: reinterpret_cast<blocks::Q5_0*>(p)->d = half(scale(rng)); break;
      case TensorType::Q8_0: reinterpret_cast<blocks::Q8_0*>(p)->d = half(scale(rng)); break;
      case TensorType::Q4_1: {
        auto* b = reinterpret_cast<blocks::Q4_1*>(p);
        b->d = half(scale(rng));
        b->m = half(-scale(rng) * 8);
        break;
      }
      case TensorType::Q5_1: {
        auto* b = reinterpret_cast<blocks::Q5_1*>(p);
        b->d = half(scale(rng));
        b->m = half(-scale(rng) * 16);
        break;
      }
      case TensorType::Q2_K: {
        auto* b = reinterpret_cast<blocks::Q2_K*>(p);
        b->d = half(scale(rng) / 4);
        b->dmin = half(scale(rng) / 4);
        break;
      }
      case TensorType::Q3_K: reinterpret_cast<blocks::Q3_K*>(p)->d = half(scale(rng) / 16); break;
      case TensorType::Q4_K:
      case TensorType::Q5_K: {
        auto* b = reinterpret_cast<blocks::Q4_K*>(p);  // d and dmin lead both layouts
        b->d = half(scale(rng) / 16);
        b->dmin = half(scale(rng) / 16);
        break;
      }
      case TensorType::Q6_K: {
        auto* b = reinterpret_cast<blocks::Q6_K*>(p);
        b->d = half(scale(rng) / 64);
        break;
      }
      default: ADD_FAILURE() << "randomRow: unexpected type";
    }
  }
  return bytes;
}

std::vector<const DotTable*> availableTables() {
  std::vector<const DotTable*> tables{portableDotTable()};
  if (const DotTable* t = avx2DotTable()) tables.push_back(t);
  if (const DotTable* t = avxVnniDotTable()) tables.push_back(t);
  if (const DotTable* t = avx512DotTable()) tables.push_back(t);
  if (const DotTable* t = amxDotTable()) tables.push_back(t);
  if (const DotTable* t = neonDotTable()) tables.push_back(t);
  if (const DotTable* t = neonI8mmDotTable()) tables.push_back(t);
  return tables;
}

// Every tile shape (1-8 rows x 1-4 tokens) of kTileRows weight rows and
// kTileTokens activation rows gives the bits of the single row dots.
void expectTilesAreRowDots(const DotTable& table, TensorType type, const uint8_t* w, size_t wBytes, const uint8_t* a,
                           size_t aBytes, int64_t n) {
  for (int rows = 1; rows <= kTileRows; ++rows)
    for (int tokens = 1; tokens <= kTileTokens; ++tokens) {
      float out[kTileRows * kTileTokens];
      table.forType(type)(w, wBytes, rows, a, aBytes, tokens, n, out, kTileTokens);
      for (int r = 0; r < rows; ++r)
        for (int t = 0; t < tokens; ++t)
          EXPECT_EQ(out[r * kTileTokens + t], table.dot(type, w + r * wBytes, a + t * aBytes, n))
              << table.isa << " " << tensorTypeInfo(type).name << " n=" << n << " tile " << rows << "x" << tokens
              << " at " << r << "," << t;
    }
}

class DotKernelTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(DotKernelTest, EveryIsaMatchesTheDequantizedDotProduct) {
  const TensorType type = GetParam();
  const TensorType actType = activationTypeFor(type);
  std::mt19937 rng(1234 + uint32_t(type));
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t n : {256, 512, 2048}) {
    const std::vector<uint8_t> w = randomRow(type, n, rng);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    std::vector<uint8_t> a(rowBytes(tensorTypeInfo(actType), uint64_t(n)));
    quantizeActivations(actType, x.data(), a.data(), n);
    std::vector<float> wf(static_cast<size_t>(n)), af(static_cast<size_t>(n));
    dequantizeRow(type, w.data(), wf.data(), n);
    dequantizeRow(actType, a.data(), af.data(), n);
    double expected = 0, magnitude = 0;
    for (int64_t i = 0; i < n; ++i) {
      expected += double(wf[size_t(i)]) * af[size_t(i)];
      magnitude += std::fabs(double(wf[size_t(i)]) * af[size_t(i)]);
    }
    // The integer parts are exact; float rounding of per-block terms (and,
    // for Q8_1, its float16 sum term) bounds the difference.
    const double tolerance = magnitude * (actType == TensorType::Q8_1 ? 2e-3 : 2e-5) + 1e-6;
    for (const DotTable* table : availableTables()) {
      const double got = table->dot(type, w.data(), a.data(), n);
      EXPECT_NEAR(got, expected, tolerance) << table->isa << " " << tensorTypeInfo(type).name << " n=" << n;
    }
  }
}

TEST_P(DotKernelTest, EveryTileShapeGivesTheBitsOfItsRowDots) {
  const TensorType type = GetParam();
  const TensorType actType = activationTypeFor(type);
  std::mt19937 rng(99 + uint32_t(type));
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t n = 512;
  const size_t wBytes = rowBytes(tensorTypeInfo(type), n), aBytes = rowBytes(tensorTypeInfo(actType), n);
  std::vector<uint8_t> w, a;
  for (int r = 0; r < kTileRows; ++r) {
    const std::vector<uint8_t> row = randomRow(type, n, rng);
    w.insert(w.end(), row.begin(), row.end());
  }
  for (int t = 0; t < kTileTokens; ++t) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    std::vector<uint8_t> q(aBytes);
    quantizeActivations(actType, x.data(), q.data(), n);
    a.insert(a.end(), q.begin(), q.end());
  }
  for (const DotTable* table : availableTables())
    expectTilesAreRowDots(*table, type, w.data(), wBytes, a.data(), aBytes, n);
}

// Every weight type of the one list (metal/md_blocks.h).
#define MD_DOT_TEST_TYPE(NAME, suffix, id, values, bytes) TensorType::NAME,
constexpr TensorType kWeightTypes[] = {MD_WEIGHT_TYPES(MD_DOT_TEST_TYPE)};
#undef MD_DOT_TEST_TYPE

TEST(DotTables, EveryWeightTypeHasADotProductOnEveryIsa) {
  for (const DotTable* table : availableTables())
    for (TensorType type : kWeightTypes)
      EXPECT_NE(table->forType(type), nullptr) << table->isa << " " << tensorTypeInfo(type).name;
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, DotKernelTest, ::testing::ValuesIn(kWeightTypes),
                         [](const auto& info) { return std::string(tensorTypeInfo(info.param).name); });

// Float rows have no blocks: a model's head dimension (8, 80...) or FFN
// (172) is any length. Every length from 1 to 80 and a few real ones, in
// buffers of exactly that length (so a read past the end fails under ASan),
// against the double sum, and every tile shape against its row dots.
TEST(DotTables, FloatRowsOfEveryLengthMatchTheDoubleSum) {
  std::mt19937 rng(77);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 80; ++n) lengths.push_back(n);
  for (int64_t n : {172, 255, 257, 688}) lengths.push_back(n);
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    const TensorTypeInfo& info = tensorTypeInfo(type);
    for (int64_t n : lengths) {
      const size_t bytes = rowBytes(info, uint64_t(n));
      ASSERT_EQ(bytes, size_t(n) * info.blockBytes);
      std::vector<uint8_t> w(bytes * kTileRows), a(bytes * kTileTokens);
      std::vector<float> values(static_cast<size_t>(n));
      for (size_t r = 0; r < kTileRows + kTileTokens; ++r) {
        for (float& v : values) v = normal(rng);
        uint8_t* row = r < kTileRows ? w.data() + r * bytes : a.data() + (r - kTileRows) * bytes;
        quantizeActivations(type, values.data(), row, n);
      }
      for (const DotTable* table : availableTables()) {
        for (int r = 0; r < kTileRows; ++r) {
          std::vector<float> wf(static_cast<size_t>(n)), af(static_cast<size_t>(n));
          dequantizeRow(type, w.data() + r * bytes, wf.data(), n);
          dequantizeRow(type, a.data(), af.data(), n);
          double expected = 0, magnitude = 0;
          for (int64_t i = 0; i < n; ++i) {
            expected += double(wf[size_t(i)]) * af[size_t(i)];
            magnitude += std::fabs(double(wf[size_t(i)]) * af[size_t(i)]);
          }
          EXPECT_NEAR(table->dot(type, w.data() + r * bytes, a.data(), n), expected, magnitude * 1e-6 + 1e-7)
              << table->isa << " " << info.name << " n=" << n << " row " << r;
        }
        expectTilesAreRowDots(*table, type, w.data(), bytes, a.data(), bytes, n);
      }
      // Tables with the same float lanes give the same bits: x86's 8 lanes
      // whatever the extension; NEON's pair of 4 (their F16 tile is the
      // fmlal one on a CPU with FEAT_FHM, as the next test holds).
      for (const std::vector<const DotTable*>& same :
           {std::vector<const DotTable*>{avx2DotTable(), avxVnniDotTable(), avx512DotTable(), amxDotTable()},
            std::vector<const DotTable*>{neonDotTable(), neonI8mmDotTable()}}) {
        const DotTable* first = nullptr;
        for (const DotTable* table : same) {
          if (table == nullptr) continue;
          if (first == nullptr) {
            first = table;
            continue;
          }
          float ours[kTileRows * kTileTokens], theirs[kTileRows * kTileTokens];
          table->forType(type)(w.data(), bytes, kTileRows, a.data(), bytes, kTileTokens, n, ours, kTileTokens);
          first->forType(type)(w.data(), bytes, kTileRows, a.data(), bytes, kTileTokens, n, theirs, kTileTokens);
          EXPECT_EQ(std::memcmp(ours, theirs, sizeof ours), 0)
              << table->isa << " against " << first->isa << " " << info.name << " n=" << n;
        }
      }
    }
  }
}

// The NEON table's F16 tile is fmlal's where the CPU has FEAT_FHM (every
// Apple silicon chip), the converting one elsewhere; both give the same
// bits for every shape of tile (qemu's default CPU has the extension; the
// cross-build script also runs these tests on Cortex-A76, which lacks it).
TEST(DotTables, NeonF16TilesOnFmlalAndByConversionGiveTheSameBits) {
#if defined(__aarch64__)
  const TileDot converting = neonConvertingF16Tile(), fmlal = neonFmlalF16Tile();
  ASSERT_NE(converting, nullptr);
  ASSERT_EQ(fmlal != nullptr, cpuHasNeonFhm());
  EXPECT_EQ(neonDotTable()->f16, fmlal != nullptr ? fmlal : converting);
  if (neonI8mmDotTable() != nullptr) {
    EXPECT_EQ(neonI8mmDotTable()->f16, fmlal);
  }
  if (fmlal == nullptr) return;  // this CPU runs the converting tile alone (above)
  std::mt19937 rng(78);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t n : {1, 7, 8, 9, 63, 64, 65, 72, 200, 688}) {
    const size_t bytes = size_t(n) * 2;
    std::vector<uint8_t> w(bytes * kTileRows), a(bytes * kTileTokens);
    std::vector<float> values(static_cast<size_t>(n));
    for (size_t r = 0; r < kTileRows + kTileTokens; ++r) {
      for (float& v : values) v = normal(rng);
      quantizeActivations(TensorType::F16, values.data(), r < kTileRows ? &w[r * bytes] : &a[(r - kTileRows) * bytes],
                          n);
    }
    for (int rows = 1; rows <= kTileRows; ++rows)
      for (int tokens = 1; tokens <= kTileTokens; ++tokens) {
        float ours[kTileRows * kTileTokens] = {}, theirs[kTileRows * kTileTokens] = {};
        fmlal(w.data(), bytes, rows, a.data(), bytes, tokens, n, ours, kTileTokens);
        converting(w.data(), bytes, rows, a.data(), bytes, tokens, n, theirs, kTileTokens);
        EXPECT_EQ(std::memcmp(ours, theirs, sizeof ours), 0) << "n=" << n << " tile " << rows << "x" << tokens;
      }
  }
#else
  EXPECT_EQ(neonConvertingF16Tile(), nullptr);
  EXPECT_EQ(neonFmlalF16Tile(), nullptr);
#endif
}

TEST(DotTables, MatrixUnitsAgreeWithTheRowDotsWithinFloatSummationOrder) {
  const DotTable* amx = amxDotTable();
  if (amx == nullptr) {
    // No AMX on this CPU: no table offers a matrix product.
    for (const DotTable* t : availableTables()) EXPECT_EQ(t->matrix, nullptr) << t->isa;
    return;
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t n = 512, rows = 32, tokens = 32;
  for (TensorType type : {TensorType::Q4_0, TensorType::Q5_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K}) {
    const TensorType actType = activationTypeFor(type);
    const size_t wBytes = rowBytes(tensorTypeInfo(type), n), aBytes = rowBytes(tensorTypeInfo(actType), n);
    std::vector<uint8_t> w, a(aBytes * tokens);
    for (int r = 0; r < rows; ++r) {
      const std::vector<uint8_t> row = randomRow(type, n, rng);
      w.insert(w.end(), row.begin(), row.end());
    }
    for (int t = 0; t < tokens; ++t) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = normal(rng);
      quantizeActivations(actType, x.data(), a.data() + t * aBytes, n);
    }
    std::vector<float> out(rows * tokens);
    ASSERT_TRUE(amx->matrix(type, w.data(), wBytes, rows, a.data(), aBytes, tokens, n, out.data(), rows));
    for (int t = 0; t < tokens; ++t)
      for (int r = 0; r < rows; ++r) {
        const float expected = amx->dot(type, w.data() + r * wBytes, a.data() + t * aBytes, n);
        if (actType == TensorType::Q8_K)  // the K types combine exact sums per super-block as the tiles do
          EXPECT_EQ(out[t * rows + r], expected) << tensorTypeInfo(type).name << " " << r << "," << t;
        else
          EXPECT_NEAR(out[t * rows + r], expected, 1e-4f * (1.f + std::fabs(expected))) << tensorTypeInfo(type).name;
      }
  }
  std::vector<uint8_t> none(1 << 16);
  float sink[256];
  EXPECT_FALSE(amx->matrix(TensorType::Q6_K, none.data(), 210, 16, none.data(), 292, 16, 256, sink, 16));
}

TEST(DotTables, TheMachinesSimdTableIsAvailableAndChosen) {
#if defined(__x86_64__)
  if (cpuHasAvx2()) {
    ASSERT_NE(avx2DotTable(), nullptr);
    EXPECT_STREQ(bestDotTable().isa, amxDotTable() != nullptr       ? "amx"
                                     : avx512DotTable() != nullptr  ? "avx512"
                                     : avxVnniDotTable() != nullptr ? "avx-vnni"
                                                                    : "avx2");
  }
#elif defined(__aarch64__)
  ASSERT_NE(neonDotTable(), nullptr);
  EXPECT_EQ(neonI8mmDotTable() != nullptr, cpuHasNeonI8mm());
  EXPECT_STREQ(bestDotTable().isa, cpuHasNeonI8mm() ? "neon-i8mm" : "neon");
  // The cross-build script runs the tests on emulated CPUs with and
  // without i8mm and says which: the detection must see it.
  // (Its CPUs with i8mm have FEAT_FHM; those without, a Cortex-A76 or
  // -A72, have neither.)
  if (const char* expected = std::getenv("MD_EXPECT_NEON_I8MM")) {
    EXPECT_EQ(cpuHasNeonI8mm(), std::string(expected) == "1") << "MD_EXPECT_NEON_I8MM=" << expected;
    EXPECT_EQ(cpuHasNeonFhm(), std::string(expected) == "1") << "MD_EXPECT_NEON_I8MM=" << expected;
  }
#endif
  EXPECT_STREQ(dotTableNamed("portable").isa, "portable");
  EXPECT_THROW(dotTableNamed("sse9"), std::invalid_argument);
}

// The 8 rows of a repacked group, as the file has them.
std::vector<uint8_t> randomGroup(TensorType type, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> rows;
  for (int r = 0; r < kRepackRows; ++r) {
    const std::vector<uint8_t> row = randomRow(type, n, rng);
    rows.insert(rows.end(), row.begin(), row.end());
  }
  return rows;
}

// kTileTokens activation rows as the repacked tiles of `weights` read
// them. Q4_0 and Q8_0: Q8_0, then each block's int16 sum of quants;
// quantized activations lie in -127..127 (the plain Q8_0 tile's sign trick
// relies on it), so random -128s become -127. The K types: Q8_K.
std::vector<uint8_t> repackedActivations(TensorType weights, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> acts;
  if (!repackLayoutFor(weights)->activationSums) {
    const size_t aBytes = rowBytes(tensorTypeInfo(TensorType::Q8_K), uint64_t(n));
    acts.resize(aBytes * kTileTokens);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> x(static_cast<size_t>(n));
    for (int t = 0; t < kTileTokens; ++t) {
      for (float& v : x) v = normal(rng);
      quantizeActivations(TensorType::Q8_K, x.data(), acts.data() + t * aBytes, n);
    }
    return acts;
  }
  for (int t = 0; t < kTileTokens; ++t) {
    std::vector<uint8_t> row = randomRow(TensorType::Q8_0, n, rng);
    auto* q = reinterpret_cast<blocks::Q8_0*>(row.data());
    for (int64_t b = 0; b < n / 32; ++b)
      for (int8_t& v : q[b].qs) v = v == -128 ? int8_t(-127) : v;
    std::vector<uint8_t> sums(size_t(n / 32) * 2);
    for (int64_t b = 0; b < n / 32; ++b) {
      int16_t sum = 0;
      for (int j = 0; j < 32; ++j) sum = int16_t(sum + q[b].qs[j]);
      std::memcpy(sums.data() + b * 2, &sum, 2);
    }
    acts.insert(acts.end(), row.begin(), row.end());
    acts.insert(acts.end(), sums.begin(), sums.end());
  }
  return acts;
}

// What `table`'s repacked tile of `weights` reads for `tokens` of those
// activation rows (aBytes apart): the rows as they are, or their quad
// (RepackForm::activationQuads, repack.h).
struct TileInput {
  const uint8_t* rows;
  size_t stride;
  std::vector<uint8_t> quad;
  const uint8_t* data() const { return quad.empty() ? rows : quad.data(); }
};
TileInput tileInput(const DotTable& table, TensorType weights, const uint8_t* rows, size_t aBytes, int tokens,
                    int64_t n) {
  if (!table.repackForm.activationQuads || !repackLayoutFor(weights)->activationSums) return {rows, aBytes, {}};
  const size_t q8Bytes = rowBytes(tensorTypeInfo(TensorType::Q8_0), uint64_t(n));
  TileInput in{rows, q8Bytes, std::vector<uint8_t>(q8Bytes * kActivationQuadTokens)};
  toActivationQuad(rows, aBytes, tokens, uint64_t(n), table.repackForm.interleaveBytes, in.quad.data());
  return in;
}

// Q4_0 and Q8_0 repacked in groups of 8 rows (repack.h): a tile of 1 to 4
// tokens gives each token the bits the one-token tile gives it (a batch
// equals token by token), and the plain tiles' dot products within float
// summation order: each row's block terms are summed in block order, where
// the plain tiles keep a sum per vector lane and add the lanes at the end.
// The sums are exact in int32 either way; the bound is 4 float32 roundings
// of the sum of the terms' magnitudes, far below a quant step.
TEST(RepackedTiles, Block32x8GivesEachTokenItsBitsAloneAndThePlainDotsWithinSummationOrder) {
  for (TensorType type : {TensorType::Q4_0, TensorType::Q8_0}) {
    std::mt19937 rng(41 + uint32_t(type));
    const int64_t n = 1024;
    const size_t wBytes = rowBytes(tensorTypeInfo(type), uint64_t(n));
    const std::vector<uint8_t> plain = randomGroup(type, n, rng);
    // Weight j of block i of row r, as an integer, and its block's scale.
    auto quant = [&](int r, int64_t i, int j) {
      const uint8_t* row = plain.data() + r * wBytes;
      if (type == TensorType::Q8_0) return int(reinterpret_cast<const blocks::Q8_0*>(row)[i].qs[j]);
      const blocks::Q4_0& b = reinterpret_cast<const blocks::Q4_0*>(row)[i];
      return (j < 16 ? (b.qs[j] & 0xF) : (b.qs[j - 16] >> 4)) - 8;
    };
    auto scale = [&](int r, int64_t i) {
      const uint8_t* row = plain.data() + r * wBytes;
      return halfToFloat(type == TensorType::Q8_0 ? reinterpret_cast<const blocks::Q8_0*>(row)[i].d
                                                  : reinterpret_cast<const blocks::Q4_0*>(row)[i].d);
    };
    const std::vector<uint8_t> acts = repackedActivations(type, n, rng);
    const size_t aBytes = acts.size() / kTileTokens;
    const RepackLayout& layout = *repackLayoutFor(type);
    ASSERT_TRUE(layout.activationSums);
    ASSERT_TRUE(canRepack(layout, kRepackRows, uint64_t(n)));
    std::vector<uint8_t> packed(repackGroupBytes(layout, uint64_t(n)));
    ASSERT_EQ(packed.size(), plain.size());
    int tested = 0;
    for (const DotTable* table : availableTables()) {
      const TileDot tile = table->repackedFor(type);
      if (tile == nullptr) continue;
      ++tested;
      repackGroups(layout, table->repackForm, plain.data(), uint64_t(n), 0, 1, packed.data());
      float alone[kTileRows * kTileTokens];
      for (int t = 0; t < kTileTokens; ++t) {
        const TileInput one = tileInput(*table, type, acts.data() + t * aBytes, aBytes, 1, n);
        tile(packed.data(), 0, kRepackRows, one.data(), one.stride, 1, n, alone + t, kTileTokens);
      }
      for (int tokens = 1; tokens <= kTileTokens; ++tokens) {
        float out[kTileRows * kTileTokens];
        const TileInput in = tileInput(*table, type, acts.data(), aBytes, tokens, n);
        tile(packed.data(), 0, kRepackRows, in.data(), in.stride, tokens, n, out, kTileTokens);
        for (int r = 0; r < kRepackRows; ++r)
          for (int t = 0; t < tokens; ++t)
            EXPECT_EQ(out[r * kTileTokens + t], alone[r * kTileTokens + t])
                << table->isa << " " << tensorTypeInfo(type).name << " tile of " << tokens << " at row " << r
                << ", token " << t;
      }
      for (int r = 0; r < kRepackRows; ++r)
        for (int t = 0; t < kTileTokens; ++t) {
          const float expected = table->dot(type, plain.data() + r * wBytes, acts.data() + t * aBytes, n);
          double magnitude = 0;  // the terms' magnitudes, from the dequantized values
          const auto* a = reinterpret_cast<const blocks::Q8_0*>(acts.data() + t * aBytes);
          for (int64_t i = 0; i < n / 32; ++i)
            for (int j = 0; j < 32; ++j)
              magnitude += std::fabs(double(scale(r, i)) * quant(r, i, j) * halfToFloat(a[i].d) * a[i].qs[j]);
          EXPECT_NEAR(alone[r * kTileTokens + t], expected, 4 * 6e-8 * magnitude)
              << table->isa << " " << tensorTypeInfo(type).name << " row " << r << ", token " << t;
        }
    }
    // Every x86-64 CPU this runs on has AVX2's tiles, every arm64 one NEON's.
#if defined(__x86_64__) || defined(__aarch64__)
    EXPECT_GE(tested, 1);
#else
    EXPECT_EQ(tested, 0);
#endif
  }
}

// Q4_K, Q5_K and Q6_K repacked in groups of 8 rows: the same integer sums
// and the same float operations as the row-by-row tiles, lane by lane, so
// every (row, token) of a 1 to 4 token tile has the plain dot product's bits.
TEST(RepackedTiles, KTypesX8GiveThePlainDotsBitForBit) {
  for (TensorType type : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
    std::mt19937 rng(43 + uint32_t(type));
    const int64_t n = 1024;
    const size_t wBytes = rowBytes(tensorTypeInfo(type), uint64_t(n));
    const std::vector<uint8_t> plain = randomGroup(type, n, rng);
    const std::vector<uint8_t> acts = repackedActivations(type, n, rng);
    const size_t aBytes = acts.size() / kTileTokens;
    const RepackLayout& layout = *repackLayoutFor(type);
    EXPECT_FALSE(layout.activationSums);
    ASSERT_TRUE(canRepack(layout, kRepackRows, uint64_t(n)));
    EXPECT_FALSE(canRepack(layout, kRepackRows, uint64_t(n) + 32)) << "whole super-blocks only";
    EXPECT_FALSE(canRepack(layout, kRepackRows + 4, uint64_t(n))) << "whole groups only";
    std::vector<uint8_t> packed(repackGroupBytes(layout, uint64_t(n)));
    // Q4_K's and Q5_K's scales unpacked to a byte each: 32 bytes a super-block of the 8 rows more than the file's.
    EXPECT_EQ(packed.size(), plain.size() + (type == TensorType::Q6_K ? 0 : size_t(n / 256) * 32));
    int tested = 0;
    for (const DotTable* table : availableTables()) {
      const TileDot tile = table->repackedFor(type);
      if (tile == nullptr) continue;
      ++tested;
      repackGroups(layout, table->repackForm, plain.data(), uint64_t(n), 0, 1, packed.data());
      for (int tokens = 1; tokens <= kTileTokens; ++tokens) {
        float out[kTileRows * kTileTokens];
        tile(packed.data(), 0, kRepackRows, acts.data(), aBytes, tokens, n, out, kTileTokens);
        for (int r = 0; r < kRepackRows; ++r)
          for (int t = 0; t < tokens; ++t)
            EXPECT_EQ(out[r * kTileTokens + t],
                      table->dot(type, plain.data() + r * wBytes, acts.data() + t * aBytes, n))
                << table->isa << " " << tensorTypeInfo(type).name << " tile of " << tokens << " at row " << r
                << ", token " << t;
      }
    }
#if defined(__x86_64__) || defined(__aarch64__)
    EXPECT_GE(tested, 1);
#else
    EXPECT_EQ(tested, 0);
#endif
  }
}

// The layouts at 8 interleaved bytes (the i8mm tiles') are those at 4
// with chunks 2q and 2q + 1 made one 64-byte chunk of 8 bytes a row (row
// r at 8r, its bytes of chunk 2q then of 2q + 1); the scales and mins in
// front stay. Checked on every machine: the i8mm tiles run only on arm64.
TEST(RepackedLayouts, EightInterleavedBytesAreTheFourBytesChunksPairedUp) {
  for (const RepackLayout* l = repackLayouts().begin; l != repackLayouts().end; ++l) {
    const RepackLayout& layout = *l;
    const TensorType type = layout.type;
    // Bytes of each repacked block before its first chunk.
    const size_t front = type == TensorType::Q4_0 || type == TensorType::Q8_0 ? 16
                         : type == TensorType::Q6_K                           ? kQ6_Kx8LowOffset
                                                                              : kQ4_Kx8QuantOffset;
    ASSERT_EQ((layout.groupBlockBytes - front) % 64, 0u) << tensorTypeInfo(type).name;
    std::mt19937 rng(53 + uint32_t(type));
    const int64_t n = 2 * int64_t(layout.blockValues);
    const std::vector<uint8_t> plain = randomGroup(type, n, rng);
    std::vector<uint8_t> four(repackGroupBytes(layout, uint64_t(n))), eight(four.size());
    repackGroups(layout, RepackForm{4, false}, plain.data(), uint64_t(n), 0, 1, four.data());
    repackGroups(layout, RepackForm{8, false}, plain.data(), uint64_t(n), 0, 1, eight.data());
    std::vector<uint8_t> expected = four;
    for (size_t b = 0; b < four.size(); b += layout.groupBlockBytes)
      for (size_t q = 0; b + front + 64 * q < b + layout.groupBlockBytes; ++q)
        for (int r = 0; r < kRepackRows; ++r)
          for (int half = 0; half < 2; ++half)
            std::memcpy(expected.data() + b + front + 64 * q + 8 * size_t(r) + 4 * size_t(half),
                        four.data() + b + front + 32 * (2 * q + size_t(half)) + 4 * size_t(r), 4);
    EXPECT_EQ(eight, expected) << tensorTypeInfo(type).name;
    EXPECT_NE(eight, four) << tensorTypeInfo(type).name;
    EXPECT_THROW(repackGroups(layout, RepackForm{2, false}, plain.data(), uint64_t(n), 0, 1, eight.data()),
                 std::invalid_argument);
  }
}

// repackWeights leaves its buffers unzeroed (the pool's threads write
// them): repackGroups must write every byte, in every layout and form.
// Into memory filled with 0x00 and with 0xFF, the same bytes come out.
TEST(RepackedLayouts, RepackingWritesEveryByteOfItsGroups) {
  for (const RepackLayout* l = repackLayouts().begin; l != repackLayouts().end; ++l) {
    const RepackLayout& layout = *l;
    std::mt19937 rng(67 + uint32_t(layout.type));
    const int64_t n = 2 * int64_t(layout.blockValues);
    const std::vector<uint8_t> plain = randomGroup(layout.type, n, rng);
    for (const RepackForm form :
         {RepackForm{4, false}, RepackForm{4, true}, RepackForm{8, false}, RepackForm{8, true}}) {
      std::vector<uint8_t> zeros(repackGroupBytes(layout, uint64_t(n)), 0x00), ones(zeros.size(), 0xFF);
      repackGroups(layout, form, plain.data(), uint64_t(n), 0, 1, zeros.data());
      repackGroups(layout, form, plain.data(), uint64_t(n), 0, 1, ones.data());
      EXPECT_EQ(zeros, ones) << tensorTypeInfo(layout.type).name << " interleave " << form.interleaveBytes
                             << (form.signedQuants ? ", signed" : "");
    }
  }
}

// A quad of activation tokens (the NEON tables' Q4_0 and Q8_0 tiles read
// them so) is llama.cpp's block_q8_0x4: per block the 4 tokens' scales,
// then their quants interleaved 4 or 8 bytes a token; tokens past the
// count are zeros. Checked byte by byte from the rows, on every machine.
TEST(RepackedLayouts, ActivationQuadsInterleaveTheTokensAsLlamaCppsBlockQ8_0x4) {
  std::mt19937 rng(61);
  const int64_t n = 96;
  const size_t q8Bytes = rowBytes(tensorTypeInfo(TensorType::Q8_0), uint64_t(n)), stride = q8Bytes + 6;
  std::vector<uint8_t> rows(stride * kActivationQuadTokens);
  for (uint8_t& b : rows) b = uint8_t(rng());
  for (int interleave : {4, 8})
    for (int tokens = 1; tokens <= kActivationQuadTokens; ++tokens) {
      std::vector<uint8_t> quad(q8Bytes * kActivationQuadTokens, 0xAB);
      toActivationQuad(rows.data(), stride, tokens, uint64_t(n), interleave, quad.data());
      for (int64_t i = 0; i < n / 32; ++i) {
        const uint8_t* block = quad.data() + size_t(i) * kQ8_0QuadBlockBytes;
        for (int k = 0; k < kActivationQuadTokens; ++k) {
          const uint8_t* source = rows.data() + size_t(k) * stride + size_t(i) * 34;
          for (int j = 0; j < 2; ++j) EXPECT_EQ(block[2 * k + j], k < tokens ? source[j] : 0) << "scale of token " << k;
          for (int j = 0; j < 32; ++j)
            EXPECT_EQ(block[8 + (j / interleave) * 4 * interleave + k * interleave + j % interleave],
                      k < tokens ? source[2 + j] : 0)
                << "interleave " << interleave << ", " << tokens << " tokens, block " << i << ", token " << k
                << ", quant " << j;
        }
      }
    }
  std::vector<uint8_t> quad(q8Bytes * kActivationQuadTokens);
  auto message = [&](int tokens, int interleave) {
    try {
      toActivationQuad(rows.data(), stride, tokens, uint64_t(n), interleave, quad.data());
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(5, 4), "toActivationQuad: tokens must be 1 to 4, got 5");
  EXPECT_EQ(message(0, 8), "toActivationQuad: tokens must be 1 to 4, got 0");
  EXPECT_EQ(message(2, 16), "toActivationQuad: interleaveBytes must be 4 or 8, got 16");
}

// The signed form (NEON's) is the unsigned one with Q4_0's bytes xor 0x88
// (each nibble quant + 8 to the quant in two's complement) and Q8_0's xor
// 0x80 (quant + 128 to the quant), the scales unchanged; the K layouts are
// the same in both forms.
TEST(RepackedLayouts, TheSignedFormFlipsQ4_0AndQ8_0sQuantsOnly) {
  for (const RepackLayout* l = repackLayouts().begin; l != repackLayouts().end; ++l) {
    const RepackLayout& layout = *l;
    const TensorType type = layout.type;
    std::mt19937 rng(59 + uint32_t(type));
    const int64_t n = 2 * int64_t(layout.blockValues);
    const std::vector<uint8_t> plain = randomGroup(type, n, rng);
    for (int interleave : {4, 8}) {
      std::vector<uint8_t> unsignedForm(repackGroupBytes(layout, uint64_t(n))), signedForm(unsignedForm.size());
      repackGroups(layout, RepackForm{interleave, false}, plain.data(), uint64_t(n), 0, 1, unsignedForm.data());
      repackGroups(layout, RepackForm{interleave, true}, plain.data(), uint64_t(n), 0, 1, signedForm.data());
      const uint8_t flip = type == TensorType::Q4_0 ? 0x88 : type == TensorType::Q8_0 ? 0x80 : 0;
      std::vector<uint8_t> expected = unsignedForm;
      for (size_t b = 0; b < expected.size(); b += layout.groupBlockBytes)
        for (size_t k = 16; flip != 0 && k < layout.groupBlockBytes; ++k) expected[b + k] ^= flip;
      EXPECT_EQ(signedForm, expected) << tensorTypeInfo(type).name << " interleave " << interleave;
    }
  }
}

// A tile of two groups (16 rows; on AVX-512 one 512-bit vector holds both,
// simd_avx512.h) gives each row the bits a tile of its group alone gives,
// for every layout, table and token count.
TEST(RepackedTiles, TwoGroupsGiveEachRowTheBitsOfItsGroupAlone) {
  for (const RepackLayout* l = repackLayouts().begin; l != repackLayouts().end; ++l) {
    const RepackLayout& layout = *l;
    const TensorType type = layout.type;
    std::mt19937 rng(47 + uint32_t(type));
    const int64_t n = 512;
    std::vector<uint8_t> plain = randomGroup(type, n, rng);
    const std::vector<uint8_t> second = randomGroup(type, n, rng);
    plain.insert(plain.end(), second.begin(), second.end());
    const std::vector<uint8_t> acts = repackedActivations(type, n, rng);
    const size_t aBytes = acts.size() / kTileTokens, groupBytes = repackGroupBytes(layout, uint64_t(n));
    std::vector<uint8_t> packed(2 * groupBytes);
    for (const DotTable* table : availableTables()) {
      const TileDot tile = table->repackedFor(type);
      if (tile == nullptr) continue;
      repackGroups(layout, table->repackForm, plain.data(), uint64_t(n), 0, 2, packed.data());
      for (int tokens = 1; tokens <= kTileTokens; ++tokens) {
        // NaN where a tile writes nothing: NaN equals nothing.
        float both[kRepackedTileRows * kTileTokens], alone[kRepackedTileRows * kTileTokens];
        std::fill(std::begin(both), std::end(both), std::nanf(""));
        std::fill(std::begin(alone), std::end(alone), std::nanf(""));
        const TileInput in = tileInput(*table, type, acts.data(), aBytes, tokens, n);
        tile(packed.data(), groupBytes, kRepackedTileRows, in.data(), in.stride, tokens, n, both, kTileTokens);
        for (int g = 0; g < 2; ++g)
          tile(packed.data() + g * groupBytes, groupBytes, kRepackRows, in.data(), in.stride, tokens, n,
               alone + g * kRepackRows * kTileTokens, kTileTokens);
        for (int r = 0; r < kRepackedTileRows; ++r)
          for (int t = 0; t < tokens; ++t)
            EXPECT_EQ(both[r * kTileTokens + t], alone[r * kTileTokens + t])
                << table->isa << " " << tensorTypeInfo(type).name << " tile of " << tokens << " at row " << r
                << ", token " << t;
      }
    }
  }
}

// The attention's weighted sums of value rows: every table gives the
// scalar loop's bits (each product rounded, then added, rows in order),
// whole vectors of 64 and 8 values and the leftover values alike.
TEST(WeightedRows, EveryTableGivesTheScalarLoopsBits) {
  std::mt19937 rng(53);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t n : {128, 100, 7}) {
    const int64_t count = 37;
    const size_t stride = size_t(n) * 4 + 12;  // rows apart by more than their values
    std::vector<uint8_t> f32(stride * count), f16(stride * count);
    std::vector<float> weights(static_cast<size_t>(count));
    for (float& w : weights) w = normal(rng);
    for (int64_t j = 0; j < count; ++j)
      for (int64_t i = 0; i < n; ++i) {
        const float v = normal(rng);
        std::memcpy(f32.data() + size_t(j) * stride + size_t(i) * 4, &v, 4);
        const uint16_t h = halfFromFloat(v);
        std::memcpy(f16.data() + size_t(j) * stride + size_t(i) * 2, &h, 2);
      }
    std::vector<float> start(static_cast<size_t>(n)), expected32, expected16;
    for (float& v : start) v = normal(rng);
    expected32 = expected16 = start;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < count; ++j) {
        float v;
        std::memcpy(&v, f32.data() + size_t(j) * stride + size_t(i) * 4, 4);
        const float product = weights[size_t(j)] * v;
        expected32[size_t(i)] += product;
        uint16_t h;
        std::memcpy(&h, f16.data() + size_t(j) * stride + size_t(i) * 2, 2);
        const float product16 = weights[size_t(j)] * halfToFloat(h);
        expected16[size_t(i)] += product16;
      }
    for (const DotTable* table : availableTables()) {
      std::vector<float> out32 = start, out16 = start;
      table->weightedF32(f32.data(), stride, weights.data(), count, n, out32.data());
      table->weightedF16(f16.data(), stride, weights.data(), count, n, out16.data());
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(out32[size_t(i)], expected32[size_t(i)]) << table->isa << " float32, n " << n << ", value " << i;
        EXPECT_EQ(out16[size_t(i)], expected16[size_t(i)]) << table->isa << " float16, n " << n << ", value " << i;
      }
    }
  }
}

TEST(ActivationQuantizers, Q8_0RoundsToNearestEvenWithScaleMaxOver127) {
  std::vector<float> x(32, 0.f);
  x[0] = 127.f;  // d = 1
  x[1] = 2.5f;   // ties to even: 2
  x[2] = -3.5f;  // -4
  x[3] = 0.49f;
  blocks::Q8_0 q;
  quantizeActivations(TensorType::Q8_0, x.data(), &q, 32);
  EXPECT_EQ(halfToFloat(q.d), 1.f);
  EXPECT_EQ(q.qs[0], 127);
  EXPECT_EQ(q.qs[1], 2);
  EXPECT_EQ(q.qs[2], -4);
  EXPECT_EQ(q.qs[3], 0);
}

TEST(ActivationQuantizers, Q8_KMapsTheLargestMagnitudeToMinus127AndSumsGroups) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[size_t(i)] = float(i % 7) - 3.f;
  x[100] = 10.f;
  blocks::Q8_K q;
  quantizeActivations(TensorType::Q8_K, x.data(), &q, 256);
  EXPECT_EQ(q.qs[100], -127);
  EXPECT_FLOAT_EQ(q.d * float(q.qs[100]), 10.f);
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += q.qs[g * 16 + l];
    EXPECT_EQ(q.bsums[g], sum);
  }
}

TEST(ActivationQuantizers, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(bf16FromFloat(1.0f), 0x3F80);
  EXPECT_EQ(bf16FromFloat(floatFromBits(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(bf16FromFloat(floatFromBits(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(bf16ToFloat(0x4000), 2.0f);
}

}  // namespace
}  // namespace md
