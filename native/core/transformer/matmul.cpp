// matmul.cpp
#include "matmul.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "../quant/blocks.h"
#include "../quant/convert_rows.h"
#include "../quant/repack.h"

namespace md {
namespace {

int slotIndex(TensorType type) {
  switch (type) {
    case TensorType::F32: return 0;
    case TensorType::F16: return 1;
    case TensorType::BF16: return 2;
    case TensorType::Q8_0: return 3;
    case TensorType::Q8_1: return 4;
    case TensorType::Q8_K: return 5;
    default: throw std::logic_error("ActivationRows: not an activation type");
  }
}

// each(i) for i in [0, count), split across the pool's threads in
// contiguous ranges (one item runs on this thread).
template <class Each>
void splitAcrossPool(ThreadPool& pool, int64_t count, Each each) {
  if (count == 1) return each(int64_t(0));
  pool.run([&](int thread) {
    int64_t begin, end;
    ThreadPool::split(count, thread, pool.size(), &begin, &end);
    for (int64_t i = begin; i < end; ++i) each(i);
  });
}

// ActivationRows' slots after the six types': Q8_0 with its sums, and in quads.
constexpr size_t kQ8_0WithSumsSlot = 6, kQ8_0QuadsSlot = 7;

// Weight rows per block: small enough that a block of the largest rows
// stays in the L2 cache while every activation row passes over it.
constexpr int64_t kRowBlock = 16;

// The tile kernel of `w`: its type's, or the repacked layout's (repack_weights.h).
TileDot tileFor(const DotTable& dots, const TensorView& w) {
  if (!w.repacked()) return dots.forType(w.type);
  const TileDot tile = dots.repackedFor(w.type);
  if (tile == nullptr) throw std::logic_error("matmul: a repacked tensor without its tiles in this dot table");
  return tile;
}

// The activation rows `w`'s tiles read: its type's partner; for a layout
// whose tiles take Q8_0 (repack.h), in quads of tokens where the table's
// tiles read them so, else with each block's sums.
const uint8_t* activationsFor(const DotTable& dots, const TensorView& w, ActivationRows& x, ThreadPool& pool,
                              size_t* stride) {
  if (w.repacked() && repackLayoutFor(w.type)->activationSums) {
    if (dots.repackForm.activationQuads) return x.inQ8_0Quads(pool, dots.repackForm.interleaveBytes, stride);
    return x.inQ8_0WithSums(pool, stride);
  }
  return x.in(activationTypeFor(w.type), pool, stride);
}

// A row boundary of a thread's range moved up to a tile of a repacked
// tensor (its groups of 8 rows are not split): every thread moves the
// boundary it shares with its neighbour alike, so the ranges still cover
// each row once.
int64_t tileBoundary(const TensorView& w, int64_t row, int64_t rows) {
  if (!w.repacked()) return row;
  const int64_t g = int64_t(w.groupRows);
  return std::min(rows, (row + g - 1) / g * g);
}

// Rows [r0, r1) x tokens [t0, t1) of W x with the vector tiles, each tile
// handed to emit(r, n, t, tokens, part) (part[i * kTileTokens + k] is row
// r + i, token t + k): the one loop that matmul() and matvecTiles() run,
// so a row has the same bits whoever consumes it.
template <class Emit>
void vectorTiles(TileDot tile, const TensorView& w, const uint8_t* act, size_t stride, int64_t cols, int64_t r0,
                 int64_t r1, int64_t t0, int64_t t1, Emit emit) {
  static_assert(kRowBlock % kRepackedTileRows == 0 && kRowBlock % kTileRows == 0, "whole tiles a row block");
  static_assert(kTileTokens == kActivationQuadTokens, "a tile's tokens are one quad (ActivationRows::inQ8_0Quads)");
  float part[kRepackedTileRows * kTileTokens];
  // A repacked tile steps over its groups (r0 and r1 are whole groups, tileBoundary).
  const int64_t tileRows = w.repacked() ? kRepackedTileRows : kTileRows;
  const size_t tileStride = w.repacked() ? w.groupBytes : w.rowBytes;
  for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
    const int64_t re = std::min(r1, rb + kRowBlock);
    for (int64_t t = t0; t < t1; t += kTileTokens) {
      const int tokens = int(std::min<int64_t>(kTileTokens, t1 - t));
      for (int64_t r = rb; r < re; r += tileRows) {
        const int n = int(std::min<int64_t>(tileRows, re - r));
        tile(w.tile(uint64_t(r)), tileStride, n, act + size_t(t) * stride, stride, tokens, cols, part, kTileTokens);
        emit(r, n, t, tokens, part);
      }
    }
  }
}

// Whether `w`'s product goes to the table's BLAS library: float weights as
// the file has them, in a batch of kLibraryMinimum tokens and rows or more.
bool takenByLibrary(const DotTable& dots, const TensorView& w, int64_t batch) {
  if (dots.floatMatrix == nullptr || w.repacked() || batch < kLibraryMinimum || int64_t(w.rows) < kLibraryMinimum)
    return false;
  return w.type == TensorType::F32 || w.type == TensorType::F16 || w.type == TensorType::BF16;
}

// The float32 copy of a panel of weight rows is at most this big: a
// 2048-wide matrix goes 1024 rows a call, enough for the library to run
// at its pace, and the copy fits a performance cluster's L2 (12 MiB on
// M1, 16 on later chips), where the library reads it back.
constexpr size_t kPanelBytes = size_t(8) << 20;

// W x on the BLAS library: a panel of rows converted to float32 on the
// pool, then one library call from this thread (the library runs its own
// threads, as under llama.cpp's ggml-blas), panel by panel.
void libraryProduct(ThreadPool& pool, FloatMatrixProduct product, const MatmulJob& job, ActivationRows& x) {
  const TensorView& w = *job.weights;
  const int64_t rows = int64_t(w.rows), cols = x.cols(), batch = x.rows();
  const int64_t panelRows =
      std::clamp<int64_t>(int64_t(kPanelBytes / (size_t(cols) * sizeof(float))), kLibraryMinimum, rows);
  // One panel per thread that runs products, kept between calls.
  // (The pool's threads write it through this pointer: each thread has its
  // own thread_local.)
  thread_local std::vector<float> panelOfThisThread;
  if (panelOfThisThread.size() < size_t(panelRows * cols)) panelOfThisThread.resize(size_t(panelRows * cols));
  float* const panel = panelOfThisThread.data();
  for (int64_t r0 = 0; r0 < rows; r0 += panelRows) {
    const int64_t n = std::min(panelRows, rows - r0);
    splitAcrossPool(pool, n,
                    [&](int64_t r) { dequantizeRow(w.type, w.row(uint64_t(r0 + r)), panel + r * cols, cols); });
    product(panel, n, x.floats(), batch, cols, job.out + r0, size_t(rows));
  }
  if (job.bias != nullptr && job.bias->present()) {
    const auto* bias = reinterpret_cast<const float*>(job.bias->data);
    for (int64_t t = 0; t < batch; ++t)
      for (int64_t r = 0; r < rows; ++r) job.out[t * rows + r] += bias[r];
  }
}

}  // namespace

void ActivationRows::reset(const float* source, int64_t rows, int64_t cols) {
  source_ = source;
  rows_ = rows;
  cols_ = cols;
  for (Slot& s : slots_) s.valid = false;
}

const uint8_t* ActivationRows::inQ8_0WithSums(ThreadPool& pool, size_t* rowBytes) {
  return convert(slots_[kQ8_0WithSumsSlot], TensorType::Q8_0, true, pool, rowBytes);
}

const uint8_t* ActivationRows::inQ8_0Quads(ThreadPool& pool, int interleaveBytes, size_t* rowBytes) {
  Slot& slot = slots_[kQ8_0QuadsSlot];
  if (!slot.valid || slot.interleaveBytes != interleaveBytes) {
    size_t stride;
    const uint8_t* q8 = in(TensorType::Q8_0, pool, &stride);
    const int64_t quads = (rows_ + kActivationQuadTokens - 1) / kActivationQuadTokens;
    const size_t quadBytes = stride * kActivationQuadTokens;
    if (slot.bytes.size() < quadBytes * size_t(quads)) slot.bytes.resize(quadBytes * size_t(quads));
    auto quad = [&](int64_t q) {
      const int64_t first = q * kActivationQuadTokens;
      const int tokens = int(std::min<int64_t>(kActivationQuadTokens, rows_ - first));
      toActivationQuad(q8 + size_t(first) * stride, stride, tokens, uint64_t(cols_), interleaveBytes,
                       slot.bytes.data() + size_t(q) * quadBytes);
    };
    splitAcrossPool(pool, quads, quad);
    slot.rowBytes = stride;
    slot.interleaveBytes = interleaveBytes;
    slot.valid = true;
  }
  *rowBytes = slot.rowBytes;
  return slot.bytes.data();
}

const uint8_t* ActivationRows::in(TensorType type, ThreadPool& pool, size_t* rowBytes) {
  return convert(slots_[size_t(slotIndex(type))], type, false, pool, rowBytes);
}

const uint8_t* ActivationRows::convert(Slot& slot, TensorType type, bool sums, ThreadPool& pool, size_t* rowBytes) {
  if (!slot.valid) {
    slot.type = type;
    const size_t quantBytes = md::rowBytes(tensorTypeInfo(type), uint64_t(cols_));
    const int64_t blockCount = cols_ / int64_t(tensorTypeInfo(type).blockValues);
    slot.rowBytes = quantBytes + (sums ? size_t(blockCount) * 2 : 0);
    if (slot.bytes.size() < slot.rowBytes * size_t(rows_)) slot.bytes.resize(slot.rowBytes * size_t(rows_));
    const float* source = source_;
    const int64_t cols = cols_, rows = rows_;
    uint8_t* dst = slot.bytes.data();
    const size_t stride = slot.rowBytes;
    auto row = [&](int64_t r) {
      uint8_t* out = dst + size_t(r) * stride;
      quantizeActivations(type, source + r * cols, out, cols);
      if (sums) {
        const auto* q = reinterpret_cast<const blocks::Q8_0*>(out);
        for (int64_t b = 0; b < blockCount; ++b) {
          int32_t sum = 0;
          for (int j = 0; j < blocks::kBlock; ++j) sum += q[b].qs[j];
          const int16_t s16 = int16_t(sum);  // |sum| <= 32 x 127
          std::memcpy(out + quantBytes + size_t(b) * 2, &s16, 2);
        }
      }
    };
    splitAcrossPool(pool, rows, row);
    slot.valid = true;
  }
  *rowBytes = slot.rowBytes;
  return slot.bytes.data();
}

void matmul(ThreadPool& pool, const DotTable& dots, const MatmulJob* jobList, size_t jobCount, ActivationRows& x) {
  const MatmulJob* jobs = jobList;
  struct Prepared {
    const TensorView* w;
    float* out;
    const float* bias;
    TileDot tile;
    const uint8_t* act;
    size_t stride;
    int64_t firstRow;  // in the concatenated range
  };
  Prepared prepared[4];
  if (jobCount > 4) throw std::logic_error("matmul: at most 4 products per pass");
  int count = 0;
  int64_t total = 0;
  for (size_t j = 0; j < jobCount; ++j) {
    const MatmulJob& job = jobs[j];
    if (uint64_t(x.cols()) != job.weights->cols)
      throw std::logic_error("matmul: activation width differs from the weights'");
    if (takenByLibrary(dots, *job.weights, x.rows())) {
      libraryProduct(pool, dots.floatMatrix, job, x);
      continue;
    }
    Prepared& p = prepared[count++];
    p.w = job.weights;
    p.out = job.out;
    p.bias = job.bias != nullptr && job.bias->present() ? reinterpret_cast<const float*>(job.bias->data) : nullptr;
    p.tile = tileFor(dots, *job.weights);
    p.act = activationsFor(dots, *job.weights, x, pool, &p.stride);
    p.firstRow = total;
    total += int64_t(job.weights->rows);
  }
  if (count == 0) return;
  const int64_t batch = x.rows(), cols = x.cols();
  pool.run([&](int thread) {
    int64_t begin, end;
    ThreadPool::split(total, thread, pool.size(), &begin, &end);
    for (int j = 0; j < count; ++j) {
      const Prepared& p = prepared[j];
      const int64_t rows = int64_t(p.w->rows);
      const int64_t from = tileBoundary(*p.w, std::max<int64_t>(begin - p.firstRow, 0), rows),
                    to = tileBoundary(*p.w, std::min<int64_t>(end - p.firstRow, rows), rows);
      if (from >= to) continue;
      // Rows [r0, r1) x tokens [t0, t1) with the vector tiles.
      auto tiles = [&](int64_t r0, int64_t r1, int64_t t0, int64_t t1) {
        vectorTiles(p.tile, *p.w, p.act, p.stride, cols, r0, r1, t0, t1,
                    [&](int64_t r, int n, int64_t t, int tokens, const float* part) {
                      for (int i = 0; i < n; ++i)
                        for (int k = 0; k < tokens; ++k)
                          p.out[(t + k) * rows + r + i] = part[i * kTileTokens + k] + (p.bias ? p.bias[r + i] : 0.f);
                    });
      };
      // Matrix units take the 16 x 16-aligned part of a batch, the tiles the edges.
      constexpr int64_t kGrid = 16;
      const int64_t a0 = (from + kGrid - 1) / kGrid * kGrid, a1 = to / kGrid * kGrid, tb = batch / kGrid * kGrid;
      if (dots.matrix != nullptr && !p.w->repacked() && tb > 0 && a1 > a0 &&
          dots.matrix(p.w->type, p.w->row(uint64_t(a0)), p.w->rowBytes, a1 - a0, p.act, p.stride, tb, cols, p.out + a0,
                      size_t(rows))) {
        if (p.bias)
          for (int64_t t = 0; t < tb; ++t)
            for (int64_t r = a0; r < a1; ++r) p.out[t * rows + r] += p.bias[r];
        tiles(from, a0, 0, batch);
        tiles(a1, to, 0, batch);
        tiles(a0, a1, tb, batch);
      } else {
        tiles(from, to, 0, batch);
      }
    }
  });
}

void matvecTiles(ThreadPool& pool, const DotTable& dots, const TensorView& w, ActivationRows& x,
                 const MatvecVisit& visit) {
  if (x.rows() != 1) throw std::logic_error("matvecTiles: one activation row");
  if (uint64_t(x.cols()) != w.cols) throw std::logic_error("matvecTiles: activation width differs from the weights'");
  const TileDot tile = tileFor(dots, w);
  size_t stride;
  const uint8_t* act = activationsFor(dots, w, x, pool, &stride);
  const int64_t rows = int64_t(w.rows), cols = x.cols();
  // matmul()'s split and tiles for one product and one token (the matrix units take batches of 16 only).
  pool.run([&](int thread) {
    int64_t begin, end;
    ThreadPool::split(rows, thread, pool.size(), &begin, &end);
    begin = tileBoundary(w, begin, rows);
    end = tileBoundary(w, end, rows);
    vectorTiles(tile, w, act, stride, cols, begin, end, 0, 1,
                [&](int64_t r, int n, int64_t, int, const float* part) { visit(thread, r, n, part, kTileTokens); });
  });
}

}  // namespace md
