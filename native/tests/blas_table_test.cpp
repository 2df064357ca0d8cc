// blas_table_test.cpp: the table that hands float weights' batches to a
// BLAS library (dot_blas.cpp). Built with MD_BLAS=OpenBLAS (CI's build), it
// runs the code macOS runs on Accelerate; without a library, that the
// table is absent and the products stay on the tiles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "float16.h"
#include "quant/convert_rows.h"
#include "quant/dot.h"
#include "thread_pool.h"
#include "transformer/matmul.h"

namespace md {
namespace {

#ifdef MD_TESTS_EXPECT_BLAS
constexpr const char* kExpectedLibrary = MD_TESTS_EXPECT_BLAS;
#else
constexpr const char* kExpectedLibrary = nullptr;
#endif

// Float weights in `type`, rows x cols, and their float32 values (the
// weights as stored, to bound the error with).
struct FloatWeights {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
  TensorView view;
};

FloatWeights floatWeights(TensorType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.f, 0.5f);
  const size_t width = type == TensorType::F32 ? 4 : 2;
  FloatWeights w;
  w.bytes.resize(size_t(rows * cols) * width);
  w.values.resize(size_t(rows * cols));
  for (size_t i = 0; i < w.values.size(); ++i) {
    const float v = normal(rng);
    if (type == TensorType::F32) {
      std::memcpy(&w.bytes[i * 4], &v, 4);
    } else {
      const uint16_t h = type == TensorType::F16 ? halfFromFloat(v) : bf16FromFloat(v);
      std::memcpy(&w.bytes[i * 2], &h, 2);
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    dequantizeRow(type, &w.bytes[size_t(r * cols) * width], &w.values[size_t(r * cols)], cols);
  w.view.type = type;
  w.view.cols = uint64_t(cols);
  w.view.rows = uint64_t(rows);
  w.view.data = w.bytes.data();
  w.view.rowBytes = size_t(cols) * width;
  return w;
}

// The library's table without the library: the same tiles.
DotTable tilesOf(const DotTable& withLibrary) {
  DotTable tiles = withLibrary;
  tiles.floatMatrix = nullptr;
  return tiles;
}

// The library's table where this build links one; where it links none,
// nullptr, checked to be so (the tests that take a table then end).
const DotTable* libraryTable() {
  const DotTable* table = blasDotTable();
  if (kExpectedLibrary == nullptr) {
    EXPECT_EQ(table, nullptr);
    return nullptr;
  }
  if (table == nullptr) ADD_FAILURE() << "the build was configured with MD_BLAS, but has no library table";
  return table;
}

// How far two float32 sums of the same n products may part. Each is within
// gamma(n) x sum |w a| of the exact sum (gamma(n) = n u / (1 - n u),
// u = 2^-24: any order of additions); the tiles read the activations
// rounded to the weights' type (F16: 2^-11 relative; BF16: 2^-8; F32 as
// they are), the library reads them as float32; the bias adds one rounding
// to each.
float bound(TensorType type, int64_t n, double absSum, double bias) {
  const double u = std::ldexp(1.0, -24);
  const double activation = type == TensorType::F16    ? std::ldexp(1.0, -11)
                            : type == TensorType::BF16 ? std::ldexp(1.0, -8)
                                                       : 0.0;
  const double gamma = double(n) * u / (1 - double(n) * u);
  return float(absSum * (activation + 2 * gamma) + 2 * u * (absSum + std::fabs(bias)));
}

TEST(BlasTable, IsTheLibraryThisBuildLinksAndNamedOnly) {
  const DotTable* table = blasDotTable();
  if (kExpectedLibrary == nullptr) {
    EXPECT_EQ(table, nullptr);
    EXPECT_THROW(dotTableNamed("openblas"), std::invalid_argument);
    return;
  }
  ASSERT_NE(table, nullptr) << "the build was configured with MD_BLAS, but no library table";
  EXPECT_STREQ(table->isa, kExpectedLibrary);
  EXPECT_EQ(&dotTableNamed(kExpectedLibrary), table);
  EXPECT_NE(table->floatMatrix, nullptr);
  // The quantized types keep the fastest vector table's tiles.
  EXPECT_NE(table->q4_0, nullptr);
  // OpenBLAS is a test build's: auto does not pick it.
  if (std::string(kExpectedLibrary) == "openblas") {
    EXPECT_STRNE(bestDotTable().isa, "openblas");
  }
  // Accelerate is macOS's only.
  EXPECT_THROW(
      {
        try {
          dotTableNamed("accelerate");
        } catch (const std::invalid_argument& e) {
          EXPECT_STREQ(e.what(), "MD_CPU_ISA: accelerate is not available on this CPU or build");
          throw;
        }
      },
      std::invalid_argument);
}

// Float weights' batches of 32 tokens and rows or more go to the library,
// a panel of rows a call; the results are the tiles' within summation
// order and activation rounding (bound above), bias included.
TEST(BlasTable, FloatBatchesGoToTheLibraryWithinTheTilesSummationOrder) {
  const DotTable* table = libraryTable();
  if (table == nullptr) return;  // a build without a library: libraryTable() checked that it has none
  const DotTable tiles = tilesOf(*table);
  ThreadPool pool(2);
  std::mt19937 rng(11);
  // 4096 columns: panels of 512 rows (8 MiB of float32), so 600 rows are two calls.
  const int64_t cols = 4096, rows = 600, batch = 33;
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(batch * cols)), bias(static_cast<size_t>(rows));
  for (float& v : x) v = normal(rng);
  for (float& v : bias) v = normal(rng);
  TensorView biasView;
  biasView.type = TensorType::F32;
  biasView.cols = uint64_t(rows);
  biasView.rows = 1;
  biasView.data = reinterpret_cast<const uint8_t*>(bias.data());
  biasView.rowBytes = size_t(rows) * 4;
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    const FloatWeights w = floatWeights(type, rows, cols, rng);
    std::vector<float> library(size_t(batch * rows)), vector(size_t(batch * rows));
    ActivationRows a, b;
    a.reset(x.data(), batch, cols);
    b.reset(x.data(), batch, cols);
    const uint64_t before = blasProductCalls();
    matmul(pool, *table, w.view, a, library.data(), &biasView);
    EXPECT_EQ(blasProductCalls() - before, 2u) << tensorTypeInfo(type).name << ": two panels, two calls";
    matmul(pool, tiles, w.view, b, vector.data(), &biasView);
    EXPECT_EQ(blasProductCalls() - before, 2u) << "the tiles' table called the library";
    int differing = 0;
    for (int64_t t = 0; t < batch; ++t)
      for (int64_t r = 0; r < rows; ++r) {
        double absSum = 0, exact = bias[size_t(r)];
        for (int64_t k = 0; k < cols; ++k) {
          const double product = double(w.values[size_t(r * cols + k)]) * x[size_t(t * cols + k)];
          absSum += std::fabs(product);
          exact += product;
        }
        const size_t i = size_t(t * rows + r);
        // The library's own error: a blocked sum's, far under the worst
        // case gamma(n); 2^-20 of sum |w a| (16 units in the last place of
        // it) still fails on one product missed or doubled (|w a| ~ 0.4,
        // against 2^-20 x ~1600).
        ASSERT_LE(std::fabs(library[i] - exact), std::ldexp(absSum, -20))
            << tensorTypeInfo(type).name << " token " << t << " row " << r << ": " << library[i] << " against exact "
            << exact;
        ASSERT_LE(std::fabs(library[i] - vector[i]), bound(type, cols, absSum, bias[size_t(r)]))
            << tensorTypeInfo(type).name << " token " << t << " row " << r << ": " << library[i] << " against "
            << vector[i];
        differing += library[i] != vector[i];
      }
    // Another order of sums: some bits differ (else the library's path was not taken).
    EXPECT_GT(differing, 0) << tensorTypeInfo(type).name;
  }
}

// Below 32 tokens or rows, and for the quantized types, the tiles run:
// the same bits as the table without the library, and no library call.
TEST(BlasTable, SmallBatchesAndQuantizedWeightsStayOnTheTiles) {
  const DotTable* table = libraryTable();
  if (table == nullptr) return;  // a build without a library: libraryTable() checked that it has none
  const DotTable tiles = tilesOf(*table);
  ThreadPool pool(2);
  std::mt19937 rng(5);
  const int64_t cols = 256;
  struct Case {
    TensorType type;
    int64_t rows, batch;
  };
  for (const Case& c : {Case{TensorType::F16, 64, kLibraryMinimum - 1}, Case{TensorType::F16, kLibraryMinimum - 1, 40},
                        Case{TensorType::F32, 64, 1}}) {
    const FloatWeights w = floatWeights(c.type, c.rows, cols, rng);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> x(size_t(c.batch * cols));
    for (float& v : x) v = normal(rng);
    std::vector<float> library(size_t(c.batch * c.rows)), vector(size_t(c.batch * c.rows));
    ActivationRows a, b;
    a.reset(x.data(), c.batch, cols);
    b.reset(x.data(), c.batch, cols);
    const uint64_t before = blasProductCalls();
    matmul(pool, *table, w.view, a, library.data());
    matmul(pool, tiles, w.view, b, vector.data());
    EXPECT_EQ(blasProductCalls(), before) << c.rows << " rows, " << c.batch << " tokens";
    EXPECT_EQ(std::memcmp(library.data(), vector.data(), library.size() * 4), 0) << c.rows << " rows, " << c.batch;
  }
  // Q8_0 weights in a batch of 40: the int8 tiles.
  const int64_t rows = 64, batch = 40;
  std::vector<float> values(size_t(rows * cols)), x(size_t(batch * cols));
  std::normal_distribution<float> normal(0.f, 1.f);
  for (float& v : values) v = normal(rng);
  for (float& v : x) v = normal(rng);
  const size_t rowBytes = md::rowBytes(tensorTypeInfo(TensorType::Q8_0), uint64_t(cols));
  std::vector<uint8_t> q8(rowBytes * size_t(rows));
  for (int64_t r = 0; r < rows; ++r)
    quantizeActivations(TensorType::Q8_0, &values[size_t(r * cols)], &q8[size_t(r) * rowBytes], cols);
  TensorView view;
  view.type = TensorType::Q8_0;
  view.cols = uint64_t(cols);
  view.rows = uint64_t(rows);
  view.data = q8.data();
  view.rowBytes = rowBytes;
  std::vector<float> library(size_t(batch * rows)), vector(size_t(batch * rows));
  ActivationRows a, b;
  a.reset(x.data(), batch, cols);
  b.reset(x.data(), batch, cols);
  const uint64_t before = blasProductCalls();
  matmul(pool, *table, view, a, library.data());
  matmul(pool, tiles, view, b, vector.data());
  EXPECT_EQ(blasProductCalls(), before);
  EXPECT_EQ(std::memcmp(library.data(), vector.data(), library.size() * 4), 0);
}

}  // namespace
}  // namespace md
