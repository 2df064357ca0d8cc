// float_product_bench.cpp: a prompt's float-weight products on the BLAS
// library's table (dot_blas.cpp) against the same table's tiles, in one
// run: the matrices of a Llama-3.2-1B layer (Q, K, V, output, gate, up,
// down), one batch of TOKENS rows, THREADS threads, the median of RUNS.
//
//   md_float_product_bench ISA TYPE [TOKENS=128] [THREADS=2] [RUNS=5]
//
// ISA is a library table's name ("openblas" in a Linux build with
// MD_BLAS=OpenBLAS, "accelerate" on macOS), TYPE F32, F16 or BF16. The
// weights are pseudo-random; the products take no branch on their values.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "pseudo_random_bytes.h"

#include "quant/dot.h"
#include "quant/tensor_types.h"
#include "thread_pool.h"
#include "transformer/matmul.h"

namespace {

struct Shape {
  const char* name;
  int64_t rows, cols;
};

// Llama-3.2-1B: width 2048, 8 KV heads of 64, FFN 8192.
constexpr Shape kLayer[] = {{"q", 2048, 2048},    {"k", 512, 2048},   {"v", 512, 2048},    {"output", 2048, 2048},
                            {"gate", 8192, 2048}, {"up", 8192, 2048}, {"down", 2048, 8192}};

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace md;
  if (argc < 3 || argc > 6) {
    std::fprintf(stderr, "usage: md_float_product_bench ISA TYPE [TOKENS=128] [THREADS=2] [RUNS=5]\n");
    return 2;
  }
  try {
    const DotTable& library = dotTableNamed(argv[1]);
    if (library.floatMatrix == nullptr) {
      std::fprintf(stderr, "md_float_product_bench: %s is not a BLAS library's table\n", argv[1]);
      return 2;
    }
    DotTable tiles = library;
    tiles.floatMatrix = nullptr;
    TensorType type = TensorType::F32;
    if (std::strcmp(argv[2], "F16") == 0)
      type = TensorType::F16;
    else if (std::strcmp(argv[2], "BF16") == 0)
      type = TensorType::BF16;
    else if (std::strcmp(argv[2], "F32") != 0)
      throw std::invalid_argument(std::string("TYPE: expected F32, F16 or BF16, got ") + argv[2]);
    const int64_t tokens = argc > 3 ? std::atol(argv[3]) : 128;
    const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
    const int runs = argc > 5 ? std::atoi(argv[5]) : 5;
    if (tokens < 1 || threads < 1 || runs < 1) throw std::invalid_argument("TOKENS, THREADS and RUNS: at least 1");
    ThreadPool pool(threads);
    std::printf("%s %s, %lld tokens, %d threads, median of %d (ms)\n", argv[1], argv[2], (long long)tokens, threads,
                runs);
    std::printf("%-8s %10s %10s %8s\n", "matrix", "tiles", "library", "ratio");
    double tilesTotal = 0, libraryTotal = 0;
    for (const Shape& s : kLayer) {
      const size_t rowBytes = md::rowBytes(tensorTypeInfo(type), uint64_t(s.cols));
      std::vector<uint8_t> bytes = pseudoRandomBytes(rowBytes * size_t(s.rows), 7);
      // Keep the values finite and small: each float's top bits from a normal range.
      if (type == TensorType::F32)
        for (size_t i = 0; i < bytes.size(); i += 4) bytes[i + 3] = uint8_t(0x3c | (bytes[i + 3] & 0x80));
      else if (type == TensorType::F16)
        for (size_t i = 0; i < bytes.size(); i += 2) bytes[i + 1] = uint8_t(0x30 | (bytes[i + 1] & 0x83));
      else
        for (size_t i = 0; i < bytes.size(); i += 2) bytes[i + 1] = uint8_t(0x3c | (bytes[i + 1] & 0x80));
      TensorView w;
      w.type = type;
      w.cols = uint64_t(s.cols);
      w.rows = uint64_t(s.rows);
      w.data = bytes.data();
      w.rowBytes = rowBytes;
      std::vector<float> x(size_t(tokens * s.cols)), out(size_t(tokens * s.rows));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 2654435761u % 2001) - 1000) / 1000.f;
      auto time = [&](const DotTable& dots) {
        std::vector<double> ms;
        for (int r = 0; r < runs + 1; ++r) {
          ActivationRows a;
          a.reset(x.data(), tokens, s.cols);
          const auto start = std::chrono::steady_clock::now();
          matmul(pool, dots, w, a, out.data());
          const double elapsed =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
          if (r > 0) ms.push_back(elapsed);  // the first warms the caches and the library's threads
        }
        return medianOf(ms);
      };
      const double t = time(tiles), l = time(library);
      tilesTotal += t;
      libraryTotal += l;
      std::printf("%-8s %10.2f %10.2f %7.2fx\n", s.name, t, l, l / t);
    }
    std::printf("%-8s %10.2f %10.2f %7.2fx\n", "layer", tilesTotal, libraryTotal, libraryTotal / tilesTotal);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "md_float_product_bench: %s\n", e.what());
    return 2;
  }
}
