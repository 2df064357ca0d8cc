// chain_probe_kernels.cpp: chain_probe.metal compiled for the emulator.
#include <cstring>
#include <tuple>

#include "kernel_binding.h"

#include "metal_compat.h"
#include "chain_probe.metal"

namespace md::emu::testing {

extern const EmulatedKernel kChainProbeKernel;
const EmulatedKernel kChainProbeKernel = MD_EMULATED_KERNEL(md_test_chain_probe);

}  // namespace md::emu::testing
