// metal_branch_contract.cpp: compiled by scripts/check-metal.sh as the
// Metal compiler would see metal/md_sampling.h (__METAL_VERSION__ defined,
// the stub <metal_stdlib>), with clang's default contraction (on, as
// Metal's) and FMA instructions available. The object must hold no fused
// multiply-add: metal/md_exact_float.h's Metal branch turned contraction
// off for a compiler older than Metal 3.2 too. Built with
// -DMD_CONTROL_WITHOUT_PRAGMA, the same expression without the header must
// fuse, or the check could not see a failure.
#ifdef MD_CONTROL_WITHOUT_PRAGMA
extern "C" float md_contract_check(float a, float b, float c) { return a * b + c; }
#else
#include "md_sampling.h"
extern "C" float md_contract_check(float a, float b, float c) { return md_mul_add_rounded_twice(a, b, c); }
#endif
