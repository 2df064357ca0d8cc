// kernel_contracts.h: what each built-in kernel (metal/*.metal) reads and
// writes, as its params imply it: the bytes every bound buffer must hold,
// the threadgroups its outputs allow, the params block it takes. A command
// that breaks its kernel's contract would make the GPU (or the emulator)
// read or write outside a buffer; it is refused before it runs instead.
// Users' own kernels (addKernelSource) have no contract here: the generic
// checks of commandProblem apply to them.
#pragma once
#include <cstdint>
#include <string>

#include "dispatch_table.h"

namespace md {

// Why `cmd` breaks its kernel's contract when run with `params` (its
// params as patched for the step in question), or "" when it keeps it or
// the kernel has none. Bindings are taken at `slotOf(binding)` words past
// their offset (a moving binding at its step; 0 otherwise).
std::string kernelContractProblem(const DispatchCmd& cmd, const uint8_t* params, uint64_t movedSlot);

}  // namespace md
