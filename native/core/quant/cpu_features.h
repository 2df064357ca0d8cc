// cpu_features.h: which vector extensions this CPU and OS support: on
// x86-64 read from CPUID and XGETBV, on arm64 from the OS (Linux's
// auxiliary vector, macOS's sysctl). Defined in a file built without any
// ISA flag, so the ISA-specific files can ask before running their code.
// Always false on other CPUs.
#pragma once

namespace md {

bool cpuHasAvx2();        // AVX2, FMA and F16C, with the OS saving YMM state
bool cpuHasAvxVnni();     // and AVX-VNNI
bool cpuHasAvx512Vnni();  // AVX2 as above, and AVX-512 F/BW/VL/VNNI with ZMM state saved
// AVX-512 VNNI as above and AMX (tiles, int8) with tile state saved, and
// (Linux) the kernel's permission for this process to use it, asked once.
bool cpuHasAmx();

// arm64: the float16-into-float32 multiply-add (fmlal, FEAT_FHM), which
// every Apple silicon chip has (M1 too), and Cortex-A76 or Neoverse N1
// lacks.
bool cpuHasNeonFhm();
// arm64: the dot-product (sdot), int8 matrix-multiply (smmla) and FEAT_FHM
// extensions, as Apple M2 and later, and Armv8.6 cores with float16, have.
bool cpuHasNeonI8mm();

}  // namespace md
