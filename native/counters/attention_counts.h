// attention_counts.h: the decode attention kernel (md_attention_f16, one
// token, one split) counted on the emulator at a model's head shape: how
// many times the KV bytes of a layer are fetched per token, and how many
// lines its K and V loads touch.
#pragma once
#include <cstdint>

#include "access_recorder.h"
#include "device.h"

namespace md::counters {

struct AttentionShape {
  uint32_t heads, kvHeads, headDim, kvLength;
};

struct AttentionCounts {
  AccessCounts all;
  BufferCounts keys, values;
  uint64_t kvBytes = 0;  // K and V of the kvLength positions (F16, the token's own included): what it must read
};

AttentionCounts countAttention(Device& device, const AttentionShape& shape);

}  // namespace md::counters
