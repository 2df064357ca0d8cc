// dot_kernels.h: each weight type's dot products, written once over the
// byte-vector operations of a SIMD backend (simd_portable.h, simd_avx2.h,
// simd_neon.h), as tiles of R weight rows x T activation rows. The integer
// parts are exact; per (row, token) the block terms are summed in block
// order into one accumulator, as llama.cpp's CPU kernels sum them, so the
// backends differ only in how the accumulator's lanes are added up.
//
// Only the backend's TU includes this (it may be built for AVX2): helpers
// here are members of the template, never shared inline functions, so the
// linker cannot hand AVX2 code to the portable path.
#pragma once
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "blocks.h"
#include "dot.h"
#include "repack.h"
#include "unroll.h"

namespace md {

// The repacked tiles' row-lane sets of a backend S: RowLanes holds one
// group of 8 rows (S::Rows where S's own vectors are narrower, NEON's;
// else S itself), WideLanes the most groups (S::Wide, else RowLanes).
template <class S, class = void>
struct RowLanesOf {
  using type = S;
};
template <class S>
struct RowLanesOf<S, std::void_t<typename S::Rows>> {
  using type = typename S::Rows;
};
template <class S, class = void>
struct WideLanesOf {
  using type = typename RowLanesOf<S>::type;
};
template <class S>
struct WideLanesOf<S, std::void_t<typename S::Wide>> {
  using type = typename S::Wide;
};

// A row-lane set's 16 bytes of a token for its by-lane dot (L::Token16,
// where L::kLaneDot); a placeholder elsewhere.
template <class L, class = void>
struct Token16Of {
  using type = int;
};
template <class L>
struct Token16Of<L, std::void_t<typename L::Token16>> {
  using type = typename L::Token16;
};

template <class S>
struct DotKernels {
  using V = typename S::V;
  using I = typename S::I;
  using F = typename S::F;

  template <class Block>
  static const Block* block(const uint8_t* base, size_t stride, int row) {
    return reinterpret_cast<const Block*>(base + size_t(row) * stride);
  }

  // Several weight rows stream at once, more than the hardware prefetcher
  // follows well. A tile's rows are followed in memory by the next tiles'
  // (matmul walks the rows in order), so each load asks for the same block
  // two tiles on (`ahead` bytes further; one tile on was 4% slower, four
  // no better, on the 1B benchmark models).
  static void prefetch(const void* p, size_t ahead) { __builtin_prefetch(static_cast<const char*>(p) + ahead); }

  // ---- The 0/1 types against Q8_0 (Q4_1 against Q8_1) ----

  // unpack() gives the quants as unsigned bytes q; the value is q - kOffset.
  // With an offset, sum((q - k) a) is computed as sum(q a) on top of
  // -k sum(a) per lane (the same int32 lanes, one product per byte fewer);
  // Q8_0's signed quants take the sign trick instead.
  struct Q8_0Format {
    using Block = blocks::Q8_0;
    static constexpr uint8_t kOffset = 0;
    static V unpack(const Block& b) { return S::load(b.qs); }
  };
  struct Q4_0Format {
    using Block = blocks::Q4_0;
    static constexpr uint8_t kOffset = 8;
    static V unpack(const Block& b) { return S::nibbles16(b.qs); }
  };
  struct Q5_0Format {
    using Block = blocks::Q5_0;
    static constexpr uint8_t kOffset = 16;
    // The nibble with its fifth bit: 0..31.
    static V unpack(const Block& b) {
      uint32_t qh;
      std::memcpy(&qh, b.qh, 4);
      return S::orV(S::nibbles16(b.qs), S::andV(S::bitsToMask(qh), S::splat(0x10)));
    }
  };

  // IQ4_NL: each nibble stands for a signed codebook value (the sign trick, as Q8_0).
  struct IQ4_NLFormat {
    using Block = blocks::IQ4_NL;
    static constexpr uint8_t kOffset = 0;
    static V unpack(const Block& b) { return S::codebook16(blocks::kIq4Values, S::nibbles16(b.qs)); }
  };

  template <class Format, int R, int T>
  static void q8Tile(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    using Block = typename Format::Block;
    F acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = S::fzero();
    for (int64_t i = 0; i < n / blocks::kBlock; ++i) {
      V wv[R];
      const Block* rowBlocks[R];
      for (int r = 0; r < R; ++r) {
        rowBlocks[r] = &block<Block>(w, ws, r)[i];
        prefetch(rowBlocks[r], 2 * R * ws);
        wv[r] = Format::unpack(*rowBlocks[r]);
      }
      // The R weight scales, converted at once.
      const typename S::template Scales<R> wd = S::template scales<R>(rowBlocks);
      for (int t = 0; t < T; ++t) {
        const blocks::Q8_0& y = block<blocks::Q8_0>(a, as, t)[i];
        const V av = S::load(y.qs);
        const typename S::template Scales<R> d = S::times(wd, S::half(y.d));
        if constexpr (Format::kOffset > 0) {
          const I offset = S::negatedOffset(av, Format::kOffset);
          for (int r = 0; r < R; ++r) acc[r][t] = S::fmaddScale(acc[r][t], S::dotU8S8Add(offset, wv[r], av), d, r);
        } else {
          for (int r = 0; r < R; ++r) acc[r][t] = S::fmaddScale(acc[r][t], S::dotS8S8(wv[r], av), d, r);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) out[size_t(r) * os + size_t(t)] = S::hsumF(acc[r][t]);
  }

  // Q4_1 and Q5_1 against Q8_1: q * d + m, the m term from Q8_1's sum.
  struct Q4_1Format {
    using Block = blocks::Q4_1;
    static V unpack(const Block& b) { return S::nibbles16(b.qs); }
  };
  struct Q5_1Format {
    using Block = blocks::Q5_1;
    static V unpack(const Block& b) {
      uint32_t qh;
      std::memcpy(&qh, b.qh, 4);
      return S::orV(S::nibbles16(b.qs), S::andV(S::bitsToMask(qh), S::splat(0x10)));
    }
  };

  template <class Format, int R, int T>
  static void minTile(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    using Block = typename Format::Block;
    F acc[R][T];
    float mins[R][T] = {};
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = S::fzero();
    for (int64_t i = 0; i < n / blocks::kBlock; ++i) {
      V wv[R];
      float wd[R], wm[R];
      for (int r = 0; r < R; ++r) {
        const Block& b = block<Block>(w, ws, r)[i];
        prefetch(&b, 2 * R * ws);
        wv[r] = Format::unpack(b);
        wd[r] = S::half(b.d);
        wm[r] = S::half(b.m);
      }
      for (int t = 0; t < T; ++t) {
        const blocks::Q8_1& y = block<blocks::Q8_1>(a, as, t)[i];
        const V av = S::load(y.qs);
        const float ad = S::half(y.d), as1 = S::half(y.s);
        for (int r = 0; r < R; ++r) {
          acc[r][t] = S::fmaddI(acc[r][t], S::dotU8S8(S::izero(), wv[r], av, 1, 1), wd[r] * ad);
          mins[r][t] += wm[r] * as1;
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) out[size_t(r) * os + size_t(t)] = S::hsumF(acc[r][t]) + mins[r][t];
  }

  // ---- The K types against Q8_K: per super-block, an exact int sum of the
  // sub-block products times their scales, minus the mins term ----

  static int32_t minsTerm(const uint8_t* mins, const blocks::Q8_K& y) {
    int32_t sum = 0;
    for (int j = 0; j < 8; ++j) sum += int32_t(mins[j]) * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
    return sum;
  }

  // Q4_K and Q5_K: fifth bits from qh for Q5_K.
  template <class Block, bool kFive, int R, int T>
  static void k45Tile(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    float sum[R][T] = {};
    const V sixteen = S::splat(16);
    for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
      uint8_t sm[R][16];  // scales, then mins
      for (int r = 0; r < R; ++r) blocks::scalesAndMinsK4(block<Block>(w, ws, r)[i].scales, sm[r]);
      I isum[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) isum[r][t] = S::izero();
      for (int j = 0; j < 4; ++j) {
        V lo[R], hi[R];
        for (int r = 0; r < R; ++r) {
          const Block& b = block<Block>(w, ws, r)[i];
          prefetch(b.qs + 32 * j, 2 * R * ws);
          const V raw = S::load(b.qs + 32 * j);
          lo[r] = S::lowNibbles(raw);
          hi[r] = S::highNibbles(raw);
          if constexpr (kFive) {
            const V qh = S::load(b.qh);
            lo[r] = S::orV(lo[r], S::andV(S::testMask(qh, uint8_t(1u << (2 * j))), sixteen));
            hi[r] = S::orV(hi[r], S::andV(S::testMask(qh, uint8_t(2u << (2 * j))), sixteen));
          }
        }
        for (int t = 0; t < T; ++t) {
          const blocks::Q8_K& y = block<blocks::Q8_K>(a, as, t)[i];
          const V alo = S::load(y.qs + 64 * j), ahi = S::load(y.qs + 64 * j + 32);
          for (int r = 0; r < R; ++r) {
            isum[r][t] = S::dotU8S8(isum[r][t], lo[r], alo, sm[r][2 * j], sm[r][2 * j]);
            isum[r][t] = S::dotU8S8(isum[r][t], hi[r], ahi, sm[r][2 * j + 1], sm[r][2 * j + 1]);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        const Block& b = block<Block>(w, ws, r)[i];
        const float d = S::half(b.d), dmin = S::half(b.dmin);
        for (int t = 0; t < T; ++t) {
          const blocks::Q8_K& y = block<blocks::Q8_K>(a, as, t)[i];
          sum[r][t] += y.d * d * float(S::hsumI(isum[r][t])) - y.d * dmin * float(minsTerm(sm[r] + 8, y));
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) out[size_t(r) * os + size_t(t)] = sum[r][t];
  }

  template <int R, int T>
  static void q6_kTile(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    float sum[R][T] = {};
    const V three = S::splat(3);
    for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
      I isum[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) isum[r][t] = S::izero();
      for (int half = 0; half < 2; ++half) {
        V q[R][4];
        for (int r = 0; r < R; ++r) {
          const blocks::Q6_K& b = block<blocks::Q6_K>(w, ws, r)[i];
          prefetch(b.ql + 64 * half, 2 * R * ws);
          prefetch(b.qh + 32 * half, 2 * R * ws);
          const uint8_t* ql = b.ql + 64 * half;
          const V raw0 = S::load(ql), raw1 = S::load(ql + 32), hb = S::load(b.qh + 32 * half);
          // Unsigned 6-bit values; the -32 offset is taken out below via bsums.
          q[r][0] = S::orV(S::lowNibbles(raw0), S::template shiftLeft<4>(S::andV(hb, three)));
          q[r][1] =
              S::orV(S::lowNibbles(raw1), S::template shiftLeft<4>(S::andV(S::template shiftRight<2>(hb), three)));
          q[r][2] =
              S::orV(S::highNibbles(raw0), S::template shiftLeft<4>(S::andV(S::template shiftRight<4>(hb), three)));
          q[r][3] = S::orV(S::highNibbles(raw1), S::template shiftLeft<4>(S::template shiftRight<6>(hb)));
        }
        for (int t = 0; t < T; ++t) {
          const int8_t* q8 = block<blocks::Q8_K>(a, as, t)[i].qs + 128 * half;
          for (int u = 0; u < 4; ++u) {
            const V av = S::load(q8 + 32 * u);
            for (int r = 0; r < R; ++r) {
              const int8_t* sc = block<blocks::Q6_K>(w, ws, r)[i].scales + 8 * half + 2 * u;
              isum[r][t] = S::dotU8S8(isum[r][t], q[r][u], av, sc[0], sc[1]);
            }
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        const blocks::Q6_K& b = block<blocks::Q6_K>(w, ws, r)[i];
        const float d = S::half(b.d);
        for (int t = 0; t < T; ++t) {
          const blocks::Q8_K& y = block<blocks::Q8_K>(a, as, t)[i];
          int32_t offset = 0;
          for (int j = 0; j < 16; ++j) offset += int32_t(b.scales[j]) * y.bsums[j];
          sum[r][t] += y.d * d * float(S::hsumI(isum[r][t]) - 32 * offset);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) out[size_t(r) * os + size_t(t)] = sum[r][t];
  }

  // Q2_K and Q3_K: part j is the 2-bit field j % 4 of the 32 bytes at
  // qs + 32 (j / 4), a scale per 16 values. Q2_K's are 4-bit scales and
  // mins (the mins term from Q8_K's 16-value sums); Q3_K's are signed 6-bit
  // scales, and its third bit (hmask) makes the unsigned value u = q + 4h,
  // whose offset of 4 comes off through the sums as Q6_K's 32 does.
  template <bool kThree, int R, int T>
  static void k23Tile(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    using Block = std::conditional_t<kThree, blocks::Q3_K, blocks::Q2_K>;
    float sum[R][T] = {};
    const V three = S::splat(3), four = S::splat(4);
    for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
      int8_t sc[R][16];  // each 16 values' scale (Q2_K: its 4 low bits)
      for (int r = 0; r < R; ++r) {
        const Block& b = block<Block>(w, ws, r)[i];
        if constexpr (kThree)
          blocks::scalesQ3K(b.scales, sc[r]);
        else
          for (int k = 0; k < 16; ++k) sc[r][k] = int8_t(b.scales[k] & 0xF);
      }
      I isum[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) isum[r][t] = S::izero();
      for (int half = 0; half < 2; ++half) {
        V q[R][4];
        for (int r = 0; r < R; ++r) {
          const Block& b = block<Block>(w, ws, r)[i];
          prefetch(b.qs + 32 * half, 2 * R * ws);
          const V raw = S::load(b.qs + 32 * half);
          q[r][0] = S::andV(raw, three);
          q[r][1] = S::andV(S::template shiftRight<2>(raw), three);
          q[r][2] = S::andV(S::template shiftRight<4>(raw), three);
          q[r][3] = S::template shiftRight<6>(raw);
          if constexpr (kThree) {
            const V hm = S::load(b.hmask);
            for (int k = 0; k < 4; ++k)
              q[r][k] = S::orV(q[r][k], S::andV(S::testMask(hm, uint8_t(1u << (4 * half + k))), four));
          }
        }
        for (int t = 0; t < T; ++t) {
          const int8_t* q8 = block<blocks::Q8_K>(a, as, t)[i].qs + 128 * half;
          for (int k = 0; k < 4; ++k) {
            const V av = S::load(q8 + 32 * k);
            const int j = 4 * half + k;
            for (int r = 0; r < R; ++r)
              isum[r][t] = S::dotU8S8(isum[r][t], q[r][k], av, sc[r][2 * j], sc[r][2 * j + 1]);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        const Block& b = block<Block>(w, ws, r)[i];
        const float d = S::half(b.d);
        for (int t = 0; t < T; ++t) {
          const blocks::Q8_K& y = block<blocks::Q8_K>(a, as, t)[i];
          int32_t byScale = 0;  // sum of each 16 values' scale (Q2_K: min) times its Q8_K sum
          for (int k = 0; k < 16; ++k) byScale += int32_t(kThree ? sc[r][k] : int8_t(b.scales[k] >> 4)) * y.bsums[k];
          if constexpr (kThree) {
            sum[r][t] += y.d * d * float(S::hsumI(isum[r][t]) - 4 * byScale);
          } else {
            const float dmin = S::half(b.dmin);
            sum[r][t] += y.d * d * float(S::hsumI(isum[r][t])) - y.d * dmin * float(byScale);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) out[size_t(r) * os + size_t(t)] = sum[r][t];
  }

  // IQ4_XS: IQ4_NL's codebook in super-blocks, a signed 6-bit scale per part.
  template <int R, int T>
  static void iq4_xsTile(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    float sum[R][T] = {};
    for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
      I isum[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) isum[r][t] = S::izero();
      for (int j = 0; j < blocks::kSuperBlock / blocks::kBlock; ++j) {
        V wv[R];
        int32_t scale[R];
        for (int r = 0; r < R; ++r) {
          const blocks::IQ4_XS& b = block<blocks::IQ4_XS>(w, ws, r)[i];
          prefetch(b.qs + 16 * j, 2 * R * ws);
          wv[r] = S::codebook16(blocks::kIq4Values, S::nibbles16(b.qs + 16 * j));
          scale[r] = blocks::iq4xsScale(b, j);
        }
        for (int t = 0; t < T; ++t) {
          const V av = S::load(block<blocks::Q8_K>(a, as, t)[i].qs + 32 * j);
          for (int r = 0; r < R; ++r) isum[r][t] = S::addScaled(isum[r][t], S::dotS8S8(wv[r], av), scale[r]);
        }
      }
      for (int r = 0; r < R; ++r) {
        const float d = S::half(block<blocks::IQ4_XS>(w, ws, r)[i].d);
        for (int t = 0; t < T; ++t) sum[r][t] += block<blocks::Q8_K>(a, as, t)[i].d * d * float(S::hsumI(isum[r][t]));
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) out[size_t(r) * os + size_t(t)] = sum[r][t];
  }

  // ---- Float rows ----
  //
  // With vector lanes (S::kFloatTiles): a tile of R rows x T tokens, each
  // pair's 8 lanes summed in one accumulator 8 values a step, the lanes
  // added, then the last n % 8 products one by one onto the sum (as ggml
  // adds its leftovers). Each row's 8 values are converted once for every
  // token and each token's once for every row, and a pair's operations do
  // not depend on the tile's shape: a batch gives each token the bits it
  // gets alone. Otherwise one row dot per pair.
  //
  // The 8 lanes are those of the row-lane set (RowLanesOf: S itself on
  // x86, two 128-bit vectors on NEON, whose lanes 0..3 and 4..7 sum as
  // Neon::dotF16's two accumulators do).
  //
  // The tile runs in blocks of at most FL::kFloatBlockRows rows x
  // FL::kFloatBlockTokens tokens, each over the whole row, so that a
  // block's sums stay in registers (NEON's 8 lanes are two registers: 8
  // rows x 4 tokens of sums would take 64 of its 32). A pair's steps are
  // the same in any block, so are its bits.
  template <int Kind, int R, int T>
  static void floatTile(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    if constexpr (S::kFloatTiles) {
      floatBlocks<Kind, R, T, 0, 0>(w, ws, a, as, n, out, os);
    } else {
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
          const void* x = w + size_t(r) * ws;
          const void* y = a + size_t(t) * as;
          float v;
          if constexpr (Kind == 0)
            v = S::dotF32(static_cast<const float*>(x), static_cast<const float*>(y), n);
          else if constexpr (Kind == 1)
            v = S::dotF16(static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(y), n);
          else
            v = S::dotBF16(static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(y), n);
          out[size_t(r) * os + size_t(t)] = v;
        }
    }
  }

  // floatTile's block of RB rows x TB tokens at row R0, token T0 of a
  // tile of R x T, then the next block (rows first).
  template <int Kind, int R, int T, int R0, int T0>
  static void floatBlocks(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    using FL = typename RowLanesOf<S>::type;
    constexpr int RB = std::min(R - R0, FL::kFloatBlockRows), TB = std::min(T - T0, FL::kFloatBlockTokens);
    floatBlock<Kind, RB, TB, R>(w + size_t(R0) * ws, ws, a + size_t(T0) * as, as, n, out + size_t(R0) * os + size_t(T0),
                                os);
    if constexpr (R0 + RB < R)
      floatBlocks<Kind, R, T, R0 + RB, T0>(w, ws, a, as, n, out, os);
    else if constexpr (T0 + TB < T)
      floatBlocks<Kind, R, T, 0, T0 + TB>(w, ws, a, as, n, out, os);
  }
  // floatBlock's step: 8 values of every pair at `at`; Prefetch: the rows
  // `ahead` bytes on prefetched where `at` is a multiple of 64.
  template <int Kind, int R, int T, bool Prefetch>
  static inline __attribute__((always_inline)) void floatStep(typename RowLanesOf<S>::type::F (&acc)[R][T],
                                                              const uint8_t* w, size_t ws, const uint8_t* a, size_t as,
                                                              int64_t at, size_t ahead = 0) {
    using FL = typename RowLanesOf<S>::type;
    constexpr size_t kValueBytes = Kind == 0 ? 4 : 2;
    typename FL::F wv[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* row = w + size_t(r) * ws + size_t(at) * kValueBytes;
      if (Prefetch && at % 64 == 0) prefetch(row, ahead);
      wv[r] = FL::template floats8<Kind>(row);
    }
    for (int t = 0; t < T; ++t) {
      const typename FL::F xv = FL::template floats8<Kind>(a + size_t(t) * as + size_t(at) * kValueBytes);
      for (int r = 0; r < R; ++r) acc[r][t] = FL::fmaddF(wv[r], xv, acc[r][t]);
    }
  }
  // TileRows: the tile's rows, which the prefetch runs ahead of.
  template <int Kind, int R, int T, int TileRows>
  static void floatBlock(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    using FL = typename RowLanesOf<S>::type;
    using LF = typename FL::F;
    constexpr size_t kValueBytes = Kind == 0 ? 4 : 2;
    LF acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = FL::fzero();
    int64_t i = 0;
    if constexpr (FL::kFloatTurnUnrolled) {
      // 64 values a turn, unrolled, the rows prefetched once a turn.
      for (; i + 64 <= n; i += 64) {
        for (int r = 0; r < R; ++r) prefetch(w + size_t(r) * ws + size_t(i) * kValueBytes, 2 * TileRows * ws);
        MD_UNROLL for (int k = 0; k < 8; ++k) floatStep<Kind, R, T, false>(acc, w, ws, a, as, i + 8 * k);
      }
    }
    for (; i + 8 <= n; i += 8) floatStep<Kind, R, T, true>(acc, w, ws, a, as, i, 2 * TileRows * ws);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) {
        float sum = FL::hsumF(acc[r][t]);
        for (int64_t j = i; j < n; ++j)
          sum += rowValue<Kind>(w + size_t(r) * ws + size_t(j) * kValueBytes) *
                 rowValue<Kind>(a + size_t(t) * as + size_t(j) * kValueBytes);
        out[size_t(r) * os + size_t(t)] = sum;
      }
  }

  // ---- Weighted sums of float rows (WeightedRows) ----
  //
  // Each out[i] gets out[i] + w0 v0[i], then + w1 v1[i], ...: the scalar
  // loop's operations (products rounded, then added), 8 lanes at a time
  // where S has float lanes, 64 values of out held in registers over all
  // the rows.

  // One value of a float row: Kind 0 float32, 1 float16, 2 bfloat16.
  template <int Kind>
  static float rowValue(const uint8_t* p) {
    float f;
    if constexpr (Kind == 0) {
      std::memcpy(&f, p, 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      if constexpr (Kind == 1) return S::half(bits);
      const uint32_t wide = uint32_t(bits) << 16;
      std::memcpy(&f, &wide, 4);
    }
    return f;
  }
  template <int Kind>
  static void weightedRows(const uint8_t* rows, size_t stride, const float* weights, int64_t count, int64_t n,
                           float* out) {
    static_assert(Kind == 0 || Kind == 1, "float32 or float16 rows");
    constexpr size_t kValueBytes = Kind == 0 ? 4 : 2;
    int64_t i = 0;
    if constexpr (S::kFloatTiles) {
      using FL = typename RowLanesOf<S>::type;  // as floatTile's
      using LF = typename FL::F;
      constexpr int kVectors = 8;
      for (; i + 8 * kVectors <= n; i += 8 * kVectors) {
        LF acc[kVectors];
        for (int k = 0; k < kVectors; ++k) acc[k] = FL::loadF(out + i + 8 * k);
        for (int64_t j = 0; j < count; ++j) {
          const LF wj = FL::splatF(weights[j]);
          const uint8_t* row = rows + size_t(j) * stride + size_t(i) * kValueBytes;
          for (int k = 0; k < kVectors; ++k)
            acc[k] = FL::addF(acc[k], FL::mulLanes(wj, FL::template floats8<Kind>(row + 8 * k * kValueBytes)));
        }
        for (int k = 0; k < kVectors; ++k) FL::storeF(acc[k], out + i + 8 * k);
      }
      for (; i + 8 <= n; i += 8) {
        LF acc = FL::loadF(out + i);
        for (int64_t j = 0; j < count; ++j)
          acc = FL::addF(acc,
                         FL::mulLanes(FL::splatF(weights[j]),
                                      FL::template floats8<Kind>(rows + size_t(j) * stride + size_t(i) * kValueBytes)));
        FL::storeF(acc, out + i);
      }
    }
    for (; i < n; ++i)
      for (int64_t j = 0; j < count; ++j)
        out[i] += weights[j] * rowValue<Kind>(rows + size_t(j) * stride + size_t(i) * kValueBytes);
  }

  // ---- Q4_0 and Q8_0 repacked in groups of 8 rows (repack.h): lane r is row r ----
  //
  // The repacked tiles run on a row-lane set L: RowLanesOf<S> (one group
  // of 8 rows) or WideLanesOf<S> (two groups, 16 rows, where S has them:
  // simd_avx512.h). Each lane takes the same steps either way, so a row
  // has the same bits in a tile of 8 rows as in one of 16.
  //
  // Per block and token: the rows' sums of quant x activation, exact in
  // int32 (each chunk's 4 bytes per row against the token's 4 matching
  // bytes, broadcast), on top of -offset times the activations' sum (the
  // unsigned form's offset: the activation rows are Q8_0 with each block's
  // sum after the row, ActivationRows::inQ8_0WithSums); then one conversion
  // and one multiply-add for the rows, each row's terms added in block
  // order. The same sum for a token whatever the tile's token count, so a
  // batch gives each token the bits it gets alone.
  //
  // unpack() gives the block's 8 value vectors: vector c holds values
  // 4c..4c+3 of each row, as unsigned bytes q + offset<L>(), or as the
  // signed quants where kSigned<L>, times kScale<L> (Q4_0's signed form
  // gives 16 q, the nibble in the byte's high half).
  struct Q4_0x8Format {
    static constexpr size_t kBlockBytes = kQ4_0x8BlockBytes;
    template <class L>
    static constexpr bool kSigned = L::kSignedRepack;
    template <class L>
    static constexpr int32_t kScale = kSigned<L> ? 16 : 1;
    template <class L>
    static constexpr int32_t offset() {
      return kSigned<L> ? 0 : 8;
    }
    template <class L>
    static void unpack(const uint8_t* quants, size_t gs, typename L::V v[8]) {
      MD_UNROLL for (int p = 0; p < 4; ++p) {
        const typename L::V raw = L::chunk(quants + 32 * p, gs);
        if constexpr (kSigned<L>) {
          v[p] = L::template shiftLeft<4>(raw);
          v[4 + p] = L::andV(raw, L::splat(0xF0));
        } else {
          v[p] = L::lowNibbles(raw);
          v[4 + p] = L::highNibbles(raw);
        }
      }
    }
  };
  // Q8_0x8's bytes are q + 128 in the unsigned form. Where dotU8S8Add is
  // exact for any byte (VNNI's vpdpbusd) the tile takes them so, the 128
  // off through the activations' sums; AVX2's vpmaddubsw would saturate a
  // pair at 32767, so there it flips them back to q and takes a signed
  // dot. NEON's are stored signed. The same integer sums every way.
  struct Q8_0x8Format {
    static constexpr size_t kBlockBytes = kQ8_0x8BlockBytes;
    template <class L>
    static constexpr bool kSigned = !L::kExactU8Dot;
    template <class L>
    static constexpr int32_t kScale = 1;
    template <class L>
    static constexpr int32_t offset() {
      return kSigned<L> ? 0 : 128;
    }
    template <class L>
    static void unpack(const uint8_t* quants, size_t gs, typename L::V v[8]) {
      MD_UNROLL for (int c = 0; c < 8; ++c) {
        v[c] = L::chunk(quants + 32 * c, gs);
        if constexpr (kSigned<L> && !L::kSignedRepack) v[c] = L::toSigned(v[c]);
      }
    }
  };

  // The tile's lanes to out: row r of token t at out[r * os + t].
  template <class L, int T>
  static void storeTile(const typename L::F (&lanes)[T], float* out, size_t os) {
    constexpr int kRows = kRepackRows * L::kGroups;
    MD_UNROLL for (int t = 0; t < T; ++t) {
      float rows[kRows];
      L::storeRows(lanes[t], rows);
      MD_UNROLL for (int r = 0; r < kRows; ++r) out[size_t(r) * os + size_t(t)] = rows[r];
    }
  }

  // The tile on L's activations: Q8_0 rows, or quads of tokens.
  template <class L, class Format, int T>
  static void block32x8Tile(const uint8_t* w, size_t gs, const uint8_t* a, size_t as, int64_t n, float* out,
                            size_t os) {
    if constexpr (L::kActivationQuads)
      block32x8QuadTile<L, Format, T>(w, gs, a, n, out, os);
    else
      block32x8RowsTile<L, Format, T>(w, gs, a, as, n, out, os);
  }
  template <class L, class Format, int T>
  static void block32x8RowsTile(const uint8_t* w, size_t gs, const uint8_t* a, size_t as, int64_t n, float* out,
                                size_t os) {
    using LV = typename L::V;
    using LI = typename L::I;
    using LF = typename L::F;
    LF acc[T];
    MD_UNROLL for (int t = 0; t < T; ++t) acc[t] = L::fzero();
    const int64_t nb = n / blocks::kBlock;
    for (int64_t i = 0; i < nb; ++i) {
      const uint8_t* g = w + size_t(i) * Format::kBlockBytes;
      const LF dw = L::halves(g, gs);
      LV v[8];
      Format::template unpack<L>(g + 16, gs, v);
      // Chunk by chunk, each token's sum in turn: one chunk's weights live
      // at a time (AVX2's 16 registers hold no 8 value vectors beside the
      // tokens' sums). Integer sums: the order changes no bit.
      const blocks::Q8_0* y[T];
      LI sum[T];
      MD_UNROLL for (int t = 0; t < T; ++t) {
        y[t] = &block<blocks::Q8_0>(a, as, t)[i];
        if constexpr (Format::template offset<L>() == 0) {
          sum[t] = L::izero();
        } else {
          int16_t xsum;  // the block's sum of quants, after the row's blocks (ActivationRows::inQ8_0WithSums)
          std::memcpy(&xsum, a + size_t(t) * as + size_t(nb) * sizeof(blocks::Q8_0) + size_t(i) * 2, 2);
          sum[t] = L::splat32(-Format::template offset<L>() * int32_t(xsum));
        }
      }
      MD_UNROLL for (int c = 0; c < 8; ++c) {
        MD_UNROLL for (int t = 0; t < T; ++t) {
          int32_t x4;
          std::memcpy(&x4, y[t]->qs + 4 * c, sizeof x4);
          const LV x = L::repeat4(x4);
          if constexpr (Format::template kSigned<L>)
            sum[t] = L::addI(sum[t], L::dotS8S8(v[c], x));
          else
            sum[t] = L::dotU8S8Add(sum[t], v[c], x);
        }
      }
      MD_UNROLL for (int t = 0; t < T; ++t) {
        if constexpr (Format::template kScale<L> == 16)
          acc[t] = L::fmaddSixteenths(acc[t], sum[t], L::mulF(dw, S::half(y[t]->d)));
        else
          acc[t] = L::fmaddLanes(acc[t], sum[t], L::mulF(dw, S::half(y[t]->d)));
      }
    }
    storeTile<L, T>(acc, out, os);
  }

  // block32x8Tile on a quad of tokens (repack.h's toActivationQuad; NEON):
  // chunk c's 16 bytes hold 4 bytes of each token, token t in lane t,
  // which sdot's by-element form takes as they are; one load gives the 4
  // tokens' scales. The same integer sums and the same float steps as the
  // rows' tile, so the same bits.
  template <class L, class Format, int T>
  static void block32x8QuadTile(const uint8_t* w, size_t gs, const uint8_t* quad, int64_t n, float* out, size_t os) {
    static_assert(Format::template offset<L>() == 0, "a quad carries no sums: the quants are signed");
    using LV = typename L::V;
    using LI = typename L::I;
    using LF = typename L::F;
    LF acc[T];
    MD_UNROLL for (int t = 0; t < T; ++t) acc[t] = L::fzero();
    for (int64_t i = 0; i < n / blocks::kBlock; ++i) {
      const uint8_t* g = w + size_t(i) * Format::kBlockBytes;
      const LF dw = L::halves(g, gs);
      LV v[8];
      Format::template unpack<L>(g + 16, gs, v);
      const uint8_t* q = quad + size_t(i) * kQ8_0QuadBlockBytes;
      const int8_t* xs = reinterpret_cast<const int8_t*>(q + 2 * kActivationQuadTokens);
      LI sum[T];
      MD_UNROLL for (int t = 0; t < T; ++t) sum[t] = L::izero();
      MD_UNROLL for (int c = 0; c < 8; ++c) {
        const typename L::Token16 x = L::token16(xs + 16 * c);
        MD_UNROLL for (int t = 0; t < T; ++t) sum[t] = L::dotLane(sum[t], v[c], x, t);
      }
      const auto dx = L::quadHalves(q);
      MD_UNROLL for (int t = 0; t < T; ++t) {
        if constexpr (Format::template kScale<L> == 16)
          acc[t] = L::fmaddSixteenths(acc[t], sum[t], L::mulByLane(dw, dx, t));
        else
          acc[t] = L::fmaddLanes(acc[t], sum[t], L::mulByLane(dw, dx, t));
      }
    }
    storeTile<L, T>(acc, out, os);
  }

  // ---- Q4_K and Q5_K repacked in groups of 8 rows (repack.h): lane r is row r ----
  //
  // Per super-block and token: each part's row sums of quant x activation,
  // exact in int32 (4 bytes per row and chunk against the token's 4
  // matching bytes, broadcast), times the part's row scales; the mins term
  // from Q8_K's sums. Then the float terms as the row-by-row tile (k45Tile)
  // computes them, lane by lane: the same integers and the same float
  // operations in the same order, so the same bits.
  template <class L, bool kFive, int T>
  static void k45x8Tile(const uint8_t* w, size_t gs, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    using LV = typename L::V;
    using LI = typename L::I;
    using LF = typename L::F;
    constexpr size_t kBlockBytes = kFive ? kQ5_Kx8BlockBytes : kQ4_Kx8BlockBytes;
    LF sum[T];
    MD_UNROLL for (int t = 0; t < T; ++t) sum[t] = L::fzero();
    const LV sixteen = L::splat(16);
    for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
      const uint8_t* g = w + size_t(i) * kBlockBytes;
      const uint8_t* quants = g + kQ4_Kx8QuantOffset;
      LI isum[T];
      MD_UNROLL for (int t = 0; t < T; ++t) isum[t] = L::izero();
      for (int s = 0; s < 4; ++s) {  // parts 2s (low nibbles) and 2s + 1 (high)
        LI low32[T], high32[T];
        MD_UNROLL for (int t = 0; t < T; ++t) low32[t] = high32[t] = L::izero();
        // Chunk p's 4 bytes a row of parts 2s (lo) and 2s + 1 (hi).
        auto unpack = [&](int p, LV& lo, LV& hi) {
          const LV raw = L::chunk(quants + 32 * (8 * s + p), gs);
          if constexpr (!kFive) {
            lo = L::lowNibbles(raw);
            hi = L::highNibbles(raw);
          } else if constexpr (L::kBitInsert) {
            L::nibblesWithFifthBits(raw, L::chunk(g + kQ4_Kx8BlockBytes + 32 * p, gs), 2 * s, lo, hi);
          } else {
            const LV qh = L::chunk(g + kQ4_Kx8BlockBytes + 32 * p, gs);
            lo = L::orV(L::lowNibbles(raw), L::andV(L::testMask(qh, uint8_t(1u << (2 * s))), sixteen));
            hi = L::orV(L::highNibbles(raw), L::andV(L::testMask(qh, uint8_t(2u << (2 * s))), sixteen));
          }
        };
        if constexpr (L::kLaneDot) {
          // Each part's 16 bytes of a token loaded once, 4 bytes taken a chunk by lane.
          MD_UNROLL_FOR_CLANG for (int ph = 0; ph < 2; ++ph) {  // chunks 4ph..4ph+3: values 16ph..16ph+15
            typename Token16Of<L>::type xLow[T], xHigh[T];
            MD_UNROLL for (int t = 0; t < T; ++t) {
              const int8_t* x = block<blocks::Q8_K>(a, as, t)[i].qs + 64 * s + 16 * ph;
              xLow[t] = L::token16(x);
              xHigh[t] = L::token16(x + 32);
            }
            MD_UNROLL for (int k = 0; k < 4; ++k) {
              LV lo, hi;
              unpack(4 * ph + k, lo, hi);
              MD_UNROLL for (int t = 0; t < T; ++t) {
                low32[t] = L::dotLane(low32[t], lo, xLow[t], k);
                high32[t] = L::dotLane(high32[t], hi, xHigh[t], k);
              }
            }
          }
        } else {
          for (int p = 0; p < 8; ++p) {
            LV lo, hi;
            unpack(p, lo, hi);
            MD_UNROLL for (int t = 0; t < T; ++t) {
              const int8_t* x = block<blocks::Q8_K>(a, as, t)[i].qs + 64 * s + 4 * p;
              int32_t xlo, xhi;
              std::memcpy(&xlo, x, 4);
              std::memcpy(&xhi, x + 32, 4);
              low32[t] = L::dotU8S8Add(low32[t], lo, L::repeat4(xlo));
              high32[t] = L::dotU8S8Add(high32[t], hi, L::repeat4(xhi));
            }
          }
        }
        const LI scaleLow = L::bytes(g + 32 + 16 * s, gs), scaleHigh = L::bytes(g + 40 + 16 * s, gs);
        MD_UNROLL for (int t = 0; t < T; ++t) isum[t] =
            L::mulAddI(L::mulAddI(isum[t], low32[t], scaleLow), high32[t], scaleHigh);
      }
      const LF d = L::halves(g, gs), dmin = L::halves(g + 16, gs);
      MD_UNROLL for (int t = 0; t < T; ++t) {
        const blocks::Q8_K& y = block<blocks::Q8_K>(a, as, t)[i];
        LI mins = L::izero();
        if constexpr (L::kLaneDot) {  // the pair sums by lane
          const auto pairs = L::pairSums(y.bsums);
          MD_UNROLL for (int j = 0; j < 8; ++j) mins = L::mulAddPairSum(mins, L::bytes(g + 96 + 8 * j, gs), pairs, j);
        } else {
          MD_UNROLL for (int j = 0; j < 8; ++j) mins =
              L::mulAddI(mins, L::bytes(g + 96 + 8 * j, gs), L::splat32(y.bsums[2 * j] + y.bsums[2 * j + 1]));
        }
        sum[t] = L::addF(sum[t], L::subF(L::mulLanes(L::mulF(d, y.d), L::toF(isum[t])),
                                         L::mulLanes(L::mulF(dmin, y.d), L::toF(mins))));
      }
    }
    storeTile<L, T>(sum, out, os);
  }

  // ---- Q6_K repacked in groups of 8 rows (repack.h): lane r is row r ----
  //
  // As k45x8Tile: per part of 16 values, the rows' exact int32 sums of
  // unsigned 6-bit quant x activation, less 32 times the part's activation
  // sum (Q6_K's offset, from Q8_K's sums), times the part's row scales;
  // then q6_kTile's float operations, lane by lane: the same integer and
  // the same bits. Run u (0..3) of half h holds values 128h + 32u + l: 4
  // bytes a row of each chunk c (0..7) are the nibbles of ql's chunk
  // 16h + 8(u % 2) + c (low for u < 2) under bits 2u, 2u + 1 of qh's chunk
  // 8h + c; a run's chunks 0..3 are one part, 4..7 the next.
  //
  // Runs u and u + 2 at a time (the same ql bytes, low and high nibbles):
  // with the four runs' sums live (q6_kTile's order), 4 tokens took 32
  // vector registers and spilled. Where the dot multiplies signed bytes
  // (L::kSignedRepack: NEON) the quants are taken less 32, one subtraction
  // a vector, in place of each token's -32 times its part's activation
  // sum: the same integers.
  template <class L, int U>
  static typename L::V q6_kTop(typename L::V hb) {  // bits 2U, 2U + 1 of each byte, at bits 4, 5
    if constexpr (U == 0)
      return L::template shiftLeft<4>(L::andV(hb, L::splat(3)));
    else if constexpr (U == 3)
      return L::template shiftLeft<4>(L::template shiftRight<6>(hb));
    else
      return L::template shiftLeft<4>(L::andV(L::template shiftRight<2 * U>(hb), L::splat(3)));
  }
  template <class L, int U, int T>
  static void q6_kx8Runs(const uint8_t* g, size_t gs, const blocks::Q8_K* const y[T], int h, int half16,
                         typename L::I isum[T]) {
    using LV = typename L::V;
    using LI = typename L::I;
    LI low[T], high[T];  // runs U and U + 2
    MD_UNROLL for (int t = 0; t < T; ++t) low[t] = high[t] = L::izero();
    // The lane path: the parts' 16 bytes of each token.
    [[maybe_unused]] typename Token16Of<L>::type xLow[T], xHigh[T];
    if constexpr (L::kLaneDot) MD_UNROLL for (int t = 0; t < T; ++t) {
        xLow[t] = L::token16(y[t]->qs + 128 * h + 32 * U + 16 * half16);
        xHigh[t] = L::token16(y[t]->qs + 128 * h + 32 * (U + 2) + 16 * half16);
      }
    MD_UNROLL_FOR_GCC for (int c = 4 * half16; c < 4 * half16 + 4; ++c) {
      const LV ql = L::chunk(g + kQ6_Kx8LowOffset + 32 * (16 * h + 8 * U + c), gs);
      const LV hb = L::chunk(g + kQ6_Kx8HighOffset + 32 * (8 * h + c), gs);
      LV qLow, qHigh;
      if constexpr (L::kBitInsert) {
        L::template q6_kRunPair<U>(ql, hb, qLow, qHigh);
      } else {
        qLow = L::orV(L::lowNibbles(ql), q6_kTop<L, U>(hb));
        qHigh = L::orV(L::highNibbles(ql), q6_kTop<L, U + 2>(hb));
      }
      if constexpr (L::kSignedRepack) {
        qLow = L::subBytes(qLow, L::splat(32));
        qHigh = L::subBytes(qHigh, L::splat(32));
      }
      MD_UNROLL for (int t = 0; t < T; ++t) {
        if constexpr (L::kLaneDot) {
          low[t] = L::dotLane(low[t], qLow, xLow[t], c % 4);
          high[t] = L::dotLane(high[t], qHigh, xHigh[t], c % 4);
        } else {
          int32_t x4;
          std::memcpy(&x4, y[t]->qs + 128 * h + 32 * U + 4 * c, 4);
          low[t] = L::dotU8S8Add(low[t], qLow, L::repeat4(x4));
          std::memcpy(&x4, y[t]->qs + 128 * h + 32 * (U + 2) + 4 * c, 4);
          high[t] = L::dotU8S8Add(high[t], qHigh, L::repeat4(x4));
        }
      }
    }
    const int jLow = 8 * h + 2 * U + half16, jHigh = jLow + 4;  // the parts: values 16j..16j + 15
    const LI scaleLow = L::signedBytes(g + 16 + 8 * jLow, gs), scaleHigh = L::signedBytes(g + 16 + 8 * jHigh, gs);
    MD_UNROLL for (int t = 0; t < T; ++t) {
      if constexpr (L::kSignedRepack) {
        isum[t] = L::mulAddI(L::mulAddI(isum[t], low[t], scaleLow), high[t], scaleHigh);
      } else {
        isum[t] = L::mulAddI(isum[t], L::addI(low[t], L::splat32(-32 * int32_t(y[t]->bsums[jLow]))), scaleLow);
        isum[t] = L::mulAddI(isum[t], L::addI(high[t], L::splat32(-32 * int32_t(y[t]->bsums[jHigh]))), scaleHigh);
      }
    }
  }
  template <class L, int T>
  static void q6_kx8Tile(const uint8_t* w, size_t gs, const uint8_t* a, size_t as, int64_t n, float* out, size_t os) {
    using LI = typename L::I;
    using LF = typename L::F;
    LF sum[T];
    MD_UNROLL for (int t = 0; t < T; ++t) sum[t] = L::fzero();
    for (int64_t i = 0; i < n / blocks::kSuperBlock; ++i) {
      const uint8_t* g = w + size_t(i) * kQ6_Kx8BlockBytes;
      const blocks::Q8_K* y[T];
      MD_UNROLL for (int t = 0; t < T; ++t) y[t] = &block<blocks::Q8_K>(a, as, t)[i];
      LI isum[T];
      MD_UNROLL for (int t = 0; t < T; ++t) isum[t] = L::izero();
      MD_UNROLL for (int h = 0; h < 2; ++h) for (int half16 = 0; half16 < 2; ++half16) {
        q6_kx8Runs<L, 0, T>(g, gs, y, h, half16, isum);
        q6_kx8Runs<L, 1, T>(g, gs, y, h, half16, isum);
      }
      const LF d = L::halves(g, gs);
      MD_UNROLL for (int t = 0; t < T; ++t) sum[t] = L::addF(sum[t], L::mulLanes(L::mulF(d, y[t]->d), L::toF(isum[t])));
    }
    storeTile<L, T>(sum, out, os);
  }

  // Groups of 8 repacked rows (w the first group's block 0, the next
  // groups gs bytes apart; rows a multiple of 8 up to kRepackedTileRows)
  // against up to kTileTokens tokens: pairs of groups on the wide lanes
  // where S has them, the rest one group at a time.
  template <template <class, int> class Tile>
  static void repackedDispatch(const uint8_t* w, size_t gs, int rows, const uint8_t* a, size_t as, int tokens,
                               int64_t n, float* out, size_t os) {
    using Rows = typename RowLanesOf<S>::type;
    using Wide = typename WideLanesOf<S>::type;
    static_assert(Rows::kGroups == 1 && kRepackedTileRows == 2 * kRepackRows, "a tile takes one or two groups");
    if constexpr (Wide::kGroups == 2) {
      if (rows == kRepackedTileRows) return repackedTokens<Tile, Wide>(w, gs, a, as, tokens, n, out, os);
    }
    for (int r = 0; r < rows; r += kRepackRows)
      repackedTokens<Tile, Rows>(w + size_t(r / kRepackRows) * gs, gs, a, as, tokens, n, out + size_t(r) * os, os);
  }
  template <template <class, int> class Tile, class L>
  static void repackedTokens(const uint8_t* w, size_t gs, const uint8_t* a, size_t as, int tokens, int64_t n,
                             float* out, size_t os) {
    static_assert(kTileTokens == 4, "repackedTokens covers 1 to 4 tokens");
    switch (tokens) {
      case 1: return Tile<L, 1>::run(w, gs, a, as, n, out, os);
      case 2: return Tile<L, 2>::run(w, gs, a, as, n, out, os);
      case 3: return Tile<L, 3>::run(w, gs, a, as, n, out, os);
      default: return Tile<L, 4>::run(w, gs, a, as, n, out, os);
    }
  }
  // A kernel struct's run(): the tile function with the tile's arguments
  // (MD_REPACKED_KERNEL here, MD_TILE_KERNEL below). Each layout's tile as
  // repackedDispatch takes it: Tile<L, T>::run.
#define MD_KERNEL_RUN(...)                                                                                    \
  static void run(const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int64_t n, float* o, size_t os) { \
    __VA_ARGS__(w, ws, a, as, n, o, os);                                                                      \
  }
#define MD_REPACKED_KERNEL(NAME, ...) \
  template <class L, int T>           \
  struct NAME {                       \
    MD_KERNEL_RUN(__VA_ARGS__)        \
  };
  MD_REPACKED_KERNEL(Q4_0x8K, block32x8Tile<L, Q4_0x8Format, T>)
  MD_REPACKED_KERNEL(Q8_0x8K, block32x8Tile<L, Q8_0x8Format, T>)
  MD_REPACKED_KERNEL(Q4_Kx8K, k45x8Tile<L, false, T>)
  MD_REPACKED_KERNEL(Q5_Kx8K, k45x8Tile<L, true, T>)
  MD_REPACKED_KERNEL(Q6_Kx8K, q6_kx8Tile<L, T>)
#undef MD_REPACKED_KERNEL

  // ---- Dispatch on the tile's actual shape ----

  template <template <int, int> class Kernel>
  static void dispatch(const uint8_t* w, size_t ws, int rows, const uint8_t* a, size_t as, int tokens, int64_t n,
                       float* out, size_t os) {
    static_assert(kTileRows == 8 && kTileTokens == 4, "dispatch covers 8 x 1 and 4 x 4 tiles");
    if (tokens == 1) {
      switch (rows) {
        case 1: return Kernel<1, 1>::run(w, ws, a, as, n, out, os);
        case 2: return Kernel<2, 1>::run(w, ws, a, as, n, out, os);
        case 3: return Kernel<3, 1>::run(w, ws, a, as, n, out, os);
        case 4: return Kernel<4, 1>::run(w, ws, a, as, n, out, os);
        case 5: return Kernel<5, 1>::run(w, ws, a, as, n, out, os);
        case 6: return Kernel<6, 1>::run(w, ws, a, as, n, out, os);
        case 7: return Kernel<7, 1>::run(w, ws, a, as, n, out, os);
        default: return Kernel<8, 1>::run(w, ws, a, as, n, out, os);
      }
    }
    // Several tokens: 4 x 4 tiles, each weight block unpacked once for 4
    // tokens and each activation block loaded once for 4 rows.
    for (int r = 0; r < rows; r += 4) {
      const uint8_t* wr = w + size_t(r) * ws;
      float* o = out + size_t(r) * os;
      const int rr = rows - r < 4 ? rows - r : 4;
      switch ((rr - 1) * 4 + (tokens - 1)) {
        case 1: Kernel<1, 2>::run(wr, ws, a, as, n, o, os); break;
        case 2: Kernel<1, 3>::run(wr, ws, a, as, n, o, os); break;
        case 3: Kernel<1, 4>::run(wr, ws, a, as, n, o, os); break;
        case 5: Kernel<2, 2>::run(wr, ws, a, as, n, o, os); break;
        case 6: Kernel<2, 3>::run(wr, ws, a, as, n, o, os); break;
        case 7: Kernel<2, 4>::run(wr, ws, a, as, n, o, os); break;
        case 9: Kernel<3, 2>::run(wr, ws, a, as, n, o, os); break;
        case 10: Kernel<3, 3>::run(wr, ws, a, as, n, o, os); break;
        case 11: Kernel<3, 4>::run(wr, ws, a, as, n, o, os); break;
        case 13: Kernel<4, 2>::run(wr, ws, a, as, n, o, os); break;
        case 14: Kernel<4, 3>::run(wr, ws, a, as, n, o, os); break;
        default: Kernel<4, 4>::run(wr, ws, a, as, n, o, os); break;
      }
    }
  }

  // Each type's tile as the class template dispatch() takes: Kernel<R, T>::run.
#define MD_TILE_KERNEL(NAME, ...) \
  template <int R, int T>         \
  struct NAME {                   \
    MD_KERNEL_RUN(__VA_ARGS__)    \
  };
  MD_TILE_KERNEL(Q8_0K, q8Tile<Q8_0Format, R, T>)
  MD_TILE_KERNEL(Q4_0K, q8Tile<Q4_0Format, R, T>)
  MD_TILE_KERNEL(Q5_0K, q8Tile<Q5_0Format, R, T>)
  MD_TILE_KERNEL(Q4_1K, minTile<Q4_1Format, R, T>)
  MD_TILE_KERNEL(Q5_1K, minTile<Q5_1Format, R, T>)
  MD_TILE_KERNEL(IQ4_NLK, q8Tile<IQ4_NLFormat, R, T>)
  MD_TILE_KERNEL(Q2_KK, k23Tile<false, R, T>)
  MD_TILE_KERNEL(Q3_KK, k23Tile<true, R, T>)
  MD_TILE_KERNEL(IQ4_XSK, iq4_xsTile<R, T>)
  MD_TILE_KERNEL(Q4_KK, k45Tile<blocks::Q4_K, false, R, T>)
  MD_TILE_KERNEL(Q5_KK, k45Tile<blocks::Q5_K, true, R, T>)
  MD_TILE_KERNEL(Q6_KK, q6_kTile<R, T>)
  MD_TILE_KERNEL(F32K, floatTile<0, R, T>)
  MD_TILE_KERNEL(F16K, floatTile<1, R, T>)
  MD_TILE_KERNEL(BF16K, floatTile<2, R, T>)
#undef MD_TILE_KERNEL
#undef MD_KERNEL_RUN

  static DotTable table() {
    DotTable t{};
    t.isa = S::kName;
    t.f32 = &dispatch<F32K>;
    t.f16 = &dispatch<F16K>;
    t.bf16 = &dispatch<BF16K>;
    t.q4_0 = &dispatch<Q4_0K>;
    t.q4_1 = &dispatch<Q4_1K>;
    t.q5_0 = &dispatch<Q5_0K>;
    t.q5_1 = &dispatch<Q5_1K>;
    t.q8_0 = &dispatch<Q8_0K>;
    t.q2_k = &dispatch<Q2_KK>;
    t.q3_k = &dispatch<Q3_KK>;
    t.q4_k = &dispatch<Q4_KK>;
    t.q5_k = &dispatch<Q5_KK>;
    t.q6_k = &dispatch<Q6_KK>;
    t.iq4_nl = &dispatch<IQ4_NLK>;
    t.iq4_xs = &dispatch<IQ4_XSK>;
    t.weightedF32 = &weightedRows<0>;
    t.weightedF16 = &weightedRows<1>;
    if constexpr (S::kRowLanes) {
      using Rows = typename RowLanesOf<S>::type;
      static_assert(Rows::kSignedRepack == WideLanesOf<S>::type::kSignedRepack &&
                        Rows::kActivationQuads == WideLanesOf<S>::type::kActivationQuads,
                    "one form for a table's tiles");
      static_assert(!Rows::kSignedRepack || !Rows::kExactU8Dot, "signed quants take the signed dot");
      t.repackForm.signedQuants = Rows::kSignedRepack;
      t.repackForm.activationQuads = Rows::kActivationQuads;
      t.q4_0x8 = &repackedDispatch<Q4_0x8K>;
      t.q8_0x8 = &repackedDispatch<Q8_0x8K>;
      t.q4_kx8 = &repackedDispatch<Q4_Kx8K>;
      t.q5_kx8 = &repackedDispatch<Q5_Kx8K>;
      t.q6_kx8 = &repackedDispatch<Q6_Kx8K>;
    }
    return t;
  }
};

}  // namespace md
