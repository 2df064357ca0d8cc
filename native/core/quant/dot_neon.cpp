// dot_neon.cpp: the dot kernels on arm64 NEON (every arm64 CPU has it).
#include "dot.h"
#include "dot_neon_f16.h"

#if defined(__aarch64__)
#include "dot_kernels.h"
#include "simd_neon.h"

namespace md {

TileDot neonConvertingF16Tile() { return DotKernels<simd::Neon>::table().f16; }

const DotTable* neonDotTable() {
  static const DotTable table = [] {
    DotTable t = DotKernels<simd::Neon>::table();
    // fmlal where the CPU has it: the same bits without the conversions.
    if (const TileDot fmlal = neonFmlalF16Tile()) t.f16 = fmlal;
    return t;
  }();
  return &table;
}

}  // namespace md
#else
namespace md {
TileDot neonConvertingF16Tile() { return nullptr; }
const DotTable* neonDotTable() { return nullptr; }
}  // namespace md
#endif
