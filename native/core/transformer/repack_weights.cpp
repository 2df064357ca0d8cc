// repack_weights.cpp
#include "repack_weights.h"

#include <cstring>
#include <vector>

#include "../quant/repack.h"

namespace md {
namespace {

// Tensors this small are copied out of the file where others are repacked.
constexpr size_t kSmallTensorBytes = size_t(1) << 20;

// The tensors only the tiles read, in groups of 8 rows: projections whose
// parts start and end on a group (a fused tensor's), and the LM head.
std::vector<bool> tileOnly(const ForwardGraph& g) {
  std::vector<bool> tiles(g.tensors.size(), false), other(g.tensors.size(), false);
  auto mark = [&](std::vector<bool>& set, TensorRef r) {
    if (r.present()) set[size_t(r.index)] = true;
  };
  for (const GraphOp& op : g.ops) {
    if (op.kind == OpKind::Project) {
      for (const Projection& p : op.projections) {
        const bool grouped = p.rowOffset % kRepackRows == 0 && p.rows % kRepackRows == 0;
        mark(grouped ? tiles : other, p.weight);
        mark(other, p.bias);
      }
    } else if (op.kind == OpKind::LmHead) {
      mark(tiles, op.weight);
    } else {
      mark(other, op.weight);
      for (const Projection& p : op.projections) mark(other, p.weight);
    }
  }
  for (size_t i = 0; i < tiles.size(); ++i) tiles[i] = tiles[i] && !other[i];
  return tiles;
}

}  // namespace

bool repacksFor(const DotTable& dots) {
  const RepackLayouts layouts = repackLayouts();
  for (const RepackLayout* l = layouts.begin; l != layouts.end; ++l)
    if (dots.repackedFor(l->type) != nullptr) return true;
  return false;
}

uint64_t repackWeights(ModelWeights& weights, const DotTable& dots, ThreadPool& pool,
                       const std::function<void(const uint8_t*, size_t)>& released) {
  if (!repacksFor(dots)) return 0;
  const std::vector<bool> tiles = tileOnly(weights.graph);
  auto repacks = [&](size_t i) {
    const TensorView& v = weights.tensors[i];
    const RepackLayout* layout = repackLayoutFor(v.type);
    return tiles[i] && v.present() && !v.repacked() && layout != nullptr && dots.repackedFor(v.type) != nullptr &&
           canRepack(*layout, v.rows, v.cols);
  };
  uint64_t total = 0;
  // The small tensors (norms, biases) share pages, and the kernel's folios
  // of up to 2 MiB, with the matrices around them. Read in the file after
  // those matrices' pages were let go, a norm mapped its folio back in
  // (Qwen3-0.6B: 30 MiB at the first token). So they are copied first,
  // and their pages let go with the matrices'. The total counts the
  // repacked matrices alone: these copies are a few hundred KiB.
  std::vector<std::pair<const uint8_t*, size_t>> smallSources;
  bool any = false;
  for (size_t i = 0; i < weights.tensors.size(); ++i) any = any || repacks(i);
  for (size_t i = 0; any && i < weights.tensors.size(); ++i) {
    TensorView& v = weights.tensors[i];
    const size_t bytes = size_t(v.rows) * v.rowBytes;
    if (!v.present() || v.repacked() || repacks(i) || bytes > kSmallTensorBytes) continue;
    uint8_t* copy = weights.repacked.emplace_back(new uint8_t[bytes]).get();
    std::memcpy(copy, v.data, bytes);
    smallSources.emplace_back(v.data, bytes);
    v.data = copy;
  }
  for (size_t i = 0; i < weights.tensors.size(); ++i) {
    if (!repacks(i)) continue;
    TensorView& v = weights.tensors[i];
    const RepackLayout* layout = repackLayoutFor(v.type);
    const uint64_t groups = v.rows / kRepackRows;
    const size_t groupBytes = repackGroupBytes(*layout, v.cols);
    // Not zeroed first (as a vector's would be, on this thread): each pool
    // thread's first write takes its own pages.
    const size_t size = size_t(groups) * groupBytes;
    uint8_t* bytes = weights.repacked.emplace_back(new uint8_t[size]).get();
    const uint8_t* source = v.data;
    pool.run([&](int t) {
      int64_t begin, end;
      ThreadPool::split(int64_t(groups), t, pool.size(), &begin, &end);
      if (end > begin)
        repackGroups(*layout, dots.repackForm, source, v.cols, uint64_t(begin), uint64_t(end - begin),
                     bytes + size_t(begin) * groupBytes);
    });
    v.data = bytes;
    v.groupRows = kRepackRows;
    v.groupBytes = groupBytes;
    released(source, size_t(v.rows) * v.rowBytes);
    total += size;
  }
  for (const auto& [source, bytes] : smallSources) released(source, bytes);
  return total;
}

}  // namespace md
