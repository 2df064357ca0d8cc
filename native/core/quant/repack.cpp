// repack.cpp: the layouts of repack.h, one row each.
#include "repack.h"

#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>

#include "blocks.h"

namespace md {
namespace {

// The first count * 4 bytes of each of the `rows` rows' `field`, side by
// side in chunks of interleaveBytes a row (row r at interleaveBytes * r).
void interleave(const uint8_t* const fields[], int rows, size_t count, int interleaveBytes, uint8_t* out) {
  const size_t w = size_t(interleaveBytes);
  for (size_t p = 0; p < count * 4 / w; ++p)
    for (int r = 0; r < rows; ++r) std::memcpy(out + size_t(rows) * w * p + w * size_t(r), fields[r] + w * p, w);
}

void checkInterleave(const char* who, int interleaveBytes) {
  if (interleaveBytes != 4 && interleaveBytes != 8)
    throw std::invalid_argument(std::string(who) + ": interleaveBytes must be 4 or 8, got " +
                                std::to_string(interleaveBytes));
}

void repackQ4_0(const uint8_t* const rows[kRepackRows], RepackForm form, uint8_t* out) {
  const uint8_t* quants[kRepackRows];
  for (int r = 0; r < kRepackRows; ++r) {
    const auto* b = reinterpret_cast<const blocks::Q4_0*>(rows[r]);
    std::memcpy(out + 2 * r, &b->d, 2);
    quants[r] = b->qs;
  }
  interleave(quants, kRepackRows, 4, form.interleaveBytes, out + 16);
  if (form.signedQuants)  // each nibble quant + 8 to the quant in two's complement
    for (size_t k = 16; k < kQ4_0x8BlockBytes; ++k) out[k] ^= 0x88;
}

void repackQ8_0(const uint8_t* const rows[kRepackRows], RepackForm form, uint8_t* out) {
  const uint8_t* quants[kRepackRows];
  for (int r = 0; r < kRepackRows; ++r) {
    const auto* b = reinterpret_cast<const blocks::Q8_0*>(rows[r]);
    std::memcpy(out + 2 * r, &b->d, 2);
    quants[r] = reinterpret_cast<const uint8_t*>(b->qs);
  }
  interleave(quants, kRepackRows, 8, form.interleaveBytes, out + 16);
  if (!form.signedQuants)
    for (size_t k = 16; k < kQ8_0x8BlockBytes; ++k) out[k] ^= 0x80;  // q + 128, as an unsigned byte
}

// The part of Q4_K and Q5_K before the fifth bits (their first fields are alike).
template <class Block>
void repackK45(const uint8_t* const rows[kRepackRows], RepackForm form, uint8_t* out) {
  const uint8_t* quants[kRepackRows];
  for (int r = 0; r < kRepackRows; ++r) {
    const auto* b = reinterpret_cast<const Block*>(rows[r]);
    std::memcpy(out + 2 * r, &b->d, 2);
    std::memcpy(out + 16 + 2 * r, &b->dmin, 2);
    uint8_t scalesAndMins[16];
    blocks::scalesAndMinsK4(b->scales, scalesAndMins);
    for (int j = 0; j < 8; ++j) {
      out[32 + 8 * j + r] = scalesAndMins[j];
      out[96 + 8 * j + r] = scalesAndMins[8 + j];
    }
    quants[r] = b->qs;
  }
  interleave(quants, kRepackRows, 32, form.interleaveBytes, out + kQ4_Kx8QuantOffset);
}

void repackQ4_K(const uint8_t* const rows[kRepackRows], RepackForm form, uint8_t* out) {
  repackK45<blocks::Q4_K>(rows, form, out);
}

void repackQ5_K(const uint8_t* const rows[kRepackRows], RepackForm form, uint8_t* out) {
  repackK45<blocks::Q5_K>(rows, form, out);
  const uint8_t* fifth[kRepackRows];
  for (int r = 0; r < kRepackRows; ++r) fifth[r] = reinterpret_cast<const blocks::Q5_K*>(rows[r])->qh;
  interleave(fifth, kRepackRows, 8, form.interleaveBytes, out + kQ4_Kx8BlockBytes);
}

void repackQ6_K(const uint8_t* const rows[kRepackRows], RepackForm form, uint8_t* out) {
  const uint8_t *low[kRepackRows], *high[kRepackRows];
  for (int r = 0; r < kRepackRows; ++r) {
    const auto* b = reinterpret_cast<const blocks::Q6_K*>(rows[r]);
    std::memcpy(out + 2 * r, &b->d, 2);
    for (int j = 0; j < 16; ++j) std::memcpy(out + 16 + 8 * j + r, &b->scales[j], 1);
    low[r] = b->ql;
    high[r] = b->qh;
  }
  interleave(low, kRepackRows, 32, form.interleaveBytes, out + kQ6_Kx8LowOffset);
  interleave(high, kRepackRows, 16, form.interleaveBytes, out + kQ6_Kx8HighOffset);
}

constexpr RepackLayout kLayouts[] = {
    {TensorType::Q4_0, blocks::kBlock, kQ4_0x8BlockBytes, true, &repackQ4_0},
    {TensorType::Q8_0, blocks::kBlock, kQ8_0x8BlockBytes, true, &repackQ8_0},
    {TensorType::Q4_K, blocks::kSuperBlock, kQ4_Kx8BlockBytes, false, &repackQ4_K},
    {TensorType::Q5_K, blocks::kSuperBlock, kQ5_Kx8BlockBytes, false, &repackQ5_K},
    {TensorType::Q6_K, blocks::kSuperBlock, kQ6_Kx8BlockBytes, false, &repackQ6_K},
};

static_assert(kQ4_0x8BlockBytes == kRepackRows * sizeof(blocks::Q4_0), "Q4_0x8 keeps the rows' bytes");
static_assert(kQ8_0x8BlockBytes == kRepackRows * sizeof(blocks::Q8_0), "Q8_0x8 keeps the rows' bytes");
static_assert(kQ6_Kx8BlockBytes == kRepackRows * sizeof(blocks::Q6_K), "Q6_Kx8 keeps the rows' bytes");
static_assert(kQ8_0QuadBlockBytes == kActivationQuadTokens * sizeof(blocks::Q8_0), "a quad keeps the rows' bytes");

}  // namespace

RepackLayouts repackLayouts() { return {std::begin(kLayouts), std::end(kLayouts)}; }

const RepackLayout* repackLayoutFor(TensorType type) {
  for (const RepackLayout& layout : kLayouts)
    if (layout.type == type) return &layout;
  return nullptr;
}

bool canRepack(const RepackLayout& layout, uint64_t rows, uint64_t cols) {
  return rows > 0 && rows % kRepackRows == 0 && cols > 0 && cols % layout.blockValues == 0;
}

size_t repackGroupBytes(const RepackLayout& layout, uint64_t cols) {
  return size_t(cols / layout.blockValues) * layout.groupBlockBytes;
}

void repackGroups(const RepackLayout& layout, RepackForm form, const uint8_t* src, uint64_t cols, uint64_t firstGroup,
                  uint64_t groups, uint8_t* dst) {
  checkInterleave("repackGroups", form.interleaveBytes);
  const uint64_t blockCount = cols / layout.blockValues;
  const size_t blockBytes = tensorTypeInfo(layout.type).blockBytes;
  const size_t rowBytes = size_t(blockCount) * blockBytes;
  for (uint64_t g = firstGroup; g < firstGroup + groups; ++g) {
    const uint8_t* group = src + size_t(g) * kRepackRows * rowBytes;
    uint8_t* out = dst + size_t(g - firstGroup) * repackGroupBytes(layout, cols);
    for (uint64_t i = 0; i < blockCount; ++i) {
      const uint8_t* rows[kRepackRows];
      for (int r = 0; r < kRepackRows; ++r) rows[r] = group + size_t(r) * rowBytes + size_t(i) * blockBytes;
      layout.repackBlock(rows, form, out + size_t(i) * layout.groupBlockBytes);
    }
  }
}

void toActivationQuad(const uint8_t* rows, size_t rowStride, int tokens, uint64_t cols, int interleaveBytes,
                      uint8_t* quad) {
  checkInterleave("toActivationQuad", interleaveBytes);
  if (tokens < 1 || tokens > kActivationQuadTokens)
    throw std::invalid_argument("toActivationQuad: tokens must be 1 to 4, got " + std::to_string(tokens));
  static const blocks::Q8_0 kZeros{};
  for (uint64_t i = 0; i < cols / blocks::kBlock; ++i) {
    uint8_t* out = quad + size_t(i) * kQ8_0QuadBlockBytes;
    const uint8_t* quants[kActivationQuadTokens];
    for (int k = 0; k < kActivationQuadTokens; ++k) {
      const blocks::Q8_0& b =
          k < tokens ? reinterpret_cast<const blocks::Q8_0*>(rows + size_t(k) * rowStride)[i] : kZeros;
      std::memcpy(out + 2 * k, &b.d, 2);
      quants[k] = reinterpret_cast<const uint8_t*>(b.qs);
    }
    interleave(quants, kActivationQuadTokens, 8, interleaveBytes, out + 2 * kActivationQuadTokens);
  }
}

}  // namespace md
