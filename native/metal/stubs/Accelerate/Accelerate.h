// Accelerate.h (stub): only the BLAS call native/core/quant/dot_blas.cpp
// makes, written by this project from Apple's public documentation
// (developer.apple.com/documentation/accelerate/blas) so that the file can
// be type-checked on Linux as a macOS build. Not Apple's header; on macOS
// the real SDK is used. As in the SDK: the classic CBLAS interface with
// int arguments, marked deprecated from macOS 13.3 (which the SDK does
// unless ACCELERATE_NEW_LAPACK is defined).
#pragma once

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };

#if defined(__MAC_OS_X_VERSION_MAX_ALLOWED) && __MAC_OS_X_VERSION_MAX_ALLOWED < 130300
#define MD_STUB_CBLAS_AVAILABILITY __attribute__((availability(macos, introduced = 10.2)))
#else
#define MD_STUB_CBLAS_AVAILABILITY \
  __attribute__((availability(macos, introduced = 10.2, deprecated = 13.3, message = "define ACCELERATE_NEW_LAPACK")))
#endif

extern "C" void cblas_sgemm(const enum CBLAS_ORDER __Order, const enum CBLAS_TRANSPOSE __TransA,
                            const enum CBLAS_TRANSPOSE __TransB, const int __M, const int __N, const int __K,
                            const float __alpha, const float* __A, const int __lda, const float* __B, const int __ldb,
                            const float __beta, float* __C, const int __ldc) MD_STUB_CBLAS_AVAILABILITY;
