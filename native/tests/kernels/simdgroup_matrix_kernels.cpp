// simdgroup_matrix_kernels.cpp: simdgroup_matrix.metal compiled for the emulator.
#include <cstring>
#include <tuple>

#include "kernel_binding.h"

#include "metal_compat.h"
#include "simdgroup_matrix.metal"

namespace md::emu::testing {

extern const EmulatedKernel kSimdgroupMatrixKernel;
const EmulatedKernel kSimdgroupMatrixKernel = MD_EMULATED_KERNEL(md_test_simdgroup_matrix);

}  // namespace md::emu::testing
