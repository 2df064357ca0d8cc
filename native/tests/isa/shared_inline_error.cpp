// shared_inline_error.cpp: a planted mistake for scripts/check-isa-symbols.mjs.
// A file built for AVX2 that calls a shared inline function (halfToFloat,
// from float16.h) emits its own AVX2 copy of it as a weak symbol; the
// linker may then give that copy to the portable code. The check must
// refuse this object.
#include "float16.h"

namespace md::simd {
struct Avx2 {};
}  // namespace md::simd

float convertForAvx2(unsigned short bits) { return md::halfToFloat(bits); }
