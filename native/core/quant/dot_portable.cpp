// dot_portable.cpp: the dot kernels in plain C++.
#include "../float16.h"
#include "convert_rows.h"
#include "dot_kernels.h"
#include "simd_portable.h"

namespace md {
namespace simd {

float Portable::dotF32(const float* a, const float* b, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}
float Portable::dotF16(const uint16_t* a, const uint16_t* b, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += halfToFloat(a[i]) * halfToFloat(b[i]);
  return sum;
}
float Portable::dotBF16(const uint16_t* a, const uint16_t* b, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += bf16ToFloat(a[i]) * bf16ToFloat(b[i]);
  return sum;
}

}  // namespace simd

const DotTable* portableDotTable() {
  static const DotTable table = DotKernels<simd::Portable>::table();
  return &table;
}

}  // namespace md
