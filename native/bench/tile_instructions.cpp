// tile_instructions.cpp: runs one repacked tile CALLS times, for counting
// the instructions it executes under an emulator. scripts/count-neon-tiles.mjs
// runs it under qemu-user at 1 and 2 calls (the difference: one call, without
// the start-up and the data's making), for rows of 4 and 8 blocks (the
// difference: 4 blocks, without the call's set-up).
//
//   md_tile_instructions ISA TYPE TOKENS BLOCKS CALLS
//
// ISA is a dot table's name (dot.h), TYPE Q4_0, Q8_0, Q4_K, Q5_K or Q6_K
// (a repacked tile), or F16 (the float tile, 8 rows as the file has them),
// TOKENS 1..4, BLOCKS the blocks of each row (32 values for Q4_0, Q8_0 and
// F16, 256 for the K types). The weights and activations are fixed pseudo-random
// bytes: the tiles take no branch on their values.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <utility>
#include <vector>

#include "pseudo_random_bytes.h"

#include "quant/dot.h"
#include "quant/repack.h"
#include "quant/tensor_types.h"

namespace {

// The F16 tile (rows as the file has them: F16 is not repacked) on 8 rows
// of BLOCKS x 32 values against TOKENS F16 activation rows.
int floatTile(const md::DotTable& table, int tokens, long blocks, long calls) {
  using namespace md;
  if (tokens < 1 || tokens > kTileTokens || blocks < 1 || calls < 1) {
    std::fprintf(stderr, "md_tile_instructions: tokens/blocks/calls out of range\n");
    return 2;
  }
  const int64_t n = int64_t(blocks) * 32;
  const size_t rowBytes = size_t(n) * 2;
  const std::vector<uint8_t> weights = pseudoRandomBytes(rowBytes * kTileRows, 1);
  const std::vector<uint8_t> acts = pseudoRandomBytes(rowBytes * size_t(tokens), 2);
  float out[kTileRows * kTileTokens];
  for (long c = 0; c < calls; ++c)
    table.f16(weights.data(), rowBytes, kTileRows, acts.data(), rowBytes, tokens, n, out, kTileTokens);
  volatile float sink = out[0];
  (void)sink;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace md;
  if (argc != 6) {
    std::fprintf(stderr, "usage: md_tile_instructions ISA TYPE TOKENS BLOCKS CALLS\n");
    return 2;
  }
  try {
    const DotTable& table = dotTableNamed(argv[1]);
    if (std::strcmp(argv[2], "F16") == 0)
      return floatTile(table, std::atoi(argv[3]), std::atol(argv[4]), std::atol(argv[5]));
    const RepackLayout* layout = nullptr;
    for (const RepackLayout* l = repackLayouts().begin; l != repackLayouts().end; ++l)
      if (std::strcmp(tensorTypeInfo(l->type).name, argv[2]) == 0) layout = l;
    const int tokens = std::atoi(argv[3]);
    const long blocks = std::atol(argv[4]), calls = std::atol(argv[5]);
    if (layout == nullptr || table.repackedFor(layout->type) == nullptr || tokens < 1 || tokens > kTileTokens ||
        blocks < 1 || calls < 1) {
      std::fprintf(stderr, "md_tile_instructions: no %s tile for %s, or tokens/blocks/calls out of range\n", argv[1],
                   argv[2]);
      return 2;
    }
    const uint64_t n = uint64_t(blocks) * layout->blockValues;
    const std::vector<uint8_t> plain =
        pseudoRandomBytes(md::rowBytes(tensorTypeInfo(layout->type), n) * kRepackRows, 1);
    std::vector<uint8_t> packed(repackGroupBytes(*layout, n));
    repackGroups(*layout, table.repackForm, plain.data(), n, 0, 1, packed.data());
    // Activation rows: Q8_K for the K types, else Q8_0 and its block sums,
    // or the tokens' quad where the table's tiles read one (repack.h).
    const TensorType activation = layout->activationSums ? TensorType::Q8_0 : TensorType::Q8_K;
    size_t activationBytes =
        md::rowBytes(tensorTypeInfo(activation), n) + (layout->activationSums ? size_t(n / 32) * 2 : 0);
    std::vector<uint8_t> acts = pseudoRandomBytes(activationBytes * size_t(tokens), 2);
    if (layout->activationSums && table.repackForm.activationQuads) {
      const size_t q8Bytes = md::rowBytes(tensorTypeInfo(activation), n);
      std::vector<uint8_t> quad(q8Bytes * kActivationQuadTokens);
      toActivationQuad(acts.data(), activationBytes, tokens, n, table.repackForm.interleaveBytes, quad.data());
      acts = std::move(quad);
      activationBytes = q8Bytes;
    }
    float out[kTileRows * kTileTokens];
    for (long c = 0; c < calls; ++c)
      table.repackedFor(layout->type)(packed.data(), packed.size(), kRepackRows, acts.data(), activationBytes, tokens,
                                      int64_t(n), out, kTileTokens);
    volatile float sink = out[0];
    (void)sink;
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "md_tile_instructions: %s\n", e.what());
    return 2;
  }
}
