// check-metal.sh: Accelerate's classic cblas_sgemm without dot_blas.cpp's
// pragma is deprecated on macOS 13.3 and later; the check must reject this.
#include <Accelerate/Accelerate.h>

void md_test_sgemm(const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, 1, 1, 1.0f, a, 1, b, 1, 0.0f, c, 1);
}
