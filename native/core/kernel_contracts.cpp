// kernel_contracts.cpp: the contracts of the built-in kernels, one function
// each, read from the kernels' own parameter structs (metal/md_sampling.h).
#include "kernel_contracts.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

#include "md_sampling.h"
#include "md_blocks.h"
#include "md_transformer.h"

namespace md {
namespace {

// One command as a contract sees it.
class Contract {
 public:
  Contract(const DispatchCmd& cmd, const uint8_t* params, uint64_t movedSlot)
      : cmd_(cmd), params_(params), movedSlot_(movedSlot) {}

  // The kernel's params struct T at [[buffer(index)]]; false (with the
  // problem kept) if the command does not pass one.
  template <class T>
  bool params(uint32_t index, const char* type, T& out) {
    if (cmd_.paramsSize < sizeof(T) || cmd_.paramsIndex != index) {
      fail(std::string("takes a ") + std::to_string(sizeof(T)) + "-byte " + type + " at [[buffer(" +
           std::to_string(index) + ")]], but the command passes " + std::to_string(cmd_.paramsSize) +
           " bytes of params at [[buffer(" + std::to_string(cmd_.paramsIndex) + ")]]");
      return false;
    }
    std::memcpy(&out, params_, sizeof(T));
    return true;
  }

  // [[buffer(index)]] must be bound and hold `bytes` from where it points.
  void needs(uint32_t index, uint64_t bytes, const char* what) {
    if (!problem_.empty()) return;
    const BufferBinding* b = findBinding(cmd_, index);
    if (!b) return fail("buffer " + std::to_string(index) + " (" + what + ") is not bound");
    const bool moved = movesBuffer(cmd_.patch.rule) && cmd_.patch.buffer == index;
    const uint64_t from = b->offset + (moved ? 4 * movedSlot_ : 0);
    const uint64_t length = b->buffer->length();
    if (from > length || bytes > length - from)
      fail("buffer " + std::to_string(index) + " (" + what + ") needs " + std::to_string(bytes) + " bytes from byte " +
           std::to_string(from) + ", but the buffer has " + std::to_string(length));
  }

  void check(bool ok, const std::string& problem) {
    if (!ok) fail(problem);
  }

  // `field` (a matrix's line phase) must be where [[buffer(index)]] starts
  // in its 128-byte line: its offset mod 128 (buffers are page-aligned).
  // A wrong phase gives the right numbers with every line load split in
  // two, which only a Mac's clock would show; this check shows it here.
  void linePhase(uint32_t index, uint32_t phase, const std::string& field) {
    const BufferBinding* b = findBinding(cmd_, index);
    if (!problem_.empty() || !b) return;
    if (phase != b->offset % MD_LINE_BYTES)
      fail(field + " is " + std::to_string(phase) + ", but buffer " + std::to_string(index) + " is bound at offset " +
           std::to_string(b->offset) + ", " + std::to_string(b->offset % MD_LINE_BYTES) + " into its 128-byte line");
    else if (phase % 4 != 0)
      fail("buffer " + std::to_string(index) + " is bound at offset " + std::to_string(b->offset) +
           ", not a multiple of 4 (the kernel loads it as 4-byte words)");
  }
  uint64_t groups() const { return cmd_.threadgroups; }
  uint32_t threads() const { return cmd_.threadsPerThreadgroup; }
  const std::string& problem() const { return problem_; }

 private:
  void fail(const std::string& problem) {
    if (problem_.empty()) problem_ = cmd_.pipeline->name() + ": " + problem;
  }

  const DispatchCmd& cmd_;
  const uint8_t* params_;
  uint64_t movedSlot_;
  std::string problem_;
};

// A token mask (MD_FLAG_TOKEN_MASK): ceil(vocab_size / 32) words per row.
void mask(Contract& c, unsigned index, uint32_t flags, uint32_t vocab) {
  if (flags & MD_FLAG_TOKEN_MASK)
    c.needs(index, 4 * uint64_t(md_mask_words(vocab)) * c.groups(), "mask: ceil(vocab_size / 32) words per row");
}

// argmax.metal: one row of vocab_size logits per threadgroup, its token to tokens[group].
void argmax(Contract& c, uint64_t logitBytes) {
  md_argmax_params p;
  if (!c.params(1, "md_argmax_params", p)) return;
  c.check(p.vocab_size >= 1, "vocab_size must be at least 1");
  c.check((p.flags & ~MD_FLAG_TOKEN_MASK) == 0, "flags: only MD_FLAG_TOKEN_MASK");
  c.needs(0, logitBytes * p.vocab_size * c.groups(), "logits: vocab_size per threadgroup");
  c.needs(2, 4 * c.groups(), "tokens: one per threadgroup");
  mask(c, 3, p.flags, p.vocab_size);
}

// argmax.metal's one row over many threadgroups: the slices on any
// number, one partial each; the pick on one.
void wideArgmax(Contract& c, uint64_t logitBytes, bool slices) {
  md_argmax_params p;
  if (!c.params(1, "md_argmax_params", p)) return;
  c.check(p.vocab_size >= 1, "vocab_size must be at least 1");
  c.check((p.flags & ~MD_FLAG_TOKEN_MASK) == 0, "flags: only MD_FLAG_TOKEN_MASK");
  c.check(slices || c.groups() == 1, "runs as one threadgroup: it reduces what the slices left");
  c.needs(0, logitBytes * p.vocab_size, "logits: vocab_size");
  c.needs(2, 4, "tokens: one");
  if (p.flags & MD_FLAG_TOKEN_MASK)
    c.needs(3, 4 * uint64_t(md_mask_words(p.vocab_size)), "mask: ceil(vocab_size / 32) words");
  c.needs(4, sizeof(md_wide_partial) * (slices ? c.groups() : 1),
          "partials: one md_wide_partial per threadgroup of the slices");
  c.needs(5, sizeof(md_wide_state), "state: one md_wide_state");
}

// sampling.metal: row r = group at position + r, with history_count + r
// tokens of history; the mask, with MD_FLAG_TOKEN_MASK, at `maskIndex`.
void sampleBuffers(Contract& c, unsigned maskIndex) {
  md_sampling_params p;
  if (!c.params(1, "md_sampling_params", p)) return;
  c.check(p.vocab_size >= 1, "vocab_size must be at least 1");
  c.check((p.flags & ~MD_KNOWN_FLAGS) == 0, "flags: unknown bits");
  mask(c, maskIndex, p.flags, p.vocab_size);
  const uint64_t rows = c.groups(), vocab = p.vocab_size;
  c.needs(0, 2 * vocab * rows, "logits: vocab_size halves per row");
  const uint64_t history = uint64_t(p.history_count) + rows - 1;
  if (history > 0) c.needs(2, 4 * history, "history: history_count + rows - 1 tokens");
  if (p.bias_count > 0) c.needs(3, sizeof(md_bias_entry) * uint64_t(p.bias_count), "bias: bias_count entries");
  c.needs(4, 2 * vocab * rows, "edited: vocab_size halves per row");
  c.needs(5, 4 * uint64_t(MD_HALF_KEY_BINS) * rows, "histogram: one bin per float16 key per row");
  c.needs(6, 4 * rows, "tokens: one per row");
  c.needs(7, 4 * vocab * rows, "marks: one uint per token per row");
}

void sample(Contract& c) { sampleBuffers(c, 8); }

// md_draft_probability_f16: md_sample_f16's buffers, with the row's draft
// token read at 6, its probability written at 8 and the mask at 9.
void draftProbability(Contract& c) {
  sampleBuffers(c, 9);
  c.needs(8, 4 * c.groups(), "probabilities: one float per row");
}

// sampling_wide.metal: one row; the row passes (prepare, count, noise) on
// any number of threadgroups, one partial each; the steps between on one.
void wideSample(Contract& c, bool rowPass) {
  md_sampling_params p;
  if (!c.params(1, "md_sampling_params", p)) return;
  c.check(p.vocab_size >= 1, "vocab_size must be at least 1");
  c.check((p.flags & ~MD_KNOWN_FLAGS) == 0, "flags: unknown bits");
  c.check(rowPass || c.groups() == 1, "runs as one threadgroup: it reduces what the row passes left");
  mask(c, 8, p.flags, p.vocab_size);
  const uint64_t vocab = p.vocab_size;
  c.needs(0, 2 * vocab, "logits: vocab_size halves");
  if (p.history_count > 0) c.needs(2, 4 * uint64_t(p.history_count), "history: history_count tokens");
  if (p.bias_count > 0) c.needs(3, sizeof(md_bias_entry) * uint64_t(p.bias_count), "bias: bias_count entries");
  c.needs(4, 2 * vocab, "edited: vocab_size halves");
  c.needs(5, 4 * uint64_t(MD_HALF_KEY_BINS), "histogram: one bin per float16 key");
  c.needs(6, 4, "tokens: one");
  c.needs(7, 4 * vocab, "marks: one uint per token");
  c.needs(9, sizeof(md_wide_partial) * (rowPass ? c.groups() : 1),
          "partials: one md_wide_partial per threadgroup of the row passes");
  c.needs(10, sizeof(md_wide_state), "state: one md_wide_state");
}

// bigram.metal
void embed(Contract& c) {
  md_bigram_params p;
  if (!c.params(2, "md_bigram_params", p)) return;
  c.needs(0, 4, "token");
  c.needs(1, 2 * uint64_t(p.vocab_size) * p.dim, "embedding: vocab_size x dim halves");
  c.needs(3, 2 * uint64_t(p.dim), "hidden: dim halves");
}
void lmHead(Contract& c) {
  md_bigram_params p;
  if (!c.params(2, "md_bigram_params", p)) return;
  c.needs(0, 2 * uint64_t(p.vocab_size) * p.dim, "head: vocab_size x dim halves");
  c.needs(1, 2 * uint64_t(p.dim), "hidden: dim halves");
  c.needs(3, 2 * uint64_t(p.vocab_size), "logits: vocab_size halves");
}

// probes.metal
void fpContractProbe(Contract& c) {
  c.needs(0, 12, "inputs: three floats");
  c.needs(1, 4, "output: one float");
}
void simdLayoutProbe(Contract& c) { c.needs(0, 4 * 1024, "output: one uint per thread of up to 1024"); }
void noiseCells(Contract& c) {
  md_probe_range r;
  if (!c.params(0, "md_probe_range", r)) return;
  c.needs(1, 4 * uint64_t(r.count), "output: count floats");
}
void expValues(Contract& c) {
  md_probe_range r;
  if (!c.params(0, "md_probe_range", r)) return;
  c.needs(1, 4 * uint64_t(r.count), "input: count floats");
  c.needs(2, 4 * uint64_t(r.count), "output: count floats");
}

// transformer_rows.metal
void rmsNorm(Contract& c) {
  md_rows_params p;
  if (!c.params(2, "md_rows_params", p)) return;
  const uint64_t values = uint64_t(p.n) * p.rows;
  c.needs(0, 4 * values, "x: rows x n floats");
  c.needs(1, 4 * uint64_t(p.n), "weight: n floats");
  c.needs(3, 4 * values, "out: rows x n floats");
}
// The element-wise kernels: x (rows x n floats) at buffer 0, and at buffer
// 1 rows x n values of `bytes` each, described by `what`.
void elementwise(Contract& c, uint64_t bytes, const char* what) {
  md_rows_params p;
  if (!c.params(2, "md_rows_params", p)) return;
  const uint64_t values = uint64_t(p.n) * p.rows;
  c.needs(0, 4 * values, "x: rows x n floats");
  c.needs(1, bytes * values, what);
}
// md_add_f32: y is rows x n floats, or one row of n with broadcast.
void add(Contract& c) {
  md_rows_params p;
  if (!c.params(2, "md_rows_params", p)) return;
  const uint64_t values = uint64_t(p.n) * p.rows;
  c.needs(0, 4 * values, "x: rows x n floats");
  if (p.broadcast != 0)
    c.needs(1, 4 * uint64_t(p.n), "y: n floats (broadcast)");
  else
    c.needs(1, 4 * values, "y: rows x n floats");
}

// Every weight type's stage fits the 32 KB of threadgroup memory Metal
// guarantees a threadgroup, with 1 KB to spare for the fused head's
// reduction slots.
#define MD_STAGE_FITS(NAME, suffix, id, values, bytes)                                                   \
  static_assert((MD_MATVEC_MAX_THREADS / 32) * MD_MATVEC_STAGE_WORDS(bytes, values) * 4 <= 32768 - 1024, \
                "the " #suffix " matrix-vector stage does not fit in threadgroup memory");
MD_WEIGHT_TYPES(MD_STAGE_FITS)
#undef MD_STAGE_FITS
// The batch form of the quantized types stages its rows' windows at once.
#define MD_BATCH_STAGE_FITS(NAME, suffix, id, values, bytes)                                                          \
  static_assert(                                                                                                      \
      (values) == 1 || (MD_MATVEC_MAX_THREADS / 32) * MD_MATVEC_BATCH_STAGE_WORDS(bytes, values) * 4 <= 32768 - 1024, \
      "the " #suffix " batch matrix-vector stage does not fit in threadgroup memory");
MD_WEIGHT_TYPES(MD_BATCH_STAGE_FITS)
#undef MD_BATCH_STAGE_FITS

// The matrix-vector kernels' threadgroups (md_matvec_*, the fused head's
// tiles): whole SIMD groups, as many as their threadgroup memory stages.
void matvecThreads(Contract& c) {
  c.check(c.threads() % 32 == 0 && c.threads() <= MD_MATVEC_MAX_THREADS,
          std::to_string(c.threads()) + " threads per threadgroup: expected whole SIMD groups, at most " +
              std::to_string(MD_MATVEC_MAX_THREADS));
}

// matvec.metal: each W_m is rows[m] x (cols / values) blocks of
// `blockBytes`; x and y_m hold `count` tokens' rows (1 to maxCount).
void matvec(Contract& c, uint32_t values, uint64_t blockBytes, uint32_t maxCount) {
  md_matvec_params p;
  if (!c.params(2, "md_matvec_params", p)) return;
  matvecThreads(c);
  c.check(p.count >= 1 && p.count <= maxCount,
          "count " + std::to_string(p.count) + " is not a token count from 1 to " + std::to_string(maxCount));
  c.check(p.cols % values == 0,
          "cols " + std::to_string(p.cols) + " is not a whole number of " + std::to_string(values) + "-value blocks");
  c.check(p.mode <= MD_MATVEC_SWIGLU, "mode must be MD_MATVEC_STORE, MD_MATVEC_ACCUMULATE or MD_MATVEC_SWIGLU");
  c.check(p.mode != MD_MATVEC_SWIGLU || (p.rows[0] == p.rows[1] && p.rows[2] == 0),
          "SwiGLU takes two matrices of the same rows");
  c.needs(1, 4 * uint64_t(p.count) * p.cols, "x: count x cols floats");
  static const uint32_t kWeights[3] = {0, 4, 6}, kOutputs[3] = {3, 5, 7};
  static const char* kWhat[3][2] = {{"w0: rows[0] x cols / values blocks", "y0: count x rows[0] floats"},
                                    {"w1: rows[1] x cols / values blocks", "y1: count x rows[1] floats"},
                                    {"w2: rows[2] x cols / values blocks", "y2: count x rows[2] floats"}};
  for (int m = 0; m < 3; ++m) {
    // Every argument is bound, as Metal wants: a matrix without rows may bind any buffer.
    c.needs(kWeights[m], p.rows[m] ? uint64_t(p.rows[m]) * (p.cols / values) * blockBytes : 1, kWhat[m][0]);
    const bool written = p.mode != MD_MATVEC_SWIGLU || m == 0;
    c.needs(kOutputs[m], written && p.rows[m] ? 4 * uint64_t(p.count) * p.rows[m] : 1, kWhat[m][1]);
    if (p.rows[m])
      c.linePhase(kWeights[m], (p.line_phases >> (8 * m)) & 0xffu, "line_phases byte " + std::to_string(m));
  }
  c.check((p.line_phases >> 24) == 0, "line_phases: only three bytes (one per matrix)");
  // Enough SIMD groups for every row (fewer would leave rows unwritten, silently).
  const uint32_t simdRows = MD_MATVEC_ROWS_FOR(maxCount);
  const uint64_t needed = md_matvec_simd_groups(p, maxCount);
  c.check(c.groups() * (c.threads() / 32) >= needed, std::to_string(c.groups()) + " threadgroups of " +
                                                         std::to_string(c.threads() / 32) +
                                                         " SIMD groups: expected at least " + std::to_string(needed) +
                                                         " SIMD groups of " + std::to_string(simdRows) + " rows");
}

// The stacked experts of the indexed kernels: `experts` matrices of rows x
// (cols / values) blocks, expert_bytes each, from where [[buffer(index)]]
// points; each expert's start a whole number of words (the kernels load
// words from it).
void expertMatrices(Contract& c, uint32_t index, uint32_t experts, uint32_t rows, uint32_t cols, uint32_t values,
                    uint64_t blockBytes, uint32_t expertBytes) {
  c.check(cols % values == 0,
          "cols " + std::to_string(cols) + " is not a whole number of " + std::to_string(values) + "-value blocks");
  c.check(experts >= 1, "experts must be at least 1");
  const uint64_t bytes = uint64_t(rows) * (cols / values) * blockBytes;
  c.check(expertBytes == bytes, "expert_bytes is " + std::to_string(expertBytes) +
                                    ", but one expert's rows x cols is " + std::to_string(bytes) + " bytes");
  c.check(expertBytes % 4 == 0, "expert_bytes " + std::to_string(expertBytes) +
                                    " is not a multiple of 4 (each expert's matrix is loaded as 4-byte words)");
  c.needs(index, uint64_t(experts) * expertBytes, "w: experts x expert_bytes");
}

// matvec.metal's indexed form: one output row per pair, x a row per token
// (pairs / used of them) or per pair.
void matvecId(Contract& c, uint32_t values, uint64_t blockBytes) {
  md_matvec_id_params p;
  if (!c.params(2, "md_matvec_id_params", p)) return;
  matvecThreads(c);
  c.check(p.mode == MD_MATVEC_STORE || p.mode == MD_MATVEC_SWIGLU, "mode must be MD_MATVEC_STORE or MD_MATVEC_SWIGLU");
  c.check(p.used >= 1 && p.used <= p.experts && p.pairs % p.used == 0,
          "pairs " + std::to_string(p.pairs) + " is not a whole number of tokens of used " + std::to_string(p.used) +
              " of " + std::to_string(p.experts) + " experts");
  expertMatrices(c, 0, p.experts, p.rows, p.cols, values, blockBytes, p.expert_bytes);
  c.linePhase(0, p.line_phases & 0xffu, "line_phases byte 0");
  if (p.mode == MD_MATVEC_SWIGLU) {
    expertMatrices(c, 4, p.experts, p.rows, p.cols, values, blockBytes, p.expert_bytes);
    c.linePhase(4, (p.line_phases >> 8) & 0xffu, "line_phases byte 1");
  } else {
    c.needs(4, 1, "w1: any buffer without SwiGLU");
  }
  c.check((p.line_phases >> 16) == 0, "line_phases: only two bytes (w0 and w1)");
  const uint64_t xRows = p.x_per_pair != 0 ? p.pairs : p.pairs / std::max<uint32_t>(p.used, 1);
  c.needs(1, 4 * xRows * p.cols, p.x_per_pair != 0 ? "x: pairs x cols floats" : "x: pairs / used x cols floats");
  c.needs(3, 4 * uint64_t(p.pairs) * p.rows, "y: pairs x rows floats");
  c.needs(5, 4 * uint64_t(p.pairs), "ids: one expert per pair");
  const uint64_t needed = uint64_t(p.pairs) * MD_MATVEC_ID_GROUPS(uint64_t(p.rows), c.threads() / 32);
  c.check(c.groups() >= needed, std::to_string(c.groups()) + " threadgroups: expected at least " +
                                    std::to_string(needed) + ", MD_MATVEC_ID_GROUPS(rows, SIMD groups) per pair");
}

// head_sampling.metal: W rows x (cols / values) blocks and x cols floats;
// the tiles on any number of threadgroups (a partial each), the pick on
// one; both bind every buffer.
void headSample(Contract& c, uint32_t values, uint64_t blockBytes, bool tiles) {
  md_head_sampling_params p;
  if (!c.params(2, "md_head_sampling_params", p)) return;
  c.check(p.rows >= 1, "rows must be at least 1");
  c.check(p.cols % values == 0,
          "cols " + std::to_string(p.cols) + " is not a whole number of " + std::to_string(values) + "-value blocks");
  c.check((p.flags & ~(MD_HEAD_HALF | MD_HEAD_BIAS)) == 0, "flags: only MD_HEAD_HALF and MD_HEAD_BIAS");
  c.check((p.flags & MD_HEAD_BIAS) == 0 || (p.flags & MD_HEAD_HALF) != 0,
          "MD_HEAD_BIAS needs MD_HEAD_HALF (the bias is added to float16 logits)");
  c.check(p.temperature == 0.0f || (p.flags & MD_HEAD_HALF) != 0,
          "a temperature needs MD_HEAD_HALF (sampling reads float16 logits)");
  c.check(p.temperature >= 0.0f && p.temperature <= MD_MAX_TEMPERATURE,
          "temperature " + std::to_string(p.temperature) + " is not in [0, MD_MAX_TEMPERATURE]");
  c.check(tiles || c.groups() == 1, "runs as one threadgroup: it reduces what the tiles left");
  c.check(!tiles || c.groups() <= MD_HEAD_MAX_TILES,
          "at most MD_HEAD_MAX_TILES threadgroups (the partials the pick reduces)");
  if (tiles) matvecThreads(c);
  c.needs(0, tiles ? uint64_t(p.rows) * (p.cols / values) * blockBytes : 1, "w: rows x cols / values blocks");
  if (tiles) c.linePhase(0, p.line_phase, "line_phase");
  c.needs(1, tiles ? 4 * uint64_t(p.cols) : 1, "x: cols floats");
  c.needs(3, (p.flags & MD_HEAD_BIAS) && tiles ? 4 * uint64_t(p.rows) : 1, "bias: rows floats");
  c.needs(4, sizeof(md_wide_partial) * (tiles ? c.groups() : 1),
          "partials: one md_wide_partial per threadgroup of the tiles");
  c.needs(5, sizeof(md_wide_state), "state: one md_wide_state");
  if (!tiles) c.needs(6, 4, "tokens: one");
}

// matmul.metal: W as in matvec, X count x cols and Y count x rows floats.
void matmul(Contract& c, uint32_t values, uint64_t blockBytes) {
  md_matmul_params p;
  if (!c.params(2, "md_matmul_params", p)) return;
  c.check(p.cols % values == 0,
          "cols " + std::to_string(p.cols) + " is not a whole number of " + std::to_string(values) + "-value blocks");
  c.needs(0, uint64_t(p.rows) * (p.cols / values) * blockBytes,
          ("w: rows x cols / " + std::to_string(values) + " blocks").c_str());
  c.needs(1, 4 * uint64_t(p.count) * p.cols, "x: count x cols floats");
  c.needs(3, 4 * uint64_t(p.count) * p.rows, "y: count x rows floats");
  // Its loads and tiles are laid out for exactly this many threads.
  c.check(c.threads() == MD_MATMUL_THREADS,
          std::to_string(c.threads()) + " threads per threadgroup: expected " + std::to_string(MD_MATMUL_THREADS));
  const uint64_t tiles = (uint64_t(p.rows) + MD_MATMUL_ROWS - 1) / MD_MATMUL_ROWS *
                         ((uint64_t(p.count) + MD_MATMUL_TOKENS - 1) / MD_MATMUL_TOKENS);
  c.check(c.groups() == tiles, std::to_string(c.groups()) + " threadgroups: expected one per tile of " +
                                   std::to_string(MD_MATMUL_ROWS) + " rows x " + std::to_string(MD_MATMUL_TOKENS) +
                                   " tokens, " + std::to_string(tiles));
}

// matmul.metal's grouped form: each expert's tiles over its pairs.
void matmulId(Contract& c, uint32_t values, uint64_t blockBytes) {
  md_matmul_id_params p;
  if (!c.params(2, "md_matmul_id_params", p)) return;
  c.check(p.used >= 1 && p.used <= p.experts,
          "used " + std::to_string(p.used) + " is not from 1 to experts " + std::to_string(p.experts));
  expertMatrices(c, 0, p.experts, p.rows, p.cols, values, blockBytes, p.expert_bytes);
  const uint64_t pairs = uint64_t(p.count) * p.used;
  c.needs(1, 4 * (p.x_per_pair != 0 ? pairs : p.count) * p.cols,
          p.x_per_pair != 0 ? "x: count x used x cols floats" : "x: count x cols floats");
  c.needs(3, 4 * pairs * p.rows, "y: count x used x rows floats");
  c.needs(4, 4 * uint64_t(p.experts), "counts: one per expert");
  c.needs(5, 4 * uint64_t(p.experts) * p.count, "pairs: count per expert");
  c.check(c.threads() == MD_MATMUL_THREADS,
          std::to_string(c.threads()) + " threads per threadgroup: expected " + std::to_string(MD_MATMUL_THREADS));
  const uint64_t tiles = uint64_t(p.experts) * ((uint64_t(p.rows) + MD_MATMUL_ROWS - 1) / MD_MATMUL_ROWS) *
                         ((uint64_t(p.count) + MD_MATMUL_TOKENS - 1) / MD_MATMUL_TOKENS);
  c.check(c.groups() == tiles, std::to_string(c.groups()) + " threadgroups: expected experts x tiles of " +
                                   std::to_string(MD_MATMUL_ROWS) + " rows x " + std::to_string(MD_MATMUL_TOKENS) +
                                   " tokens, " + std::to_string(tiles));
}

// moe.metal
bool moeShape(Contract& c, md_moe_params& p, uint32_t paramsIndex) {
  if (!c.params(paramsIndex, "md_moe_params", p)) return false;
  c.check(p.experts >= 1 && p.experts <= MD_MOE_MAX_EXPERTS,
          "experts " + std::to_string(p.experts) + " is not from 1 to " + std::to_string(MD_MOE_MAX_EXPERTS));
  c.check(p.used >= 1 && p.used <= p.experts && p.used <= MD_MOE_MAX_USED,
          "used " + std::to_string(p.used) + " is not from 1 to experts and MD_MOE_MAX_USED (" +
              std::to_string(MD_MOE_MAX_USED) + ")");
  return true;
}
void moeRoute(Contract& c) {
  md_moe_params p;
  if (!moeShape(c, p, 1)) return;
  c.check(c.threads() % 32 == 0, std::to_string(c.threads()) + " threads per threadgroup: expected whole SIMD groups");
  c.check(c.groups() * (c.threads() / 32) >= p.count, "one SIMD group per token: too few threadgroups");
  const uint64_t pairs = uint64_t(p.count) * p.used;
  c.needs(0, 4 * uint64_t(p.count) * p.experts, "logits: count x experts floats");
  c.needs(2, 4 * pairs, "ids: count x used");
  c.needs(3, 4 * pairs, "weights: count x used floats");
}
void moeGroup(Contract& c) {
  md_moe_params p;
  if (!moeShape(c, p, 1)) return;
  c.check(c.groups() * c.threads() >= p.experts, "one thread per expert: too few threads");
  c.needs(0, 4 * uint64_t(p.count) * p.used, "ids: count x used");
  c.needs(2, 4 * uint64_t(p.experts), "counts: one per expert");
  c.needs(3, 4 * uint64_t(p.experts) * p.count, "pairs: count per expert");
}
void moeSum(Contract& c) {
  md_moe_params p;
  if (!moeShape(c, p, 2)) return;
  const uint64_t pairs = uint64_t(p.count) * p.used;
  c.needs(0, 4 * pairs * p.dim, "outputs: count x used x dim floats");
  c.needs(1, 4 * pairs, "weights: count x used floats");
  c.needs(3, 4 * uint64_t(p.count) * p.dim, "hidden: count x dim floats");
}

// embedding.metal: a vocab_size x dim table of `values`-value blocks of `blockBytes`.
void embedRows(Contract& c, uint32_t values, uint64_t blockBytes) {
  md_embed_params p;
  if (!c.params(2, "md_embed_params", p)) return;
  c.check(p.dim % values == 0,
          "dim " + std::to_string(p.dim) + " is not a whole number of " + std::to_string(values) + "-value blocks");
  c.needs(0, 4 * uint64_t(p.count), "tokens: count");
  c.needs(1, uint64_t(p.vocab_size) * (p.dim / values) * blockBytes,
          ("table: vocab_size x dim / " + std::to_string(values) + " blocks").c_str());
  c.needs(3, 4 * uint64_t(p.count) * p.dim, "out: count x dim floats");
}

// attention.metal
void rope(Contract& c) {
  md_rope_params p;
  if (!c.params(2, "md_rope_params", p)) return;
  c.check(p.rope_dims <= p.head_dim && p.rope_dims % 2 == 0, "rope_dims must be even and at most head_dim");
  c.check(p.mode == 0 || p.mode == 2, "mode must be 0 (adjacent pairs) or 2 (halves)");
  c.needs(0, 4 * uint64_t(p.count) * p.heads * p.head_dim, "x: count x heads x head_dim floats");
  c.needs(3, p.k_heads != 0 ? 4 * uint64_t(p.count) * p.k_heads * p.head_dim : 4,
          "k: count x k_heads x head_dim floats (any buffer without K heads)");
  c.needs(1, p.has_factors != 0 ? 4 * uint64_t(p.rope_dims / 2) : 4,
          "factors: rope_dims / 2 floats (any buffer without factors)");
}
// A KV cache's type: `values` values take `bytes` bytes (F16 1 and 2, F32 1
// and 4, Q8_0 a block of 32 in 34), and the word for its rows.
struct CacheType {
  uint32_t values;
  uint64_t bytes;
  const char* rows;
};
constexpr CacheType kCacheF16{1, 2, "halves"}, kCacheF32{1, 4, "floats"},
    kCacheQ8_0{MD_QK, sizeof(md_block_q8_0), "Q8_0 values"};

void kvStore(Contract& c, CacheType t) {
  md_kv_store_params p;
  if (!c.params(2, "md_kv_store_params", p)) return;
  c.check(p.kv_dim % t.values == 0, "kv_dim " + std::to_string(p.kv_dim) + " is not a whole number of " +
                                        std::to_string(t.values) + "-value blocks");
  const uint64_t rows = uint64_t(p.position) + p.count;
  c.needs(0, 4 * uint64_t(p.count) * p.kv_dim, "k: count x kv_dim floats");
  c.needs(1, 4 * uint64_t(p.count) * p.kv_dim, "v: count x kv_dim floats");
  c.needs(3, rows * p.kv_dim / t.values * t.bytes,
          (std::string("keys: position + count rows of kv_dim ") + t.rows).c_str());
  c.needs(4, rows * p.kv_dim / t.values * t.bytes,
          (std::string("values: position + count rows of kv_dim ") + t.rows).c_str());
}
// Shared by the attention kernel and its merge: the shape and the output.
bool attentionShape(Contract& c, md_attention_params& p, uint32_t paramsIndex, uint32_t outIndex) {
  if (!c.params(paramsIndex, "md_attention_params", p)) return false;
  c.check(p.kv_heads > 0 && p.heads % p.kv_heads == 0, "heads must be a multiple of kv_heads");
  c.check(p.splits >= 1, "splits must be at least 1");
  c.check(uint64_t(p.kv_length) + p.count <= uint64_t(p.context) + 1,
          "kv_length " + std::to_string(p.kv_length) + " + count " + std::to_string(p.count) +
              " - 1 is past the context " + std::to_string(p.context));
  c.needs(outIndex, 4 * uint64_t(p.count) * p.heads * p.head_dim, "out: count x heads x head_dim floats");
  return true;
}
uint64_t attentionPartialBytes(const md_attention_params& p) {
  return 4 * uint64_t(p.count) * p.heads * p.splits * MD_ATTENTION_PARTIAL_FLOATS(p.head_dim);
}
void attention(Contract& c, CacheType t) {
  md_attention_params p;
  if (!attentionShape(c, p, 3, 4)) return;
  c.check(p.head_dim % t.values == 0, "head_dim " + std::to_string(p.head_dim) + " is not a whole number of " +
                                          std::to_string(t.values) + "-value blocks");
  c.check(p.head_dim >= 1 && p.head_dim <= MD_ATTENTION_MAX_HEAD_DIM,
          "head_dim " + std::to_string(p.head_dim) + " is not from 1 to " + std::to_string(MD_ATTENTION_MAX_HEAD_DIM));
  c.check(c.threads() % 32 == 0 && c.threads() <= MD_ATTENTION_MAX_THREADS,
          std::to_string(c.threads()) + " threads per threadgroup: expected whole SIMD groups, at most " +
              std::to_string(MD_ATTENTION_MAX_THREADS));
  const uint64_t cache = (uint64_t(p.kv_length) + p.count - 1) * p.kv_heads * p.head_dim / t.values * t.bytes;
  c.needs(0, 4 * uint64_t(p.count) * p.heads * p.head_dim, "q: count x heads x head_dim floats");
  c.needs(1, cache, (std::string("keys: kv_length + count - 1 rows of kv_heads x head_dim ") + t.rows).c_str());
  c.needs(2, cache, (std::string("values: kv_length + count - 1 rows of kv_heads x head_dim ") + t.rows).c_str());
  if (p.splits > 1)
    c.needs(5, attentionPartialBytes(p), "partials: count x heads x splits x (head_dim + 2) floats");
  else
    c.needs(5, 4, "partials: any buffer with one split");
  c.check(c.groups() <= uint64_t(p.count) * p.kv_heads * p.splits,
          "one threadgroup per (query, KV head, split): at most count x kv_heads x splits threadgroups");
}
void attentionMerge(Contract& c) {
  md_attention_params p;
  if (!attentionShape(c, p, 1, 2)) return;
  c.needs(0, attentionPartialBytes(p), "partials: count x heads x splits x (head_dim + 2) floats");
}

// Each weight type's kernel suffix, values and bytes per block (the list
// in md_blocks.h): an md_matvec_*, md_matvec_batch_*, md_matvec_id_*, md_matmul_*, md_matmul_id_*,
// md_embed_rows_* and md_head_sample_* kernel each. Float rows may have any length, so their "block" here is one value
// (the kernels read them 32 at a time, with a short last part).
struct WeightBlocks {
  const char* suffix;
  uint32_t values;
  uint64_t bytes;
};
#define MD_WEIGHT_BLOCKS_ROW(NAME, suffix, id, values, bytes) {#suffix, values, bytes},
constexpr WeightBlocks kWeightBlocks[] = {MD_WEIGHT_TYPES(MD_WEIGHT_BLOCKS_ROW)};
#undef MD_WEIGHT_BLOCKS_ROW

std::map<std::string, std::function<void(Contract&)>> allContracts() {
  std::map<std::string, std::function<void(Contract&)>> all = {
      {"md_argmax_f16", [](Contract& c) { argmax(c, 2); }},
      {"md_argmax_f32", [](Contract& c) { argmax(c, 4); }},
      {"md_argmax_slices_f16", [](Contract& c) { wideArgmax(c, 2, true); }},
      {"md_argmax_slices_f32", [](Contract& c) { wideArgmax(c, 4, true); }},
      {"md_argmax_pick_f16", [](Contract& c) { wideArgmax(c, 2, false); }},
      {"md_argmax_pick_f32", [](Contract& c) { wideArgmax(c, 4, false); }},
      {"md_sample_f16", sample},
      {"md_draft_probability_f16", draftProbability},
      {"md_sample_wide_prepare_f16", [](Contract& c) { wideSample(c, true); }},
      {"md_sample_wide_edit_f16", [](Contract& c) { wideSample(c, false); }},
      {"md_sample_wide_count_f16", [](Contract& c) { wideSample(c, true); }},
      {"md_sample_wide_filter_f16", [](Contract& c) { wideSample(c, false); }},
      {"md_sample_wide_noise_f16", [](Contract& c) { wideSample(c, true); }},
      {"md_sample_wide_pick_f16", [](Contract& c) { wideSample(c, false); }},
      {"md_head_sample_pick", [](Contract& c) { headSample(c, 1, 1, false); }},
      {"md_embed_f16", embed},
      {"md_lm_head_f16", lmHead},
      {"md_fp_contract_probe", fpContractProbe},
      {"md_simd_layout_probe", simdLayoutProbe},
      {"md_noise_cells", noiseCells},
      {"md_rms_norm_f32", rmsNorm},
      {"md_swiglu_f32", [](Contract& c) { elementwise(c, 4, "up: rows x n floats"); }},
      {"md_geglu_f32", [](Contract& c) { elementwise(c, 4, "up: rows x n floats"); }},
      {"md_add_f32", add},
      {"md_half_from_f32", [](Contract& c) { elementwise(c, 2, "out: rows x n halves"); }},
      {"md_rope_f32", rope},
      {"md_kv_store_f16", [](Contract& c) { kvStore(c, kCacheF16); }},
      {"md_kv_store_f32", [](Contract& c) { kvStore(c, kCacheF32); }},
      {"md_kv_store_q8_0", [](Contract& c) { kvStore(c, kCacheQ8_0); }},
      {"md_attention_f16", [](Contract& c) { attention(c, kCacheF16); }},
      {"md_attention_f32", [](Contract& c) { attention(c, kCacheF32); }},
      {"md_attention_q8_0", [](Contract& c) { attention(c, kCacheQ8_0); }},
      {"md_attention_merge_f32", attentionMerge},
      {"md_exp_values", expValues},
      {"md_moe_route_f32", moeRoute},
      {"md_moe_group_u32", moeGroup},
      {"md_moe_sum_f32", moeSum},
  };
  for (const WeightBlocks& w : kWeightBlocks) {
    all[std::string("md_matvec_") + w.suffix] = [w](Contract& c) { matvec(c, w.values, w.bytes, 1); };
    all[std::string("md_matvec_batch_") + w.suffix] = [w](Contract& c) {
      matvec(c, w.values, w.bytes, MD_MATVEC_BATCH);
    };
    all[std::string("md_embed_rows_") + w.suffix] = [w](Contract& c) { embedRows(c, w.values, w.bytes); };
    all[std::string("md_matmul_") + w.suffix] = [w](Contract& c) { matmul(c, w.values, w.bytes); };
    all[std::string("md_matvec_id_") + w.suffix] = [w](Contract& c) { matvecId(c, w.values, w.bytes); };
    all[std::string("md_matmul_id_") + w.suffix] = [w](Contract& c) { matmulId(c, w.values, w.bytes); };
    all[std::string("md_head_sample_") + w.suffix] = [w](Contract& c) { headSample(c, w.values, w.bytes, true); };
  }
  return all;
}

const std::map<std::string, std::function<void(Contract&)>>& contracts() {
  static const auto all = allContracts();
  return all;
}

}  // namespace

std::string kernelContractProblem(const DispatchCmd& cmd, const uint8_t* params, uint64_t movedSlot) {
  auto it = contracts().find(cmd.pipeline->name());
  if (it == contracts().end()) return "";
  Contract contract(cmd, params, movedSlot);
  // The built-in kernels declare their threadgroup memory themselves.
  contract.check(cmd.threadgroupMemory == 0, "takes no threadgroup memory argument");
  it->second(contract);
  return contract.problem();
}

}  // namespace md
