// kernel_counters_test.cpp: the access counters (native/counters/) on
// kernels whose memory behaviour is known, then on the decode matrix-vector
// kernels: every weight byte read exactly once, y written once.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "attention_counts.h"
#include "count_dispatch.h"
#include "emulated_device.h"
#include "matmul_counts.h"
#include "matvec_counts.h"
#include "md_transformer.h"
#include "quant/tensor_types.h"
#include "random_weights.h"

namespace md::emu::testing {
extern const EmulatedKernel kAccessPatternKernels[];
extern const size_t kAccessPatternKernelCount;
}  // namespace md::emu::testing

namespace {

using md::counters::AccessCounts;
using md::counters::countDispatch;

// One worker: the recorder counts one threadgroup at a time.
md::emu::EmulatedDevice& patterns() {
  static md::emu::EmulatedDevice d(md::emu::testing::kAccessPatternKernels, md::emu::testing::kAccessPatternKernelCount,
                                   1);
  return d;
}

AccessCounts runPattern(const char* kernel, size_t inFloats, uint32_t groups, uint32_t threads) {
  auto in = patterns().newBuffer(inFloats * 4);
  auto out = patterns().newBuffer(size_t(groups) * threads * 4);
  return countDispatch(patterns(), kernel, {{0, in.get()}, {1, out.get()}}, 0, nullptr, 0, groups, threads);
}

TEST(KernelCounters, ACoalescedLoadUsesEveryByteOfOneLinePerSimdGroup) {
  const AccessCounts c = runPattern("md_test_coalesced_load", 4 * 64, 4, 64);
  EXPECT_EQ(c.loadInstructions, 8u);  // 4 groups x 2 SIMD groups
  EXPECT_EQ(c.linesLoaded, 8u);
  EXPECT_DOUBLE_EQ(c.loadEfficiency(), 1.0);
  EXPECT_EQ(c.deviceBytesRead, 4u * 256);
  EXPECT_EQ(c.buffers.at(0).distinctBytesRead, 4u * 256);
  EXPECT_DOUBLE_EQ(c.rereads(), 1.0);
  EXPECT_EQ(c.storeInstructions, 8u);
  EXPECT_DOUBLE_EQ(c.storeEfficiency(), 1.0);
  EXPECT_EQ(c.buffers.at(1).bytesWritten, 4u * 256);
}

TEST(KernelCounters, AStridedLoadTouchesALinePerLaneForFourBytesOfIt) {
  const AccessCounts c = runPattern("md_test_strided_load", 32 * 64, 1, 64);
  EXPECT_EQ(c.loadInstructions, 2u);
  EXPECT_EQ(c.linesLoaded, 64u);
  EXPECT_DOUBLE_EQ(c.loadEfficiency(), 4.0 / 128);
}

TEST(KernelCounters, ABroadcastLoadIsOneLineAndFourBytesUsedAndReadsTheWordOncePerLane) {
  const AccessCounts c = runPattern("md_test_broadcast_load", 32, 1, 32);
  EXPECT_EQ(c.loadInstructions, 1u);
  EXPECT_EQ(c.linesLoaded, 1u);
  EXPECT_EQ(c.bytesUsedLoading, 4u);
  EXPECT_EQ(c.deviceBytesRead, 4u * 32);
  EXPECT_EQ(c.buffers.at(0).distinctBytesRead, 4u);
  EXPECT_DOUBLE_EQ(c.rereads(), 32.0);
}

TEST(KernelCounters, ThreadgroupBankConflictsCountThePassesOfTheBusiestBank) {
  auto out = patterns().newBuffer(32 * 4);
  const AccessCounts c = countDispatch(patterns(), "md_test_threadgroup_banks", {{0, out.get()}}, 0, nullptr, 0, 1, 32);
  EXPECT_EQ(c.threadgroupInstructions, 2u);
  EXPECT_EQ(c.threadgroupWavefronts, 1u + 32u);  // the store in one pass, the load 32-way
}

// The decode matrix-vector kernel of every weight type, on a 64 x 4096
// matrix (64 rows: 2 threadgroups of the tables' 4 SIMD groups of 8 rows): every
// weight byte is fetched by exactly one SIMD-group load (scales and
// offsets too: the lanes that share a block's scale load it in one
// instruction), and y is written once per row. (How x's loads are counted
// depends on the compiler of the counting build: GCC's keeps them as the
// source writes them, once per part for a SIMD group's rows; clang 14's
// instrumentation does not see them. So only md_kernel_counters reports x.)
TEST(KernelCounters, TheMatvecOfEveryTypeFetchesEachWeightByteOnce) {
  md::emu::EmulatedDevice counted(nullptr, 0, 1);
  for (const TypeCase& t : kWeightTypes) {
    const auto c = md::counters::countMatvec(counted, t.type, t.suffix, 64, 4096);
    EXPECT_EQ(c.weights.distinctBytesRead, c.weightBytes) << t.suffix;
    EXPECT_EQ(c.weights.bytesFetched, c.weightBytes) << t.suffix;
    EXPECT_EQ(c.y.bytesWritten, 64u * 4) << t.suffix;
  }
}

// x is loaded a window of 32 parts at a time, coalesced: each load is one
// 128-byte line, all of it used (4096 values: whole windows only). Each
// lane loading its own part touched 32 lines per load.
TEST(KernelCounters, TheMatvecOfEveryTypeLoadsXOneWholeLinePerLoad) {
  md::emu::EmulatedDevice counted(nullptr, 0, 1);
  for (const TypeCase& t : kWeightTypes) {
    const auto c = md::counters::countMatvec(counted, t.type, t.suffix, 64, 4096);
    ASSERT_GT(c.x.loadInstructions, 0u) << t.suffix;
    EXPECT_EQ(c.x.linesLoaded, c.x.loadInstructions) << t.suffix;
    EXPECT_EQ(c.x.bytesFetched, c.x.loadInstructions * 128) << t.suffix;
  }
}

// Every row is staged in threadgroup memory a 128-byte line per load
// (md_matvec_rows.h): every weight load is one line, and at least 90% of
// its bytes are used (Q6_K's 3,360-byte rows share a line with their
// neighbours at each end; the other types' rows here are whole lines).
// Each lane loading its own block touched 4.6 to 9 lines per load, 3-17%
// of their bytes used; float16 rows loaded as x is used half of each line.
TEST(KernelCounters, TheMatvecOfEveryTypeLoadsALinePerWeightLoadNinetyPercentUsed) {
  md::emu::EmulatedDevice counted(nullptr, 0, 1);
  for (const TypeCase& t : kWeightTypes) {
    const auto c = md::counters::countMatvec(counted, t.type, t.suffix, 64, 4096);
    ASSERT_GT(c.weights.loadInstructions, 0u) << t.suffix;
    EXPECT_EQ(c.weights.linesLoaded, c.weights.loadInstructions) << t.suffix;
    EXPECT_GE(double(c.weights.bytesFetched), 0.9 * 128 * double(c.weights.linesLoaded)) << t.suffix;
  }
}

// A GGUF aligns its tensors to 32 bytes, not 128: the kernel counts its
// lines from where the matrix starts in one (line_phases), so a matrix 32,
// 64 or 96 bytes into a line still loads one line per weight load.
TEST(KernelCounters, TheMatvecLoadsWholeLinesWhereverTheMatrixStartsInOne) {
  md::emu::EmulatedDevice counted(nullptr, 0, 1);
  for (const TypeCase& t : kWeightTypes) {
    for (uint32_t phase : {32u, 64u, 96u}) {
      const auto c = md::counters::countMatvec(counted, t.type, t.suffix, 64, 4096, 4, phase);
      EXPECT_EQ(c.weights.bytesFetched, c.weightBytes) << t.suffix << " at " << phase;
      EXPECT_EQ(c.weights.linesLoaded, c.weights.loadInstructions) << t.suffix << " at " << phase;
      EXPECT_GE(double(c.weights.bytesFetched), 0.9 * 128 * double(c.weights.linesLoaded))
          << t.suffix << " at " << phase;
    }
  }
}

// A mixture of experts' decode reads only the experts the router chose:
// one token choosing experts 5 and 2 of 8 (SwiGLU: the gate's and the up's
// stacked tensors) fetches each chosen expert's bytes exactly once and no
// other expert's. 61 rows: the experts start at other places in their
// lines (the kernel's line phases follow them).
TEST(KernelCounters, TheIndexedMatvecFetchesTheChosenExpertsOnceAndNoOthers) {
  md::emu::EmulatedDevice counted(nullptr, 0, 1);
  for (const TypeCase& t : kWeightTypes) {
    const uint32_t experts = 8, rows = 61, cols = 1024, pairs = 2;
    const auto gateBytes = randomRows(t.type, experts * rows, cols, 5),
               upBytes = randomRows(t.type, experts * rows, cols, 6);
    const uint32_t expertBytes = uint32_t(gateBytes.size() / experts);
    auto gate = counted.newBuffer(gateBytes.size()), up = counted.newBuffer(upBytes.size());
    std::memcpy(gate->contents(), gateBytes.data(), gateBytes.size());
    std::memcpy(up->contents(), upBytes.data(), upBytes.size());
    auto x = counted.newBuffer(4 * cols), y = counted.newBuffer(4 * pairs * rows), ids = counted.newBuffer(4 * pairs);
    const uint32_t chosen[pairs] = {5, 2};
    std::memcpy(ids->contents(), chosen, sizeof chosen);
    const md_matvec_id_params p{cols, MD_MATVEC_SWIGLU, rows, pairs, pairs, 0, experts, expertBytes, 0, 0};
    const AccessCounts c = countDispatch(counted, std::string("md_matvec_id_") + t.suffix,
                                         {{0, gate.get()}, {1, x.get()}, {3, y.get()}, {4, up.get()}, {5, ids.get()}},
                                         2, &p, sizeof p, pairs * MD_MATVEC_ID_GROUPS(rows, 4), 128);
    ASSERT_EQ(c.buffers.size(), 5u) << t.suffix;
    for (size_t matrix : {size_t(0), size_t(3)}) {  // the gate and the up, in binding order
      EXPECT_EQ(c.buffers[matrix].distinctBytesRead, uint64_t(pairs) * expertBytes) << t.suffix;
      EXPECT_EQ(c.buffers[matrix].bytesFetched, uint64_t(pairs) * expertBytes) << t.suffix;
      EXPECT_EQ(c.buffers[matrix].linesLoaded, c.buffers[matrix].loadInstructions) << t.suffix << ": a line per load";
    }
  }
}

// A threadgroup per KV head serves its whole group of query heads: each
// cached K and V byte is fetched once per token (it was once per query
// head, 4x for these heads).
TEST(KernelCounters, TheAttentionFetchesEachKvByteOncePerToken) {
  md::emu::EmulatedDevice counted(nullptr, 0, 1);
  const auto c = md::counters::countAttention(counted, {32, 8, 64, 256});
  EXPECT_EQ(c.kvBytes, 2u * 256 * 8 * 64 * 2);
  EXPECT_EQ(c.keys.distinctBytesRead + c.values.distinctBytesRead, c.kvBytes);
  EXPECT_EQ(c.keys.bytesFetched + c.values.bytesFetched, c.kvBytes);
}

// A SIMD group loads a K or V row of a head (64 float16 values: 128 bytes)
// in one instruction, each lane a word: one whole line per load, every
// byte of it used (a thread per row touched 32 lines per load, 2 bytes of
// each). Nothing but the output is written: the scores stay in registers.
TEST(KernelCounters, TheAttentionLoadsEachKvRowAsOneWholeLine) {
  md::emu::EmulatedDevice counted(nullptr, 0, 1);
  const auto c = md::counters::countAttention(counted, {32, 8, 64, 256});
  for (const auto* b : {&c.keys, &c.values}) {
    EXPECT_EQ(b->loadInstructions, 256u * 8);
    EXPECT_EQ(b->linesLoaded, b->loadInstructions);
    EXPECT_EQ(b->bytesFetched, b->loadInstructions * 128);
  }
  EXPECT_EQ(c.all.deviceBytesWritten, 32u * 64 * 4);
}

// The prefill's matrix-matrix kernel (matmul.metal), one tile: 64 rows x
// 32 tokens (each simdgroup matrix op runs per lane on the counting
// emulator, so a tile takes seconds). Its tile stores, and the reads that take Y out of
// threadgroup memory, each take one pass of the banks: W's tile is k-major,
// so a SIMD group stores 32 rows' value side by side, and X's rows are
// padded and each thread starts its 8 columns at its token's turn (the
// stores of the 32 x 32 tiles before took 4 passes for W, transposed, and
// 8 for X).
// The writes to Y are whole lines. X is fetched once, and every byte of W is read; W is fetched once per 32-token tile
// up to the bytes both threads of a part read: a 0 type's header (scale, Q4_1's and Q5_1's min, Q5_1's fifth bits: at
// most 1.34 times its bytes), and for the K types the scales at each of a block's 8 parts and each byte of qs at the
// parts its bits belong to (Q6_K's qh, Q2_K's and Q3_K's qs at four; Q3_K's hmask at all 8, so 5.6 for it): at most 4.4
// times, re-reads of bytes the tile read a step before.
TEST(KernelCounters, TheMatmulStoresItsTilesInOnePassOfTheBanksAndReadsWOncePerTokenTile) {
  md::emu::EmulatedDevice counted(nullptr, 0, 1);
  for (const TypeCase& t : kWeightTypes) {
    const auto c = md::counters::countMatmul(counted, t.type, t.suffix, 64, 256, 32);
    ASSERT_EQ(c.tokenTiles, 1u);
    ASSERT_GT(c.all.threadgroupInstructions, 0u) << t.suffix;
    EXPECT_EQ(c.all.threadgroupWavefronts, c.all.threadgroupInstructions) << t.suffix;
    EXPECT_EQ(c.y.bytesWritten, 32u * 64 * 4) << t.suffix;
    EXPECT_DOUBLE_EQ(c.all.storeEfficiency(), 1.0) << t.suffix;
    EXPECT_EQ(c.x.bytesFetched, 32u * 256 * 4) << t.suffix;
    EXPECT_EQ(c.weights.distinctBytesRead, c.weightBytes) << t.suffix;
    const double wFetched = double(c.weights.bytesFetched) / double(c.weightBytes * c.tokenTiles);
    const bool kType = md::tensorTypeInfo(t.type).blockValues == 256;
    EXPECT_LE(wFetched, t.type == md::TensorType::Q3_K ? 5.6 : kType ? 4.4 : 1.34) << t.suffix;
    EXPECT_GE(wFetched, 1.0) << t.suffix;
  }
}

}  // namespace
