// llama_cpp_neon_f16.cpp: llama.cpp's F16 prompt kernel on Arm (tinyBLAS,
// its ggml-cpu/llamafile/sgemm.cpp, which sums in float16 where the CPU
// has float16 arithmetic) run CALLS times on 8 rows and 8 tokens, for
// counting its instructions under qemu beside our F16 tile
// (scripts/count-neon-tiles.mjs builds this against the llama.cpp source
// node-llama-cpp ships; it is not part of the package's build).
//
//   llama_cpp_neon_f16 BLOCKS CALLS
//
// BLOCKS: of 32 values. 8 tokens: tinyBLAS takes no fewer on Arm (below 8,
// llama.cpp's dot product runs instead). It runs on one thread; the
// threadpool calls it makes are answered here as one thread's would be.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "pseudo_random_bytes.h"

#include "ggml-cpu-impl.h"
#include "llamafile/sgemm.h"

namespace {
int nextChunk = 0;
}  // namespace

// One thread: the barrier has no one to wait for, the chunks are taken in order.
void ggml_barrier(struct ggml_threadpool*) {}
void ggml_threadpool_chunk_set(struct ggml_threadpool*, int value) { nextChunk = value; }
int ggml_threadpool_chunk_add(struct ggml_threadpool*, int value) {
  const int chunk = nextChunk;
  nextChunk += value;
  return chunk;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: llama_cpp_neon_f16 BLOCKS CALLS\n");
    return 2;
  }
  const long blocks = std::atol(argv[1]), calls = std::atol(argv[2]);
  if (blocks < 1 || calls < 1) {
    std::fprintf(stderr, "llama_cpp_neon_f16: blocks and calls: at least 1\n");
    return 2;
  }
  constexpr int kRows = 8, kTokens = 8;
  const int64_t k = blocks * 32;
  const std::vector<uint8_t> weights = pseudoRandomBytes(size_t(kRows * k) * 2, 1);
  const std::vector<uint8_t> acts = pseudoRandomBytes(size_t(kTokens * k) * 2, 2);
  float out[kRows * kTokens];
  ggml_compute_params params{};
  params.ith = 0;
  params.nth = 1;
  for (long c = 0; c < calls; ++c) {
    if (!llamafile_sgemm(&params, kRows, kTokens, k, weights.data(), k, acts.data(), k, out, kRows, GGML_TYPE_F16,
                         GGML_TYPE_F16, GGML_TYPE_F32)) {
      std::fprintf(stderr, "llama_cpp_neon_f16: tinyBLAS did not take the product\n");
      return 1;
    }
  }
  volatile float sink = out[0];
  (void)sink;
  return 0;
}
