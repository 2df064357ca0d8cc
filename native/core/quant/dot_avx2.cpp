// dot_avx2.cpp: the dot kernels on AVX2. The build compiles this one file
// with -mavx2 -mfma -mf16c; its table is offered only when the CPU has
// them, so the rest of the library runs on any x86-64.
#include "dot.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "cpu_features.h"
#include "dot_kernels.h"
#include "simd_avx2.h"

namespace md {

const DotTable* avx2DotTable() {
  static const bool supported = cpuHasAvx2();
  static const DotTable table = DotKernels<simd::Avx2>::table();
  return supported ? &table : nullptr;
}

}  // namespace md
#else
namespace md {
const DotTable* avx2DotTable() { return nullptr; }
}  // namespace md
#endif
