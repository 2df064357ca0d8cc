// dot_amx.cpp: batched products of Q4_0, Q5_0, Q8_0, Q4_K and Q5_K weights on AMX, the
// matrix units of Intel Xeons since Sapphire Rapids. A tile multiply adds
// up a 16 x 16 grid of 32-byte dot products (16 weight rows x 16 tokens,
// one block) in one instruction; the block scales are applied to the grid
// in float afterwards, as the vector kernels apply them per block. The
// weights are unpacked from the mapped file into a tile per block, never
// copied whole. Built with the AMX and AVX-512 flags (this file only);
// offered only when the CPU has them and Linux allows them (cpu_features.h).
#include "dot.h"

#if defined(__x86_64__) && defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__)
// GCC 12 warns inside its own _mm512_cvtepi32_ps (an "undefined" source
// vector it leaves uninitialised on purpose); nothing here is uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdlib>
#include <cstring>

#include "blocks.h"
#include "cpu_features.h"

namespace md {
namespace {

constexpr int kTile = 16;  // weight rows and tokens per tile multiply

struct TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t bytesPerRow[16] = {};
  uint8_t rows[16] = {};
};

// Tile 0: the 16 x 16 int32 grid; tile 1: 16 weight rows of one block (32
// unsigned bytes each); tile 2: 16 tokens' block in VNNI order (8 rows of
// 16 tokens x 4 bytes).
void configureTiles() {
  TileConfig c;
  c.rows[0] = kTile;
  c.bytesPerRow[0] = kTile * 4;
  c.rows[1] = kTile;
  c.bytesPerRow[1] = blocks::kBlock;
  c.rows[2] = blocks::kBlock / 4;
  c.bytesPerRow[2] = kTile * 4;
  _tile_loadconfig(&c);
}

float half(uint16_t bits) { return _cvtsh_ss(bits); }

// A growing scratch array. Not std::vector: its member functions would be
// instantiated here, built for AVX-512, as weak symbols the linker may hand
// to portable code (scripts/check-isa-symbols.mjs); this type is local to
// the file.
template <class T>
class Scratch {
 public:
  ~Scratch() { std::free(data_); }
  T* data() { return data_; }
  const T* data() const { return data_; }
  // false when memory runs out (the caller then leaves the work to the tiles).
  bool resize(size_t n) {
    if (n <= capacity_) return true;
    void* grown = std::realloc(data_, n * sizeof(T));
    if (grown == nullptr) return false;
    data_ = static_cast<T*>(grown);
    capacity_ = n;
    return true;
  }

 private:
  T* data_ = nullptr;
  size_t capacity_ = 0;
};

// The quants of one block as unsigned bytes and their offset (the value is
// q - offset), as the vector kernels read them.
template <class Block>
struct Unsigned;
template <>
struct Unsigned<blocks::Q4_0> {
  static constexpr int kOffset = 8;
  static void unpack(const blocks::Q4_0& b, uint8_t* out) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_and_si128(raw, _mm_set1_epi8(0x0F)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F)));
  }
};
template <>
struct Unsigned<blocks::Q5_0> {
  static constexpr int kOffset = 16;
  static void unpack(const blocks::Q5_0& b, uint8_t* out) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < 16; ++j) {
      out[j] = uint8_t((b.qs[j] & 0xF) | (((qh >> j) & 1u) << 4));
      out[j + 16] = uint8_t((b.qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
    }
  }
};
template <>
struct Unsigned<blocks::Q8_0> {
  static constexpr int kOffset = 128;
  static void unpack(const blocks::Q8_0& b, uint8_t* out) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_xor_si256(raw, _mm256_set1_epi8(char(0x80))));
  }
};

// The activations of a multiple of 16 tokens, per group of 16 and block:
// the tile in VNNI order, the 16 scales, and the 16 sums of the quants
// (for the offset).
struct PackedActivations {
  Scratch<int8_t> tiles;  // [group][block][8][64]
  Scratch<float> scales;  // [group][block][16]
  Scratch<int32_t> sums;  // [group][block][16]
  bool pack(const uint8_t* a, size_t as, int64_t tokens, int64_t nb) {
    const int64_t groups = tokens / kTile;
    if (!tiles.resize(size_t(groups * nb) * 512) || !scales.resize(size_t(groups * nb) * kTile) ||
        !sums.resize(size_t(groups * nb) * kTile))
      return false;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t t = 0; t < kTile; ++t) {
        const auto* row = reinterpret_cast<const blocks::Q8_0*>(a + size_t(g * kTile + t) * as);
        for (int64_t b = 0; b < nb; ++b) {
          const size_t at = size_t(g * nb + b);
          int8_t* tile = tiles.data() + at * 512;
          int32_t sum = 0;
          for (int r = 0; r < 8; ++r) {
            std::memcpy(tile + r * 64 + t * 4, row[b].qs + 4 * r, 4);
            for (int j = 0; j < 4; ++j) sum += row[b].qs[4 * r + j];
          }
          scales.data()[at * kTile + size_t(t)] = half(row[b].d);
          sums.data()[at * kTile + size_t(t)] = sum;
        }
      }
    return true;
  }
};

// Per thread: the unpacked weight blocks of 16 rows ([block][16][32]) and
// their scales ([block][16]).
struct UnpackedRows {
  Scratch<uint8_t> quants;
  Scratch<float> scales;
};

template <class Block>
void product(const uint8_t* w, size_t ws, int64_t rows, const PackedActivations& act, UnpackedRows& u, int64_t groups,
             int64_t nb, float* out, size_t os) {
  uint8_t* unpacked = u.quants.data();
  float* weightScales = u.scales.data();
  alignas(64) int32_t grid[kTile * kTile];
  alignas(64) float result[kTile * kTile];
  const __m512i offset = _mm512_set1_epi32(Unsigned<Block>::kOffset);
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    for (int64_t b = 0; b < nb; ++b)
      for (int m = 0; m < kTile; ++m) {
        const Block& blk = reinterpret_cast<const Block*>(w + size_t(r0 + m) * ws)[b];
        Unsigned<Block>::unpack(blk, unpacked + (size_t(b) * kTile + size_t(m)) * blocks::kBlock);
        weightScales[size_t(b) * kTile + size_t(m)] = half(blk.d);
      }
    for (int64_t g = 0; g < groups; ++g) {
      __m512 acc[kTile];
      for (int m = 0; m < kTile; ++m) acc[m] = _mm512_setzero_ps();
      for (int64_t b = 0; b < nb; ++b) {
        const size_t at = size_t(g * nb + b);
        _tile_zero(0);
        _tile_loadd(1, unpacked + size_t(b) * kTile * blocks::kBlock, blocks::kBlock);
        _tile_loadd(2, act.tiles.data() + at * 512, 64);
        _tile_dpbusd(0, 1, 2);
        _tile_stored(0, grid, kTile * 4);
        const __m512 da = _mm512_loadu_ps(act.scales.data() + at * kTile);
        const __m512i correction = _mm512_mullo_epi32(offset, _mm512_loadu_si512(act.sums.data() + at * kTile));
        const float* dw = weightScales + size_t(b) * kTile;
        for (int m = 0; m < kTile; ++m) {
          const __m512i exact = _mm512_sub_epi32(_mm512_load_si512(grid + m * kTile), correction);
          acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(da, _mm512_set1_ps(dw[m])), acc[m]);
        }
      }
      for (int m = 0; m < kTile; ++m) _mm512_store_ps(result + m * kTile, acc[m]);
      for (int m = 0; m < kTile; ++m)
        for (int t = 0; t < kTile; ++t) out[size_t(g * kTile + t) * os + size_t(r0 + m)] = result[m * kTile + t];
    }
  }
}

// ---- Q4_K and Q5_K against Q8_K ----

// Q8_K activations of 16 tokens per group and super-block: the 8 sub-block
// tiles (VNNI order), the 16 scales, and the 16 tokens' sums of each pair
// of 16-value groups (what the mins multiply).
struct PackedSuperBlocks {
  Scratch<int8_t> tiles;      // [group][superblock][8][8][64]
  Scratch<float> scales;      // [group][superblock][16]
  Scratch<int32_t> pairSums;  // [group][superblock][8][16]
  bool pack(const uint8_t* a, size_t as, int64_t tokens, int64_t nsb) {
    const int64_t groups = tokens / kTile;
    if (!tiles.resize(size_t(groups * nsb) * 8 * 512) || !scales.resize(size_t(groups * nsb) * kTile) ||
        !pairSums.resize(size_t(groups * nsb) * 8 * kTile))
      return false;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t t = 0; t < kTile; ++t) {
        const auto* row = reinterpret_cast<const blocks::Q8_K*>(a + size_t(g * kTile + t) * as);
        for (int64_t b = 0; b < nsb; ++b) {
          const size_t at = size_t(g * nsb + b);
          for (int j = 0; j < 8; ++j) {
            int8_t* tile = tiles.data() + (at * 8 + size_t(j)) * 512;
            for (int r = 0; r < 8; ++r) std::memcpy(tile + r * 64 + t * 4, row[b].qs + 32 * j + 4 * r, 4);
            pairSums.data()[(at * 8 + size_t(j)) * kTile + size_t(t)] = row[b].bsums[2 * j] + row[b].bsums[2 * j + 1];
          }
          scales.data()[at * kTile + size_t(t)] = row[b].d;
        }
      }
    return true;
  }
};

// Sub-block j of a Q4_K/Q5_K block as 32 unsigned quants.
template <class Block>
void unpackSubBlock(const Block& b, int j, uint8_t* out) {
  const uint8_t* q = b.qs + 32 * (j / 2);
  const int shift = (j % 2) * 4;
  for (int l = 0; l < 32; ++l) {
    uint8_t v = uint8_t((q[l] >> shift) & 0xF);
    if constexpr (sizeof(Block) == sizeof(blocks::Q5_K)) v = uint8_t(v | (((b.qh[l] >> j) & 1) << 4));
    out[l] = v;
  }
}

// Per (row, token) and super-block: the exact int sum of the scaled
// sub-block products and the exact mins term, then the float combination
// the vector kernels compute, in their order: the same bits.
template <class Block>
void productK(const uint8_t* w, size_t ws, int64_t rows, const PackedSuperBlocks& act, UnpackedRows& u, int64_t groups,
              int64_t nsb, float* out, size_t os) {
  uint8_t* unpacked = u.quants.data();  // [superblock][8][16][32]
  alignas(64) int32_t grid[kTile * kTile];
  alignas(64) float result[kTile * kTile];
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    for (int64_t b = 0; b < nsb; ++b)
      for (int m = 0; m < kTile; ++m) {
        const Block& blk = reinterpret_cast<const Block*>(w + size_t(r0 + m) * ws)[b];
        for (int j = 0; j < 8; ++j)
          unpackSubBlock(blk, j, unpacked + ((size_t(b) * 8 + size_t(j)) * kTile + size_t(m)) * blocks::kBlock);
      }
    for (int64_t g = 0; g < groups; ++g) {
      __m512 sum[kTile];
      for (int m = 0; m < kTile; ++m) sum[m] = _mm512_setzero_ps();
      for (int64_t b = 0; b < nsb; ++b) {
        const size_t at = size_t(g * nsb + b);
        uint8_t sm[kTile][16];
        for (int m = 0; m < kTile; ++m)
          blocks::scalesAndMinsK4(reinterpret_cast<const Block*>(w + size_t(r0 + m) * ws)[b].scales, sm[m]);
        __m512i isum[kTile], mins[kTile];
        for (int m = 0; m < kTile; ++m) isum[m] = mins[m] = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) {
          _tile_zero(0);
          _tile_loadd(1, unpacked + (size_t(b) * 8 + size_t(j)) * kTile * blocks::kBlock, blocks::kBlock);
          _tile_loadd(2, act.tiles.data() + (at * 8 + size_t(j)) * 512, 64);
          _tile_dpbusd(0, 1, 2);
          _tile_stored(0, grid, kTile * 4);
          const __m512i pairs = _mm512_loadu_si512(act.pairSums.data() + (at * 8 + size_t(j)) * kTile);
          for (int m = 0; m < kTile; ++m) {
            isum[m] = _mm512_add_epi32(
                isum[m], _mm512_mullo_epi32(_mm512_load_si512(grid + m * kTile), _mm512_set1_epi32(sm[m][j])));
            mins[m] = _mm512_add_epi32(mins[m], _mm512_mullo_epi32(pairs, _mm512_set1_epi32(sm[m][8 + j])));
          }
        }
        const __m512 yd = _mm512_loadu_ps(act.scales.data() + at * kTile);
        for (int m = 0; m < kTile; ++m) {
          const Block& blk = reinterpret_cast<const Block*>(w + size_t(r0 + m) * ws)[b];
          const __m512 scaled =
              _mm512_mul_ps(_mm512_mul_ps(yd, _mm512_set1_ps(half(blk.d))), _mm512_cvtepi32_ps(isum[m]));
          const __m512 offset =
              _mm512_mul_ps(_mm512_mul_ps(yd, _mm512_set1_ps(half(blk.dmin))), _mm512_cvtepi32_ps(mins[m]));
          sum[m] = _mm512_add_ps(sum[m], _mm512_sub_ps(scaled, offset));
        }
      }
      for (int m = 0; m < kTile; ++m) _mm512_store_ps(result + m * kTile, sum[m]);
      for (int m = 0; m < kTile; ++m)
        for (int t = 0; t < kTile; ++t) out[size_t(g * kTile + t) * os + size_t(r0 + m)] = result[m * kTile + t];
    }
  }
}

bool amxProductK(TensorType type, const uint8_t* w, size_t ws, int64_t rows, const uint8_t* a, size_t as,
                 int64_t tokens, int64_t n, float* out, size_t os) {
  thread_local PackedSuperBlocks act;
  thread_local UnpackedRows unpacked;
  const int64_t nsb = n / blocks::kSuperBlock, groups = tokens / kTile;
  if (!act.pack(a, as, tokens, nsb) || !unpacked.quants.resize(size_t(nsb) * 8 * kTile * blocks::kBlock)) return false;
  configureTiles();
  if (type == TensorType::Q4_K)
    productK<blocks::Q4_K>(w, ws, rows, act, unpacked, groups, nsb, out, os);
  else
    productK<blocks::Q5_K>(w, ws, rows, act, unpacked, groups, nsb, out, os);
  _tile_release();
  return true;
}

bool amxProduct(TensorType type, const uint8_t* w, size_t ws, int64_t rows, const uint8_t* a, size_t as, int64_t tokens,
                int64_t n, float* out, size_t os) {
  if (rows % kTile != 0 || tokens % kTile != 0) return false;
  if (type == TensorType::Q4_K || type == TensorType::Q5_K)
    return n % blocks::kSuperBlock == 0 && amxProductK(type, w, ws, rows, a, as, tokens, n, out, os);
  if (type != TensorType::Q4_0 && type != TensorType::Q5_0 && type != TensorType::Q8_0) return false;
  if (n % blocks::kBlock != 0) return false;
  thread_local PackedActivations act;
  thread_local UnpackedRows unpacked;
  const int64_t nb = n / blocks::kBlock, groups = tokens / kTile;
  if (!act.pack(a, as, tokens, nb) || !unpacked.quants.resize(size_t(nb) * kTile * blocks::kBlock) ||
      !unpacked.scales.resize(size_t(nb) * kTile))
    return false;
  configureTiles();  // tile configuration is per thread
  if (type == TensorType::Q4_0)
    product<blocks::Q4_0>(w, ws, rows, act, unpacked, groups, nb, out, os);
  else if (type == TensorType::Q5_0)
    product<blocks::Q5_0>(w, ws, rows, act, unpacked, groups, nb, out, os);
  else
    product<blocks::Q8_0>(w, ws, rows, act, unpacked, groups, nb, out, os);
  _tile_release();
  return true;
}

}  // namespace

const DotTable* amxDotTable() {
  static const DotTable* table = []() -> const DotTable* {
    const DotTable* base = avx512DotTable();
    if (base == nullptr || !cpuHasAmx()) return nullptr;
    static DotTable t = *base;
    t.isa = "amx";
    t.matrix = &amxProduct;
    // The types the matrix units take read the file's rows (their batches
    // are faster still): no repacked tiles for them. Q6_K's stay.
    t.q4_0x8 = t.q8_0x8 = t.q4_kx8 = t.q5_kx8 = nullptr;
    return &t;
  }();
  return table;
}

}  // namespace md
#else
namespace md {
const DotTable* amxDotTable() { return nullptr; }
}  // namespace md
#endif
