// dot_kernels.h: each weight type's dot product, written once over the
// byte-vector operations of a SIMD backend (simd_portable.h, simd_avx2.h,
// simd_neon.h). The integer parts are exact, so the backends differ only
// in the order the per-block float terms are summed.
#pragma once
#include <cstring>

#include "../float16.h"
#include "blocks.h"
#include "dot.h"

namespace md {

template <class S>
struct DotKernels {
  using V = typename S::V;
  static float h(uint16_t bits) { return halfToFloat(bits); }

  static float f32(const void* w, const void* a, int64_t n) {
    return S::dotF32(static_cast<const float*>(w), static_cast<const float*>(a), n);
  }
  static float f16(const void* w, const void* a, int64_t n) {
    return S::dotF16(static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a), n);
  }
  static float bf16(const void* w, const void* a, int64_t n) {
    return S::dotBF16(static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a), n);
  }

  // The 0/1 types against Q8_0 (Q8_1): per block, an exact int sum times
  // the two scales.
  template <class Block, class Unpack>
  static float q8Blocks(const Block* x, const blocks::Q8_0* y, int64_t nb, Unpack unpack) {
    typename S::F acc = S::fzero();
    for (int64_t i = 0; i < nb; ++i)
      acc = S::fmaddI(acc, S::dotS8S8(unpack(x[i]), S::load(y[i].qs)), h(x[i].d) * h(y[i].d));
    return S::hsumF(acc);
  }
  static float q8_0(const void* w, const void* a, int64_t n) {
    return q8Blocks(static_cast<const blocks::Q8_0*>(w), static_cast<const blocks::Q8_0*>(a), n / blocks::kBlock,
                    [](const blocks::Q8_0& b) { return S::load(b.qs); });
  }
  static float q4_0(const void* w, const void* a, int64_t n) {
    return q8Blocks(static_cast<const blocks::Q4_0*>(w), static_cast<const blocks::Q8_0*>(a), n / blocks::kBlock,
                    [](const blocks::Q4_0& b) { return S::subBytes(S::nibbles16(b.qs), S::splat(8)); });
  }
  static float q5_0(const void* w, const void* a, int64_t n) {
    // q - 16 as a byte: the nibble, with 0xF0 set where the fifth bit is clear.
    return q8Blocks(static_cast<const blocks::Q5_0*>(w), static_cast<const blocks::Q8_0*>(a), n / blocks::kBlock,
                    [](const blocks::Q5_0& b) {
                      uint32_t qh;
                      std::memcpy(&qh, b.qh, 4);
                      return S::orV(S::nibbles16(b.qs), S::andNot(S::bitsToMask(qh), S::splat(0xF0)));
                    });
  }
  static float q4_1(const void* w, const void* a, int64_t n) {
    const auto* x = static_cast<const blocks::Q4_1*>(w);
    const auto* y = static_cast<const blocks::Q8_1*>(a);
    typename S::F acc = S::fzero();
    float mins = 0;
    for (int64_t i = 0; i < n / blocks::kBlock; ++i) {
      acc = S::fmaddI(acc, S::dotU8S8(S::izero(), S::nibbles16(x[i].qs), S::load(y[i].qs), 1, 1), h(x[i].d) * h(y[i].d));
      mins += h(x[i].m) * h(y[i].s);
    }
    return S::hsumF(acc) + mins;
  }

  // The K types against Q8_K: per super-block, an exact int sum of the
  // sub-block products times their 6-bit scales, minus the mins term.
  template <class Block>
  static int32_t minsTerm(const Block& x, const blocks::Q8_K& y) {
    int32_t sum = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      blocks::scaleMinK4(j, x.scales, &sc, &m);
      sum += int32_t(m) * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
    }
    return sum;
  }
  static float q4_k(const void* w, const void* a, int64_t n) {
    const auto* x = static_cast<const blocks::Q4_K*>(w);
    const auto* y = static_cast<const blocks::Q8_K*>(a);
    float sum = 0;
    for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
      typename S::I isum = S::izero();
      for (int j = 0; j < 4; ++j) {
        uint8_t sc1, m1, sc2, m2;
        blocks::scaleMinK4(2 * j, x[i].scales, &sc1, &m1);
        blocks::scaleMinK4(2 * j + 1, x[i].scales, &sc2, &m2);
        const V raw = S::load(x[i].qs + 32 * j);
        isum = S::dotU8S8(isum, S::lowNibbles(raw), S::load(y[i].qs + 64 * j), sc1, sc1);
        isum = S::dotU8S8(isum, S::highNibbles(raw), S::load(y[i].qs + 64 * j + 32), sc2, sc2);
      }
      sum += y[i].d * h(x[i].d) * float(S::hsumI(isum)) - y[i].d * h(x[i].dmin) * float(minsTerm(x[i], y[i]));
    }
    return sum;
  }
  static float q5_k(const void* w, const void* a, int64_t n) {
    const auto* x = static_cast<const blocks::Q5_K*>(w);
    const auto* y = static_cast<const blocks::Q8_K*>(a);
    const V sixteen = S::splat(16);
    float sum = 0;
    for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
      const V qh = S::load(x[i].qh);
      typename S::I isum = S::izero();
      for (int j = 0; j < 4; ++j) {
        uint8_t sc1, m1, sc2, m2;
        blocks::scaleMinK4(2 * j, x[i].scales, &sc1, &m1);
        blocks::scaleMinK4(2 * j + 1, x[i].scales, &sc2, &m2);
        const V raw = S::load(x[i].qs + 32 * j);
        const V lo = S::orV(S::lowNibbles(raw), S::andV(S::testMask(qh, uint8_t(1u << (2 * j))), sixteen));
        const V hi = S::orV(S::highNibbles(raw), S::andV(S::testMask(qh, uint8_t(2u << (2 * j))), sixteen));
        isum = S::dotU8S8(isum, lo, S::load(y[i].qs + 64 * j), sc1, sc1);
        isum = S::dotU8S8(isum, hi, S::load(y[i].qs + 64 * j + 32), sc2, sc2);
      }
      sum += y[i].d * h(x[i].d) * float(S::hsumI(isum)) - y[i].d * h(x[i].dmin) * float(minsTerm(x[i], y[i]));
    }
    return sum;
  }
  static float q6_k(const void* w, const void* a, int64_t n) {
    const auto* x = static_cast<const blocks::Q6_K*>(w);
    const auto* y = static_cast<const blocks::Q8_K*>(a);
    const V three = S::splat(3);
    float sum = 0;
    for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
      typename S::I isum = S::izero();
      for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = x[i].ql + 64 * half;
        const int8_t* sc = x[i].scales + 8 * half;
        const int8_t* q8 = y[i].qs + 128 * half;
        const V raw0 = S::load(ql), raw1 = S::load(ql + 32), hb = S::load(x[i].qh + 32 * half);
        // Unsigned 6-bit values; the -32 offset is taken out below via bsums.
        const V q1 = S::orV(S::lowNibbles(raw0), S::template shiftLeft<4>(S::andV(hb, three)));
        const V q2 = S::orV(S::lowNibbles(raw1), S::template shiftLeft<4>(S::andV(S::template shiftRight<2>(hb), three)));
        const V q3 = S::orV(S::highNibbles(raw0), S::template shiftLeft<4>(S::andV(S::template shiftRight<4>(hb), three)));
        const V q4 = S::orV(S::highNibbles(raw1), S::template shiftLeft<4>(S::template shiftRight<6>(hb)));
        isum = S::dotU8S8(isum, q1, S::load(q8), sc[0], sc[1]);
        isum = S::dotU8S8(isum, q2, S::load(q8 + 32), sc[2], sc[3]);
        isum = S::dotU8S8(isum, q3, S::load(q8 + 64), sc[4], sc[5]);
        isum = S::dotU8S8(isum, q4, S::load(q8 + 96), sc[6], sc[7]);
      }
      int32_t offset = 0;
      for (int j = 0; j < 16; ++j) offset += int32_t(x[i].scales[j]) * y[i].bsums[j];
      sum += y[i].d * h(x[i].d) * float(S::hsumI(isum) - 32 * offset);
    }
    return sum;
  }

  static DotTable table() {
    return {S::kName, &f32, &f16, &bf16, &q4_0, &q4_1, &q5_0, &q8_0, &q4_k, &q5_k, &q6_k};
  }
};

}  // namespace md
