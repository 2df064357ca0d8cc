// dot_neon.cpp: the dot kernels on arm64 NEON (every arm64 CPU has it).
#include "dot.h"

#if defined(__aarch64__)
#include "dot_kernels.h"
#include "simd_neon.h"

namespace md {

const DotTable* neonDotTable() {
  static const DotTable table = DotKernels<simd::Neon>::table();
  return &table;
}

}  // namespace md
#else
namespace md {
const DotTable* neonDotTable() { return nullptr; }
}  // namespace md
#endif
