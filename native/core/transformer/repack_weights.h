// repack_weights.h: a model's matrices rearranged for the CPU's tiles
// (quant/repack.h) when the dot table has tiles for the layout: the
// matrices that only the tiles read (the projections and the LM head, not
// the embedding table whose rows are looked up, nor a mixture of experts'
// stacked experts), copied into memory of their own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "../quant/dot.h"
#include "../thread_pool.h"
#include "weights.h"

namespace md {

// Whether `dots` repacks: it has repacked tiles for some type (the AMX
// table has none for the types its matrix units take, whose batches read
// the rows as the file has them and are faster still).
bool repacksFor(const DotTable& dots);

// Repacks the matrices of `weights` the tiles alone read, on `pool`, and
// copies the small tensors (norms, biases: 1 MiB or less) out of the file
// first, so that nothing reads near the matrices' dropped pages after;
// `released(p, bytes)` gets each source's bytes, which nothing reads after
// (the caller may drop their pages). Returns the bytes repacked.
uint64_t repackWeights(ModelWeights& weights, const DotTable& dots, ThreadPool& pool,
                       const std::function<void(const uint8_t*, size_t)>& released);

}  // namespace md
