// dot_neon_f16.h: the NEON tables' two F16 tiles, which give the same bits.
// neonDotTable() takes the fmlal one where this CPU has it, and the
// converting one elsewhere; the tests hold one against the other.
#pragma once
#include "dot.h"

namespace md {

// Converts both operands to float32, then fused multiply-adds: every arm64
// CPU (dot_neon.cpp); nullptr off arm64.
TileDot neonConvertingF16Tile();
// fmlal (FEAT_FHM, dot_neon_fhm.cpp); nullptr where this build or CPU lacks it.
TileDot neonFmlalF16Tile();

}  // namespace md
