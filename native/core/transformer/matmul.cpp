// matmul.cpp
#include "matmul.h"

#include <algorithm>
#include <stdexcept>

#include "../quant/convert_rows.h"

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

// Weight rows per block: small enough that a block of the largest rows
// stays in the L2 cache while every activation row passes over it.
constexpr int64_t kRowBlock = 16;

// Rows [r0, r1) x tokens [t0, t1) of W x with the vector tiles, each tile
// handed to emit(r, n, t, tokens, part) (part[i * kTileTokens + k] is row
// r + i, token t + k): the one loop that matmul() and matvecTiles() run,
// so a row has the same bits whoever consumes it.
template <class Emit>
void vectorTiles(TileDot tile, const TensorView& w, const uint8_t* act, size_t stride, int64_t cols, int64_t r0,
                 int64_t r1, int64_t t0, int64_t t1, Emit emit) {
  float part[kTileRows * kTileTokens];
  for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
    const int64_t re = std::min(r1, rb + kRowBlock);
    for (int64_t t = t0; t < t1; t += kTileTokens) {
      const int tokens = int(std::min<int64_t>(kTileTokens, t1 - t));
      for (int64_t r = rb; r < re; r += kTileRows) {
        const int n = int(std::min<int64_t>(kTileRows, re - r));
        tile(w.row(uint64_t(r)), w.rowBytes, n, act + size_t(t) * stride, stride, tokens, cols, part, kTileTokens);
        emit(r, n, t, tokens, part);
      }
    }
  }
}

}  // namespace

void ActivationRows::reset(const float* source, int64_t rows, int64_t cols) {
  source_ = source;
  rows_ = rows;
  cols_ = cols;
  for (Slot& s : slots_) s.valid = false;
}

const uint8_t* ActivationRows::in(TensorType type, ThreadPool& pool, size_t* rowBytes) {
  Slot& slot = slots_[size_t(slotIndex(type))];
  if (!slot.valid) {
    slot.type = type;
    slot.rowBytes = md::rowBytes(tensorTypeInfo(type), uint64_t(cols_));
    if (slot.bytes.size() < slot.rowBytes * size_t(rows_)) slot.bytes.resize(slot.rowBytes * size_t(rows_));
    const float* source = source_;
    const int64_t cols = cols_, rows = rows_;
    uint8_t* dst = slot.bytes.data();
    const size_t stride = slot.rowBytes;
    if (rows == 1) {
      quantizeActivations(type, source, dst, cols);
    } else {
      pool.run([&](int t) {
        int64_t begin, end;
        ThreadPool::split(rows, t, pool.size(), &begin, &end);
        for (int64_t r = begin; r < end; ++r)
          quantizeActivations(type, source + r * cols, dst + size_t(r) * stride, cols);
      });
    }
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
    Prepared& p = prepared[count++];
    p.w = job.weights;
    p.out = job.out;
    p.bias = job.bias != nullptr && job.bias->present() ? reinterpret_cast<const float*>(job.bias->data) : nullptr;
    p.tile = dots.forType(job.weights->type);
    p.act = x.in(activationTypeFor(job.weights->type), pool, &p.stride);
    p.firstRow = total;
    total += int64_t(job.weights->rows);
  }
  const int64_t batch = x.rows(), cols = x.cols();
  pool.run([&](int thread) {
    int64_t begin, end;
    ThreadPool::split(total, thread, pool.size(), &begin, &end);
    for (int j = 0; j < count; ++j) {
      const Prepared& p = prepared[j];
      const int64_t rows = int64_t(p.w->rows);
      const int64_t from = std::max<int64_t>(begin - p.firstRow, 0), to = std::min<int64_t>(end - p.firstRow, rows);
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
      if (dots.matrix != nullptr && tb > 0 && a1 > a0 &&
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
  const TileDot tile = dots.forType(w.type);
  size_t stride;
  const uint8_t* act = x.in(activationTypeFor(w.type), pool, &stride);
  const int64_t rows = int64_t(w.rows), cols = x.cols();
  // matmul()'s split and tiles for one product and one token (the matrix units take batches of 16 only).
  pool.run([&](int thread) {
    int64_t begin, end;
    ThreadPool::split(rows, thread, pool.size(), &begin, &end);
    vectorTiles(tile, w, act, stride, cols, begin, end, 0, 1,
                [&](int64_t r, int n, int64_t, int, const float* part) { visit(thread, r, n, part, kTileTokens); });
  });
}

}  // namespace md
