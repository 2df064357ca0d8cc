// repack.h: weights rearranged at load for the CPU's tile kernels (dot.h),
// as llama.cpp's CPU backend repacks them: the tiles then keep one weight
// row in each int32 lane, so one conversion and one multiply-add serve 8
// rows where the row-by-row tiles take one per row (and a permute to
// broadcast its scale).
//
// Q4_0 in groups of 8 rows ("Q4_0x8"): for each group and each block i of
// 32 values, the 8 rows' float16 scales, then their quants in four 32-byte
// chunks: chunk p holds bytes 4p..4p+3 of each row's block, row r at bytes
// 4r..4r+3. So lane r of a chunk is row r; a byte's low nibble is its
// quant 4p+k, its high nibble quant 16+4p+k (Q4_0's own order). The same
// bytes as the 8 rows' blocks, so the same memory.
#pragma once
#include <cstddef>
#include <cstdint>

namespace md {

constexpr int kQ4_0x8Rows = 8;
constexpr size_t kQ4_0x8BlockBytes = 8 * 18;  // one block of each of the 8 rows

// Whether a Q4_0 matrix of `rows` x `cols` repacks: whole groups of 8 rows, whole blocks.
bool canRepackQ4_0x8(uint64_t rows, uint64_t cols);
// Bytes of one group of 8 rows.
size_t q4_0x8GroupBytes(uint64_t cols);
// The rows [firstGroup * 8, (firstGroup + groups) * 8) of the Q4_0 matrix
// at `src` (rows of cols / 32 blocks) into `dst` (the same groups' bytes).
void repackQ4_0x8(const uint8_t* src, uint64_t cols, uint64_t firstGroup, uint64_t groups, uint8_t* dst);

}  // namespace md
