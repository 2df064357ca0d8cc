// llama_cpp_neon_tiles.cpp: llama.cpp's own repacked NEON kernels (its
// ggml-cpu/arch/arm/repack.cpp) run CALLS times on 8 rows, for counting
// their instructions under qemu beside ours (scripts/count-neon-tiles.mjs
// builds this against the llama.cpp source node-llama-cpp ships; it is not
// part of the package's build).
//
//   llama_cpp_neon_tiles KERNEL TOKENS BLOCKS CALLS
//
// KERNEL: q4_0_4x4, q4_0_4x8, q8_0_4x4, q8_0_4x8, q4_K_8x4, q4_K_8x8,
// q5_K_8x4, q5_K_8x8, q6_K_8x4 or q6_K_8x8 (rows interleaved x bytes a
// row: x4 for the dot product, x8 for i8mm). TOKENS 1 runs its gemv (one
// token), 4 its gemm (4 tokens, interleaved at quantization as llama.cpp
// does; that quantization is not counted). BLOCKS: of 32 values for Q4_0
// and Q8_0, of 256 for the K types. The bytes are fixed pseudo-random: the
// kernels take no branch on their values.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pseudo_random_bytes.h"

#define GGML_COMMON_DECL_CPP
#include "ggml-common.h"
#include "repack.h"

namespace {

using Kernel = void (*)(int, float*, size_t, const void*, const void*, int, int);

struct Entry {
  const char* name;
  Kernel gemv, gemm;
  size_t weightGroupBytes;  // one block of an interleaved group of rows
  int groupRows;
  size_t activationBytes;    // one block of one token (gemv)
  size_t activationX4Bytes;  // one block of 4 tokens, interleaved (gemm)
  int blockValues;
};

const Entry kEntries[] = {
    {"q4_0_4x4", ggml_gemv_q4_0_4x4_q8_0, ggml_gemm_q4_0_4x4_q8_0, sizeof(block_q4_0x4), 4, sizeof(block_q8_0),
     sizeof(block_q8_0x4), QK8_0},
    {"q4_0_4x8", ggml_gemv_q4_0_4x8_q8_0, ggml_gemm_q4_0_4x8_q8_0, sizeof(block_q4_0x4), 4, sizeof(block_q8_0),
     sizeof(block_q8_0x4), QK8_0},
    {"q8_0_4x4", ggml_gemv_q8_0_4x4_q8_0, ggml_gemm_q8_0_4x4_q8_0, sizeof(block_q8_0x4), 4, sizeof(block_q8_0),
     sizeof(block_q8_0x4), QK8_0},
    {"q8_0_4x8", ggml_gemv_q8_0_4x8_q8_0, ggml_gemm_q8_0_4x8_q8_0, sizeof(block_q8_0x4), 4, sizeof(block_q8_0),
     sizeof(block_q8_0x4), QK8_0},
    {"q4_K_8x4", ggml_gemv_q4_K_8x4_q8_K, ggml_gemm_q4_K_8x4_q8_K, sizeof(block_q4_Kx8), 8, sizeof(block_q8_K),
     sizeof(block_q8_Kx4), QK_K},
    {"q4_K_8x8", ggml_gemv_q4_K_8x8_q8_K, ggml_gemm_q4_K_8x8_q8_K, sizeof(block_q4_Kx8), 8, sizeof(block_q8_K),
     sizeof(block_q8_Kx4), QK_K},
    {"q5_K_8x4", ggml_gemv_q5_K_8x4_q8_K, ggml_gemm_q5_K_8x4_q8_K, sizeof(block_q5_Kx8), 8, sizeof(block_q8_K),
     sizeof(block_q8_Kx4), QK_K},
    {"q5_K_8x8", ggml_gemv_q5_K_8x8_q8_K, ggml_gemm_q5_K_8x8_q8_K, sizeof(block_q5_Kx8), 8, sizeof(block_q8_K),
     sizeof(block_q8_Kx4), QK_K},
    {"q6_K_8x4", ggml_gemv_q6_K_8x4_q8_K, ggml_gemm_q6_K_8x4_q8_K, sizeof(block_q6_Kx8), 8, sizeof(block_q8_K),
     sizeof(block_q8_Kx4), QK_K},
    {"q6_K_8x8", ggml_gemv_q6_K_8x8_q8_K, ggml_gemm_q6_K_8x8_q8_K, sizeof(block_q6_Kx8), 8, sizeof(block_q8_K),
     sizeof(block_q8_Kx4), QK_K},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: llama_cpp_neon_tiles KERNEL TOKENS BLOCKS CALLS\n");
    return 2;
  }
  const Entry* entry = nullptr;
  for (const Entry& e : kEntries)
    if (std::strcmp(e.name, argv[1]) == 0) entry = &e;
  const int tokens = std::atoi(argv[2]);
  const long blocks = std::atol(argv[3]), calls = std::atol(argv[4]);
  if (entry == nullptr || (tokens != 1 && tokens != 4) || blocks < 1 || calls < 1) {
    std::fprintf(stderr, "llama_cpp_neon_tiles: unknown kernel %s, or tokens (1 or 4), blocks or calls out of range\n",
                 argv[1]);
    return 2;
  }
  constexpr int kRows = 8;
  const int n = int(blocks) * entry->blockValues;
  const std::vector<uint8_t> weights =
      pseudoRandomBytes(size_t(kRows / entry->groupRows) * size_t(blocks) * entry->weightGroupBytes, 1);
  const std::vector<uint8_t> acts =
      pseudoRandomBytes(size_t(blocks) * (tokens == 1 ? entry->activationBytes : entry->activationX4Bytes), 2);
  float out[4 * kRows];
  for (long c = 0; c < calls; ++c) {
    if (tokens == 1)
      entry->gemv(n, out, kRows, weights.data(), acts.data(), 1, kRows);
    else
      entry->gemm(n, out, kRows, weights.data(), acts.data(), 4, kRows);
  }
  volatile float sink = out[0];
  (void)sink;
  return 0;
}
