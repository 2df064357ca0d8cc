// table_recorder.h: a forward graph as the Metal kernel launches of a
// dispatch table, each with the kernel's own params struct
// (metal/md_transformer.h) filled here, the one place that knows both.
// The recorder knows kernel names, bindings and grids, not the Metal API:
// the addon hands the launches to JavaScript, which binds the named
// buffers and builds the table (lib/models/gguf-forward-table.ts).
//
// Which kernels: one token (a decode step) and verification rows take the
// matrix-vector kernels, up to three matrices of one type per dispatch,
// the batch form for several rows (each row the bits of a one-token
// step), gate + up + SwiGLU fused into one; a prefill batch takes the
// matrix-matrix kernels. Attention is split over `attentionSplits`
// threadgroups per (token, head) with a merge after. A mixture of experts
// (metal/md_transformer.h's md_moe_params) takes the router's kernel, the
// choice per token, the indexed kernels on the chosen experts (a prefill's
// pairs grouped by expert first) and the weighted sum.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "forward_graph.h"

namespace md {

// Which logits a table leaves: none (prefill), the last token's, or every
// token's (speculative verification: rows of `rowLogits`).
enum class LogitRows : uint8_t { None, Last, Every };

struct RecordOptions {
  uint32_t count = 1;  // tokens the table evaluates, from the position its run starts at
  LogitRows logits = LogitRows::Last;
  // FlashSampling: stop before the LM head; the caller appends the fused
  // head-and-pick (RecordedForward::headTensor over `normed`).
  bool headPick = false;
  uint32_t contextSize = 0;
  uint32_t attentionSplits = 1;
  TensorType cacheType = TensorType::F16;
  // A batched decode step: each of the `count` rows is the next token of a
  // different sequence (logits Every). The ops on a sequence's own state
  // (its token, RoPE at its position, its KV cache and the attention over
  // it) are one command per row, marked with the row
  // (RecordedCommand::sequenceRow); the projections take the rows as a
  // batch, each row with a one-token step's bits.
  bool sequenceRows = false;
};

// A binding of a named buffer at `index`: an activation (activationName),
// "tokens", "logits", "rowLogits", "partials", "keys.<layer>",
// "values.<layer>", or "tensor:<GGUF name>" (offset from the tensor's start).
struct BufferBinding {
  uint32_t index = 0;
  std::string buffer;
  uint64_t offset = 0;
};

struct RecordedCommand {
  std::string kernel, label;
  std::vector<BufferBinding> buffers;
  uint32_t paramsIndex = 0;
  std::vector<uint8_t> params;  // the kernel's params struct, as its bytes
  uint32_t threadgroups = 1, threadsPerThreadgroup = 1;
  // How a chain moves the command to its step's position (dispatch_table.h):
  // "" none, "position" / "kvLength" (patchFields: byte offsets in params),
  // "tokenOffset" (patchBuffer: the binding index whose offset moves).
  std::string patchRule;
  std::vector<uint32_t> patchFields;
  uint32_t patchBuffer = 0;
  // Where a weight starts in its 128-byte memory line is known only when
  // the tensor is bound: for each (params byte, binding index), the binder
  // writes that binding's offset mod 128 into that byte (the matrix-vector
  // kernels' line_phases).
  std::vector<std::pair<uint32_t, uint32_t>> linePhases;
  // With RecordOptions::sequenceRows: the row this command serves, or -1
  // for a command of the whole batch. The binder binds "tokens", "keys.<l>"
  // and "values.<l>" to that row's sequence's buffers, and moves the patch
  // to that sequence's position.
  int32_t sequenceRow = -1;
};

struct RecordedForward {
  std::vector<RecordedCommand> commands;
  std::string headTensor;  // with headPick: the LM head's matrix, over the rows of "normed"
};

// Throws std::invalid_argument naming the option that is out of range.
RecordedForward recordForward(const ForwardGraph& graph, const ModelConfig& config, const RecordOptions& options);

// Every buffer the tables of a sequence bind besides the weights, and its
// bytes: batches of up to `maxBatch` tokens over `contextSize` positions.
std::vector<std::pair<std::string, uint64_t>> forwardBuffers(const ModelConfig& config, uint32_t maxBatch,
                                                             uint32_t contextSize, uint32_t attentionSplits,
                                                             TensorType cacheType);

}  // namespace md
