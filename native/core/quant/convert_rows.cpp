// convert_rows.cpp: dequantization (each block layout of blocks.h read
// once, here) and the activation quantizers.
#include "convert_rows.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "../float16.h"
#include "blocks.h"

namespace md {
namespace {

using namespace blocks;

inline float h(uint16_t bits) { return halfToFloat(bits); }

void dequantizeQ4_0(const Q4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kBlock) {
    const float d = h(b[i].d);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = float((b[i].qs[j] & 0xF) - 8) * d;
      y[j + kBlock / 2] = float((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantizeQ4_1(const Q4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kBlock) {
    const float d = h(b[i].d), m = h(b[i].m);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = float(b[i].qs[j] & 0xF) * d + m;
      y[j + kBlock / 2] = float(b[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequantizeQ5_0(const Q5_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kBlock) {
    const float d = h(b[i].d);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int j = 0; j < kBlock / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | int(((qh >> j) & 1u) << 4);
      const int hi = (b[i].qs[j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
      y[j] = float(lo - 16) * d;
      y[j + kBlock / 2] = float(hi - 16) * d;
    }
  }
}

void dequantizeQ5_1(const Q5_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kBlock) {
    const float d = h(b[i].d), m = h(b[i].m);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int j = 0; j < kBlock / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | int(((qh >> j) & 1u) << 4);
      const int hi = (b[i].qs[j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
      y[j] = float(lo) * d + m;
      y[j + kBlock / 2] = float(hi) * d + m;
    }
  }
}

void dequantizeIQ4_NL(const IQ4_NL* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kBlock) {
    const float d = h(b[i].d);
    for (int j = 0; j < kBlock / 2; ++j) {
      y[j] = d * float(kIq4Values[b[i].qs[j] & 0xF]);
      y[j + kBlock / 2] = d * float(kIq4Values[b[i].qs[j] >> 4]);
    }
  }
}

void dequantizeIQ4_XS(const IQ4_XS* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h(b[i].d);
    for (int j = 0; j < kSuperBlock / kBlock; ++j, y += kBlock) {
      const float dl = d * float(iq4xsScale(b[i], j));
      const uint8_t* qs = b[i].qs + 16 * j;
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * float(kIq4Values[qs[l] & 0xF]);
        y[l + 16] = dl * float(kIq4Values[qs[l] >> 4]);
      }
    }
  }
}

// Q2_K and Q3_K: part j (32 values) is the 2-bit field j % 4 of the 32
// bytes qs[32 (j / 4) ..]; each 16 values have a scale of their own.
void dequantizeQ2_K(const Q2_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h(b[i].d), dmin = h(b[i].dmin);
    for (int j = 0; j < kSuperBlock / kBlock; ++j) {
      const uint8_t* q = b[i].qs + 32 * (j / 4);
      const int shift = 2 * (j % 4);
      for (int l = 0; l < 32; ++l) {
        const uint8_t sc = b[i].scales[2 * j + l / 16];
        *y++ = d * float(sc & 0xF) * float((q[l] >> shift) & 3) - dmin * float(sc >> 4);
      }
    }
  }
}

void dequantizeQ3_K(const Q3_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h(b[i].d);
    int8_t scales[16];
    scalesQ3K(b[i].scales, scales);
    for (int j = 0; j < kSuperBlock / kBlock; ++j) {
      const uint8_t* q = b[i].qs + 32 * (j / 4);
      const int shift = 2 * (j % 4);
      for (int l = 0; l < 32; ++l) {
        const int value = int((q[l] >> shift) & 3) - (((b[i].hmask[l] >> j) & 1) != 0 ? 0 : 4);
        *y++ = d * float(scales[2 * j + l / 16]) * float(value);
      }
    }
  }
}

void dequantizeQ8_0(const Q8_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kBlock) {
    const float d = h(b[i].d);
    for (int j = 0; j < kBlock; ++j) y[j] = float(b[i].qs[j]) * d;
  }
}

// Q4_K and Q5_K: the same scales and mins; Q5_K adds a fifth bit from qh.
template <class Block, bool kFive>
void dequantizeK45(const Block* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h(b[i].d), dmin = h(b[i].dmin);
    const uint8_t* q = b[i].qs;
    uint8_t sm[16];  // scales, then mins
    scalesAndMinsK4(b[i].scales, sm);
    for (int j = 0; j < kSuperBlock / 64; ++j, q += 32) {
      const float d1 = d * sm[2 * j], min1 = dmin * sm[8 + 2 * j], d2 = d * sm[2 * j + 1], min2 = dmin * sm[9 + 2 * j];
      auto fifth = [&](int l, int bit) -> int {
        if constexpr (kFive) return (b[i].qh[l] >> bit) & 1 ? 16 : 0;
        return 0;
      };
      for (int l = 0; l < 32; ++l) *y++ = d1 * float((q[l] & 0xF) + fifth(l, 2 * j)) - min1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * float((q[l] >> 4) + fifth(l, 2 * j + 1)) - min2;
    }
  }
}

void dequantizeQ6_K(const Q6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = int((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = int((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * float(sc[is + 0]) * float(q1);
        y[l + 32] = d * float(sc[is + 2]) * float(q2);
        y[l + 64] = d * float(sc[is + 4]) * float(q3);
        y[l + 96] = d * float(sc[is + 6]) * float(q4);
      }
    }
  }
}

float blockAbsMax(const float* x, int n) {
  float amax = 0;
  for (int j = 0; j < n; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  return amax;
}

// ggml's x86 quantizer: d = max|x| / 127, q = round-half-even(x * 127 / max|x|).
template <class Block>
void quantizeQ8Blocks(const float* x, Block* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kBlock) {
    const float amax = blockAbsMax(x, kBlock);
    const float d = amax / 127.f;
    const float id = amax != 0.f ? 127.f / amax : 0.f;
    y[i].d = halfFromFloat(d);
    int sum = 0;
    for (int j = 0; j < kBlock; ++j) {
      y[i].qs[j] = int8_t(std::nearbyint(x[j] * id));
      sum += y[i].qs[j];
    }
    if constexpr (sizeof(Block) == sizeof(Q8_1)) y[i].s = halfFromFloat(d * float(sum));
  }
}

// ggml's quantize_row_q8_K_ref: the scale from the signed value of largest
// magnitude, so that value quantizes to -127 exactly.
void quantizeQ8_K(const float* x, Q8_K* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kSuperBlock) {
    float amax = 0, max = 0;
    for (int j = 0; j < kSuperBlock; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0) {
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < kSuperBlock; ++j) {
      const int v = int(std::nearbyint(iscale * x[j]));
      y[i].qs[j] = int8_t(v < 127 ? v : 127);
    }
    for (int j = 0; j < kSuperBlock / 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[i].qs[j * 16 + l];
      y[i].bsums[j] = int16_t(sum);
    }
    y[i].d = 1 / iscale;
  }
}

}  // namespace

uint16_t bf16FromFloat(float f) {
  uint32_t u = bitsFromFloat(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 64);  // quiet NaN
  return uint16_t((u + (0x7FFFu + ((u >> 16) & 1u))) >> 16);
}

float bf16ToFloat(uint16_t b) { return floatFromBits(uint32_t(b) << 16); }

TensorType activationTypeFor(TensorType weights) {
  switch (weights) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16: return weights;
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL: return TensorType::Q8_0;
    case TensorType::Q4_1:
    case TensorType::Q5_1: return TensorType::Q8_1;
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::IQ4_XS:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K: return TensorType::Q8_K;
    default: throw std::logic_error("activationTypeFor: not a weight type");
  }
}

void dequantizeRow(TensorType type, const void* src, float* dst, int64_t n) {
  const int64_t nb = n / tensorTypeInfo(type).blockValues;
  switch (type) {
    case TensorType::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case TensorType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = halfToFloat(s[i]);
      return;
    }
    case TensorType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16ToFloat(s[i]);
      return;
    }
    case TensorType::Q4_0: return dequantizeQ4_0(static_cast<const Q4_0*>(src), dst, nb);
    case TensorType::Q4_1: return dequantizeQ4_1(static_cast<const Q4_1*>(src), dst, nb);
    case TensorType::Q5_0: return dequantizeQ5_0(static_cast<const Q5_0*>(src), dst, nb);
    case TensorType::Q5_1: return dequantizeQ5_1(static_cast<const Q5_1*>(src), dst, nb);
    case TensorType::Q8_0: return dequantizeQ8_0(static_cast<const Q8_0*>(src), dst, nb);
    case TensorType::IQ4_NL: return dequantizeIQ4_NL(static_cast<const IQ4_NL*>(src), dst, nb);
    case TensorType::IQ4_XS: return dequantizeIQ4_XS(static_cast<const IQ4_XS*>(src), dst, nb);
    case TensorType::Q2_K: return dequantizeQ2_K(static_cast<const Q2_K*>(src), dst, nb);
    case TensorType::Q3_K: return dequantizeQ3_K(static_cast<const Q3_K*>(src), dst, nb);
    case TensorType::Q4_K: return dequantizeK45<Q4_K, false>(static_cast<const Q4_K*>(src), dst, nb);
    case TensorType::Q5_K: return dequantizeK45<Q5_K, true>(static_cast<const Q5_K*>(src), dst, nb);
    case TensorType::Q6_K: return dequantizeQ6_K(static_cast<const Q6_K*>(src), dst, nb);
    case TensorType::Q8_1: {
      const Q8_1* b = static_cast<const Q8_1*>(src);
      for (int64_t i = 0; i < nb; ++i)
        for (int j = 0; j < kBlock; ++j) dst[i * kBlock + j] = float(b[i].qs[j]) * h(b[i].d);
      return;
    }
    case TensorType::Q8_K: {
      const Q8_K* b = static_cast<const Q8_K*>(src);
      for (int64_t i = 0; i < nb; ++i)
        for (int j = 0; j < kSuperBlock; ++j) dst[i * kSuperBlock + j] = float(b[i].qs[j]) * b[i].d;
      return;
    }
    default: throw std::logic_error("dequantizeRow: unknown type");
  }
}

void quantizeActivations(TensorType type, const float* src, void* dst, int64_t n) {
  const int64_t nb = n / tensorTypeInfo(type).blockValues;
  switch (type) {
    case TensorType::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case TensorType::F16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = halfFromFloat(src[i]);
      return;
    }
    case TensorType::BF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = bf16FromFloat(src[i]);
      return;
    }
    case TensorType::Q8_0: return quantizeQ8Blocks(src, static_cast<Q8_0*>(dst), nb);
    case TensorType::Q8_1: return quantizeQ8Blocks(src, static_cast<Q8_1*>(dst), nb);
    case TensorType::Q8_K: return quantizeQ8_K(src, static_cast<Q8_K*>(dst), nb);
    default: throw std::logic_error("quantizeActivations: not an activation type");
  }
}

}  // namespace md
