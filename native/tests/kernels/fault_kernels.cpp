// fault_kernels.cpp: the test kernels of faults.metal compiled for the
// emulator, as native/emu/kernels.cpp does for metal/.
#include <cstring>
#include <tuple>

#include "kernel_binding.h"

#include "metal_compat.h"
#include "faults.metal"

namespace md::emu::testing {

extern const EmulatedKernel kFaultKernels[];
extern const size_t kFaultKernelCount;

const EmulatedKernel kFaultKernels[] = {
    MD_EMULATED_KERNEL(md_test_published),
    MD_EMULATED_KERNEL(md_test_missing_barrier),
    MD_EMULATED_KERNEL(md_test_divergent_barrier),
    MD_EMULATED_KERNEL(md_test_early_return),
    MD_EMULATED_KERNEL(md_test_divergent_simd),
    MD_EMULATED_KERNEL(md_test_out_of_bounds),
    MD_EMULATED_KERNEL(md_test_simd_ops),
    MD_EMULATED_KERNEL(md_test_too_much_threadgroup_memory),
    MD_EMULATED_KERNEL(md_test_half_arithmetic),
    MD_EMULATED_KERNEL(md_test_simd_float_sum),
    // The planted fused probe, under the name requireExactArithmetic runs.
    ::md::emu::EmulatedKernel{"md_fp_contract_probe", &::md::emu::KernelBinding<&md_test_fused_probe>::invoke,
                              ::md::emu::KernelBinding<&md_test_fused_probe>::kArguments},
    // The planted interleaved numbering, under the name requireSimdLayout runs.
    ::md::emu::EmulatedKernel{"md_simd_layout_probe",
                              &::md::emu::KernelBinding<&md_test_interleaved_simd_layout>::invoke,
                              ::md::emu::KernelBinding<&md_test_interleaved_simd_layout>::kArguments},
};
const size_t kFaultKernelCount = sizeof(kFaultKernels) / sizeof(kFaultKernels[0]);

}  // namespace md::emu::testing
