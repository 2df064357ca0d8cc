// cpu_features.h: which x86-64 vector extensions this CPU and OS support,
// read from CPUID and XGETBV. Defined in a file built without any ISA flag,
// so the ISA-specific files can ask before running their code. Always false
// on other CPUs.
#pragma once

namespace md {

bool cpuHasAvx2();        // AVX2, FMA and F16C, with the OS saving YMM state
bool cpuHasAvxVnni();     // and AVX-VNNI
bool cpuHasAvx512Vnni();  // AVX2 as above, and AVX-512 F/BW/VL/VNNI with ZMM state saved
// AVX-512 VNNI as above and AMX (tiles, int8) with tile state saved, and
// (Linux) the kernel's permission for this process to use it, asked once.
bool cpuHasAmx();

}  // namespace md
