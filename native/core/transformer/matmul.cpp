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
        for (int64_t r = begin; r < end; ++r) quantizeActivations(type, source + r * cols, dst + size_t(r) * stride, cols);
      });
    }
    slot.valid = true;
  }
  *rowBytes = slot.rowBytes;
  return slot.bytes.data();
}

void matmul(ThreadPool& pool, const DotTable& dots, const TensorView& w, ActivationRows& x, float* out,
            const TensorView* bias) {
  if (uint64_t(x.cols()) != w.cols) throw std::logic_error("matmul: activation width differs from the weights'");
  const TileDot tile = dots.forType(w.type);
  size_t stride;
  const uint8_t* act = x.in(activationTypeFor(w.type), pool, &stride);
  const int64_t rows = int64_t(w.rows), batch = x.rows(), cols = x.cols();
  const float* b = bias != nullptr && bias->present() ? reinterpret_cast<const float*>(bias->data) : nullptr;
  pool.run([&](int thread) {
    int64_t begin, end;
    ThreadPool::split(rows, thread, pool.size(), &begin, &end);
    float part[kTileRows * kTileTokens];
    for (int64_t r0 = begin; r0 < end; r0 += kRowBlock) {
      const int64_t r1 = std::min(end, r0 + kRowBlock);
      for (int64_t t0 = 0; t0 < batch; t0 += kTileTokens) {
        const int tokens = int(std::min<int64_t>(kTileTokens, batch - t0));
        for (int64_t r = r0; r < r1; r += kTileRows) {
          const int count = int(std::min<int64_t>(kTileRows, r1 - r));
          tile(w.row(uint64_t(r)), w.rowBytes, count, act + size_t(t0) * stride, stride, tokens, cols, part, kTileTokens);
          for (int i = 0; i < count; ++i)
            for (int t = 0; t < tokens; ++t)
              out[(t0 + t) * rows + r + i] = part[i * kTileTokens + t] + (b ? b[r + i] : 0.f);
        }
      }
    }
  });
}

}  // namespace md
