// attention_counts.cpp
#include "attention_counts.h"

#include <cmath>
#include <cstring>

#include "count_dispatch.h"
#include "md_transformer.h"

namespace md::counters {

AttentionCounts countAttention(Device& device, const AttentionShape& s) {
  const uint32_t kvDim = s.kvHeads * s.headDim;
  // kv_length counts the token's own position: the table stores its K and V first.
  const uint64_t kvValues = uint64_t(s.kvLength) * kvDim;
  auto q = device.newBuffer(size_t(s.heads) * s.headDim * 4);
  auto keys = device.newBuffer(kvValues * 2);
  auto values = device.newBuffer(kvValues * 2);
  // Small values (float16 bit patterns of about 0.01): finite scores.
  std::memset(keys->contents(), 0x20, kvValues * 2);
  std::memset(values->contents(), 0x20, kvValues * 2);
  auto* qs = static_cast<float*>(q->contents());
  for (uint32_t i = 0; i < s.heads * s.headDim; ++i) qs[i] = float(i % 5) * 0.25f;
  const uint32_t context = s.kvLength;
  auto out = device.newBuffer(size_t(s.heads) * s.headDim * 4);
  auto partials = device.newBuffer(size_t(s.heads) * (MD_ATTENTION_PARTIAL_FLOATS(s.headDim)) * 4);
  md_attention_params p{};
  p.heads = s.heads;
  p.kv_heads = s.kvHeads;
  p.head_dim = s.headDim;
  p.kv_length = s.kvLength;
  p.context = context;
  p.scale = float(1.0 / std::sqrt(double(s.headDim)));
  p.count = 1;
  p.splits = 1;
  // Bound as the table binds them (table_recorder.cpp): a threadgroup of 128 threads per KV head.
  AttentionCounts result;
  result.all = countDispatch(device, "md_attention_f16",
                             {{1, keys.get()}, {2, values.get()}, {0, q.get()}, {4, out.get()}, {5, partials.get()}}, 3,
                             &p, sizeof p, s.kvHeads, 128);
  result.keys = result.all.buffers.at(0);
  result.values = result.all.buffers.at(1);
  result.kvBytes = 2 * kvValues * 2;
  return result;
}

}  // namespace md::counters
