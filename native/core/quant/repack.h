// repack.h: weights rearranged at load for the CPU's tile kernels (dot.h),
// as llama.cpp's CPU backend repacks them: the tiles then keep one weight
// row in each int32 lane, so one conversion and one multiply-add serve 8
// rows where the row-by-row tiles take one per row (and a horizontal sum
// per row and super-block for the K types).
//
// Every layout groups 8 rows. For each group and each block i (32 values
// for Q4_0, a super-block of 256 for the K types), the 8 rows' block i,
// rearranged so that a 32-byte chunk holds 4 bytes of each row, row r at
// bytes 4r..4r+3: lane r of a chunk is row r.
//
// That is the layout at 4 interleaved bytes, which sdot, vpdpbusd and
// vpmaddubsw take. The i8mm tiles (smmla: 2 rows x 8 bytes against 2
// tokens x 8 bytes) take 8: there, chunks 2q and 2q + 1 below are one
// 64-byte chunk holding bytes 8q..8q+7 of each row's field, row r at 8r.
// The scales and mins do not change. The dot table says which it takes
// (DotTable::repackForm).
//
// Q4_0 and Q8_0 have an unsigned form and a signed one (RepackForm).
// Unsigned: the file's nibbles (quant + 8), and Q8_0's quants plus 128,
// the operands x86's vpmaddubsw and vpdpbusd take unsigned; the offsets
// come off through the activations' block sums. Signed (NEON's sdot and
// smmla multiply signed bytes): each nibble the quant itself in 4-bit two's
// complement (the file's byte xor 0x88), and Q8_0's quants as they are.
// llama.cpp's NEON layouts store Q4_0 so too.
//
// Q4_0x8 (144 bytes a block, the 8 rows' own bytes): the 8 float16 scales,
// then four chunks: chunk p holds bytes 4p..4p+3 of each row's quants; a
// byte's low nibble is its quant 4p+k, its high nibble quant 16+4p+k.
//
// Q8_0x8 (272 bytes a block, the 8 rows' own bytes): the 8 float16 scales,
// then eight chunks: chunk c holds quants 4c..4c+3 of each row.
//
// Q4_Kx8 (1184 bytes a super-block; the file's rows take 1152): the 8
// float16 d, the 8 dmin, the 6-bit scales unpacked to bytes as [part
// j][row r] (64 bytes), the mins alike (64), then 32 chunks: chunk 8s + p
// holds bytes 32s + 4p..+3 of each row's quants (low nibbles: part 2s,
// high nibbles: part 2s + 1, Q4_K's own order). The scales are unpacked
// at load so that a part's 8 scales are one 8-byte load in the tiles.
//
// Q5_Kx8 (1440 bytes; the file's 1408): Q4_Kx8, then 8 chunks of the
// fifth bits: chunk p holds bytes 4p..4p+3 of each row's qh, the bits of
// the values of quant chunks 8s + p (bit 2s: low nibble, 2s + 1: high).
//
// Q6_Kx8 (1680 bytes a super-block, the 8 rows' own bytes): the 8 float16
// d, the signed scales of the 16 parts of 16 values as [part j][row r]
// (128 bytes), then 32 chunks of the low bits (chunk q: bytes 4q..4q+3 of
// each row's ql), then 16 chunks of the high bits (bytes 4q..4q+3 of qh).
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor_types.h"

namespace md {

constexpr int kRepackRows = 8;  // rows per group, one per int32 lane of 256 bits (AVX-512 takes two groups)

constexpr size_t kQ4_0x8BlockBytes = 8 * 18;
constexpr size_t kQ8_0x8BlockBytes = 8 * 34;
constexpr size_t kQ4_Kx8QuantOffset = 16 + 16 + 64 + 64;            // d, dmin, scales, mins
constexpr size_t kQ4_Kx8BlockBytes = kQ4_Kx8QuantOffset + 8 * 128;  // then the 8 rows' quants
constexpr size_t kQ5_Kx8BlockBytes = kQ4_Kx8BlockBytes + 8 * 32;    // then their fifth bits
constexpr size_t kQ6_Kx8LowOffset = 16 + 128;                       // d, scales
constexpr size_t kQ6_Kx8HighOffset = kQ6_Kx8LowOffset + 8 * 128;    // after the 8 rows' ql
constexpr size_t kQ6_Kx8BlockBytes = kQ6_Kx8HighOffset + 8 * 64;    // then their qh

// How a dot table's tiles take the repacked bytes (DotTable::repackForm).
struct RepackForm {
  int interleaveBytes = 4;    // a row's bytes side by side in a chunk: 4, or 8 (i8mm)
  bool signedQuants = false;  // Q4_0's and Q8_0's quants signed (above)
  // Whether Q4_0's and Q8_0's tiles read their activations in quads of
  // tokens (toActivationQuad; NEON), not as Q8_0 rows with their sums.
  bool activationQuads = false;
};

// Q8_0 activations in quads of tokens, as llama.cpp's block_q8_0x4 (its
// NEON kernels read them so): per block, the 4 tokens' float16 scales,
// then their quants interleaved as the weights' (interleaveBytes a token,
// token k at interleaveBytes * k). A tile then loads 4 tokens' bytes, or
// an i8mm pair's, in one vector, and their scales in one load. A quad
// takes the bytes of 4 Q8_0 rows, so in a batch the quad of tokens t..t+3
// (t a multiple of 4) starts t rows' bytes in.
constexpr int kActivationQuadTokens = 4;
constexpr size_t kQ8_0QuadBlockBytes = kActivationQuadTokens * 34;
// `tokens` (1 to 4) Q8_0 rows of cols values, rowStride bytes apart, into
// the quad at `quad`; the tokens from `tokens` on are zeros (the last
// quad of a batch). An interleave other than 4 or 8 throws
// std::invalid_argument.
void toActivationQuad(const uint8_t* rows, size_t rowStride, int tokens, uint64_t cols, int interleaveBytes,
                      uint8_t* quad);

// One row of the table of repacked layouts.
struct RepackLayout {
  TensorType type;         // the weights' type in the file
  uint32_t blockValues;    // values per block
  size_t groupBlockBytes;  // one block of each of the group's rows, repacked
  // Whether the tiles' activation rows carry each block's int16 sum of
  // quants after the row (ActivationRows::inQ8_0WithSums): the unsigned
  // form's offsets (Q4_0's 8, Q8_0x8's 128) come off through them. The K
  // types' partner, Q8_K, has its own sums.
  bool activationSums;
  // Block i of the 8 rows (rows[r] is row r's block i) into `out`, in `form`.
  void (*repackBlock)(const uint8_t* const rows[kRepackRows], RepackForm form, uint8_t* out);
};

// The layout of `type`'s weights, or nullptr if the type is not repacked.
const RepackLayout* repackLayoutFor(TensorType type);
// Every layout: [begin, end).
struct RepackLayouts {
  const RepackLayout *begin, *end;
};
RepackLayouts repackLayouts();

// Whether a matrix of `rows` x `cols` repacks: whole groups of 8 rows, whole blocks.
bool canRepack(const RepackLayout& layout, uint64_t rows, uint64_t cols);
// Bytes of one group of 8 rows.
size_t repackGroupBytes(const RepackLayout& layout, uint64_t cols);
// The rows [firstGroup * 8, (firstGroup + groups) * 8) of the matrix at
// `src` (rows of cols values, as the file has them) into `dst` (the same
// groups, repacked in `form`; an interleave other than 4 or 8 throws
// std::invalid_argument).
void repackGroups(const RepackLayout& layout, RepackForm form, const uint8_t* src, uint64_t cols, uint64_t firstGroup,
                  uint64_t groups, uint8_t* dst);

}  // namespace md
