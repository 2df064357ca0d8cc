// dot_blas.cpp: float weights' batches on a BLAS library's sgemm.
//
// llama.cpp's Mac build (node-llama-cpp's prebuilt binaries ship
// libggml-blas, linked to Accelerate) sends every product of 32 or more
// tokens to Accelerate's cblas_sgemm, which runs on Apple's matrix
// coprocessor. For float weights that is the path to beat: NEON's float32
// fused multiply-adds take 4 lanes an instruction. This file makes the
// same call on the same float32 rows. The quantized types stay on the int8
// tiles (bench/README.md, seventh step, says why: their int8 peak).
//
// The library is chosen at build time: MD_BLAS_ACCELERATE (binding.gyp on
// macOS) or MD_BLAS_OPENBLAS (CMake with MD_BLAS=OpenBLAS, which builds
// and tests this code on Linux). Without either, blasDotTable() is nullptr.
#include "dot.h"

#if defined(MD_BLAS_ACCELERATE)
#include <Accelerate/Accelerate.h>
#define MD_BLAS_NAME "accelerate"
#elif defined(MD_BLAS_OPENBLAS)
#include <cblas.h>
#define MD_BLAS_NAME "openblas"
#endif

#include <atomic>
#include <cstdint>

namespace md {

#ifdef MD_BLAS_NAME
namespace {

std::atomic<uint64_t> productCalls{0};

void sgemmProduct(const float* weights, int64_t rows, const float* activations, int64_t tokens, int64_t n, float* out,
                  size_t outStride) {
  productCalls.fetch_add(1, std::memory_order_relaxed);
  // out (tokens x rows) = activations (tokens x n) x weights^T (n x rows),
  // row-major: the layout of ggml-blas's call for the same product.
  // Accelerate's classic interface: macOS 13.3's SDK marks it deprecated in
  // favour of one that needs macOS 13.3 at run time, while the addon
  // supports macOS 11. It stays in the framework.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(tokens), int(rows), int(n), 1.0f, activations, int(n),
              weights, int(n), 0.0f, out, int(outStride));
#pragma GCC diagnostic pop
}

}  // namespace

FloatMatrixProduct linkedBlasProduct(const char** name) {
  *name = MD_BLAS_NAME;
  return sgemmProduct;
}

uint64_t blasProductCalls() { return productCalls.load(std::memory_order_relaxed); }

#else

FloatMatrixProduct linkedBlasProduct(const char** name) {
  *name = nullptr;
  return nullptr;
}

uint64_t blasProductCalls() { return 0; }

#endif

}  // namespace md
