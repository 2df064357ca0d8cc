// access_pattern_kernels.cpp: access_patterns.metal compiled for the
// emulator with the counters' instrumentation (CMakeLists.txt), as
// native/counters/counted_kernels.cpp compiles metal/.
#include "kernel_binding.h"

#include "metal_compat.h"
#include "access_patterns.metal"

namespace md::emu::testing {

extern const EmulatedKernel kAccessPatternKernels[];
extern const size_t kAccessPatternKernelCount;

const EmulatedKernel kAccessPatternKernels[] = {
    MD_EMULATED_KERNEL(md_test_coalesced_load),
    MD_EMULATED_KERNEL(md_test_strided_load),
    MD_EMULATED_KERNEL(md_test_broadcast_load),
    MD_EMULATED_KERNEL(md_test_threadgroup_banks),
};
const size_t kAccessPatternKernelCount = sizeof(kAccessPatternKernels) / sizeof(kAccessPatternKernels[0]);

}  // namespace md::emu::testing
