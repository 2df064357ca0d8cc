// matmul.h: out = W x for a batch of activation rows, on a thread pool.
// The rows are converted once per weight type to the type the dot
// products read (Q8_0, Q8_K, F16...), then each thread takes a contiguous
// range of weight rows and runs it against every activation row, so a
// block of weights is read from memory once per batch, not once per token.
#pragma once
#include <array>
#include <functional>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "../quant/dot.h"
#include "../thread_pool.h"
#include "weights.h"

namespace md {

// An activation batch (rows x cols float32) and its conversions, made on
// first use by each weight type and reused by the next weight of the same
// partner type (Q, K and V read one conversion).
class ActivationRows {
 public:
  void reset(const float* source, int64_t rows, int64_t cols);
  // The rows in `type`, converted in parallel on `pool` if not yet.
  const uint8_t* in(TensorType type, ThreadPool& pool, size_t* rowBytes);
  // The rows in Q8_0, each followed by its blocks' sums of quants (int16,
  // one per block): what the repacked Q4_0 and Q8_0 tiles read
  // (repack.h), which take their quants' offset off through them.
  const uint8_t* inQ8_0WithSums(ThreadPool& pool, size_t* rowBytes);
  // The rows in Q8_0, in quads of tokens interleaved interleaveBytes at a
  // time (repack.h's toActivationQuad): what the NEON tables' repacked
  // Q4_0 and Q8_0 tiles read. *rowBytes is a Q8_0 row's bytes: the quad of
  // tokens t..t+3 starts t rows' bytes in.
  const uint8_t* inQ8_0Quads(ThreadPool& pool, int interleaveBytes, size_t* rowBytes);
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  // The rows as float32, rows() x cols() (what a BLAS library reads).
  const float* floats() const { return source_; }

 private:
  struct Slot {
    TensorType type;
    bool valid = false;
    size_t rowBytes = 0;
    int interleaveBytes = 0;  // the quads' (inQ8_0Quads)
    std::vector<uint8_t> bytes;
  };
  const uint8_t* convert(Slot& slot, TensorType type, bool sums, ThreadPool& pool, size_t* rowBytes);

  const float* source_ = nullptr;
  int64_t rows_ = 0, cols_ = 0;
  // The six activation types, then Q8_0 with its sums, then Q8_0 in quads.
  std::array<Slot, 8> slots_{};
};

// One product of a batch: out[r * w.rows + i] = dot(W row i, x row r)
// (+ bias[i]) for every activation row r.
struct MatmulJob {
  const TensorView* weights;
  float* out;
  const TensorView* bias = nullptr;
};

// Several products of the same activations (Q, K and V; gate and up) in one
// pass of the pool: the rows of all of them are split across the threads
// as one range, so the threads meet once, not once per matrix. A product
// the table's BLAS library takes (DotTable::floatMatrix) runs on its own,
// before the others.
void matmul(ThreadPool& pool, const DotTable& dots, const MatmulJob* jobs, size_t count, ActivationRows& x);
inline void matmul(ThreadPool& pool, const DotTable& dots, std::initializer_list<MatmulJob> jobs, ActivationRows& x) {
  matmul(pool, dots, jobs.begin(), jobs.size(), x);
}

// W x for one activation row without an output row: each thread hands its
// tiles to visit(thread, firstRow, n, values, stride) (row firstRow + i is
// values[i * stride]), rows in increasing order per thread, threads over
// consecutive ranges; every value has the bits matmul() stores. The fused
// LM head (FlashSampling) picks its token from them.
using MatvecVisit = std::function<void(int thread, int64_t firstRow, int n, const float* values, size_t stride)>;
void matvecTiles(ThreadPool& pool, const DotTable& dots, const TensorView& w, ActivationRows& x,
                 const MatvecVisit& visit);

inline void matmul(ThreadPool& pool, const DotTable& dots, const TensorView& w, ActivationRows& x, float* out,
                   const TensorView* bias = nullptr) {
  matmul(pool, dots, {MatmulJob{&w, out, bias}}, x);
}

}  // namespace md
