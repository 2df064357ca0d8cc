// repack.cpp: the layouts of repack.h.
#include "repack.h"

#include <cstring>

#include "blocks.h"

namespace md {

bool canRepackQ4_0x8(uint64_t rows, uint64_t cols) {
  return rows > 0 && rows % kQ4_0x8Rows == 0 && cols > 0 && cols % blocks::kBlock == 0;
}

size_t q4_0x8GroupBytes(uint64_t cols) { return size_t(cols / blocks::kBlock) * kQ4_0x8BlockBytes; }

void repackQ4_0x8(const uint8_t* src, uint64_t cols, uint64_t firstGroup, uint64_t groups, uint8_t* dst) {
  const uint64_t nb = cols / blocks::kBlock;
  const size_t rowBytes = size_t(nb) * sizeof(blocks::Q4_0);
  for (uint64_t g = firstGroup; g < firstGroup + groups; ++g) {
    const uint8_t* rows = src + size_t(g) * kQ4_0x8Rows * rowBytes;
    uint8_t* group = dst + size_t(g - firstGroup) * q4_0x8GroupBytes(cols);
    for (uint64_t i = 0; i < nb; ++i) {
      uint8_t* out = group + size_t(i) * kQ4_0x8BlockBytes;
      for (int r = 0; r < kQ4_0x8Rows; ++r) {
        blocks::Q4_0 b;
        std::memcpy(&b, rows + size_t(r) * rowBytes + size_t(i) * sizeof(blocks::Q4_0), sizeof b);
        std::memcpy(out + 2 * r, &b.d, 2);
        for (int p = 0; p < 4; ++p) std::memcpy(out + 16 + 32 * p + 4 * r, b.qs + 4 * p, 4);
      }
    }
  }
}

}  // namespace md
