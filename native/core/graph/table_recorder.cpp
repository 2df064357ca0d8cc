// table_recorder.cpp: each op of a forward graph as kernel launches.
#include "table_recorder.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include "md_transformer.h"

namespace md {
namespace {

// The kernels' suffix of a tensor type: "q4_k", "f16", ...
std::string suffixOf(TensorType type) {
  const char* suffix = tensorTypeInfo(type).kernelSuffix;
  if (suffix == nullptr)
    throw std::invalid_argument(std::string("type ") + tensorTypeInfo(type).name + " has no GPU kernels");
  return suffix;
}

template <class Params>
std::vector<uint8_t> bytesOf(const Params& p) {
  std::vector<uint8_t> bytes(sizeof(Params));
  std::memcpy(bytes.data(), &p, sizeof(Params));
  return bytes;
}

uint32_t ceilDiv(uint64_t n, uint64_t d) { return uint32_t((n + d - 1) / d); }

// One matrix of a projection as the recorder sees it: its weights' name
// and type, its output, its rows.
struct Matrix {
  std::string label, tensor, suffix, out;
  uint32_t rows;
  uint64_t outOffset = 0;     // bytes into `out` (the LM head's rows of logits)
  uint64_t tensorOffset = 0;  // bytes into `tensor` (a fused tensor's part)
};

class Recorder {
 public:
  Recorder(const ForwardGraph& g, const ModelConfig& c, const RecordOptions& o) : g_(g), c_(c), o_(o) {}

  RecordedForward run() {
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      const GraphOp& op = g_.ops[i];
      switch (op.kind) {
        case OpKind::Embed: embed(op); break;
        case OpKind::RmsNorm:
          add(rmsNorm("md_rms_norm_f32", op.label, activationName(op.in), op.weight, activationName(op.out), op.width,
                      o_.count * op.rowsPerToken, 0));
          break;
        case OpKind::Project: {
          const GraphOp* next = i + 1 < g_.ops.size() ? &g_.ops[i + 1] : nullptr;
          if (next && next->kind == OpKind::SwiGlu && fusesSwiglu(op)) {
            matvec(activationName(op.in), op.width, matrices(op), MD_MATVEC_SWIGLU,
                   o_.count);  // gate, up and SwiGLU in one dispatch
            ++i;
          } else {
            project(op);
          }
          break;
        }
        case OpKind::Rope: rope(op); break;
        case OpKind::KvStore: kvStore(op); break;
        case OpKind::Attention: attention(op); break;
        case OpKind::SwiGlu: rowsKernel("md_swiglu_f32", op); break;
        case OpKind::GeGlu: rowsKernel("md_geglu_f32", op); break;
        case OpKind::AddResidual: rowsKernel("md_add_f32", op); break;
        case OpKind::MoeFfn: moe(op); break;
        case OpKind::OutputNorm:
          if (o_.logits == LogitRows::None) return std::move(out_);
          add(rmsNorm("md_rms_norm_f32", op.label, activationName(op.in), op.weight, activationName(op.out), op.width,
                      headRows(), uint64_t(o_.count - headRows()) * op.width * 4));
          break;
        case OpKind::LmHead: lmHead(op); break;
      }
    }
    return std::move(out_);
  }

 private:
  // The commands a per-sequence op takes: (first row, rows) pairs; one per
  // row with sequenceRows, else one for the batch.
  struct RowSpan {
    uint32_t first, rows;
    int32_t sequenceRow;
  };
  std::vector<RowSpan> rowSpans() const {
    if (!o_.sequenceRows) return {{0, o_.count, -1}};
    std::vector<RowSpan> spans;
    for (uint32_t r = 0; r < o_.count; ++r) spans.push_back({r, 1, int32_t(r)});
    return spans;
  }
  static std::string rowLabel(const std::string& label, const RowSpan& s) {
    return s.sequenceRow < 0 ? label : label + " (row " + std::to_string(s.sequenceRow) + ")";
  }

  // The rows the LM head reads: the last token's, or every token's (verification).
  uint32_t headRows() const { return o_.logits == LogitRows::Every ? o_.count : 1; }
  // Verification evaluates every projection with the matrix-vector kernels,
  // whose rows have the bits of one-token steps.
  bool matrixVector() const { return o_.count == 1 || o_.logits == LogitRows::Every; }

  std::string tensorName(TensorRef r) const { return "tensor:" + g_.tensor(r).name; }

  void add(RecordedCommand c) { out_.commands.push_back(std::move(c)); }

  static RecordedCommand command(std::string kernel, std::string label) {
    RecordedCommand c;
    c.kernel = std::move(kernel);
    c.label = std::move(label);
    return c;
  }

  // Threadgroups of `threads` covering n items.
  static void grid(RecordedCommand& c, uint64_t n, uint32_t threads) {
    c.threadgroups = std::max<uint32_t>(1, ceilDiv(n, threads));
    c.threadsPerThreadgroup = threads;
  }

  static std::vector<uint8_t> rowsParams(uint32_t n, uint32_t rows, float eps, bool broadcast) {
    md_rows_params p{};
    p.n = n;
    p.rows = rows;
    p.eps = eps;
    p.broadcast = broadcast ? 1 : 0;
    return bytesOf(p);
  }

  RecordedCommand rmsNorm(const char* kernel, const std::string& label, const std::string& x, TensorRef weight,
                          const std::string& out, uint32_t n, uint32_t rows, uint64_t xOffset) const {
    RecordedCommand c = command(kernel, label);
    c.buffers = {{0, x, xOffset}, {1, tensorName(weight), 0}, {3, out, 0}};
    c.paramsIndex = 2;
    c.params = rowsParams(n, rows, c_.normEps, false);
    c.threadgroups = rows;
    c.threadsPerThreadgroup = 256;
    return c;
  }

  void embed(const GraphOp& op) {
    for (const RowSpan& s : rowSpans()) {
      RecordedCommand c = command("md_embed_rows_" + suffixOf(g_.tensor(op.weight).type), rowLabel(op.label, s));
      c.buffers = {{0, "tokens", 0},
                   {1, tensorName(op.weight), 0},
                   {3, activationName(op.out), uint64_t(s.first) * op.width * 4}};
      md_embed_params p{};
      p.vocab_size = c_.vocabSize;
      p.dim = op.width;
      p.count = s.rows;
      p.scale = op.scale;
      c.paramsIndex = 2;
      c.params = bytesOf(p);
      grid(c, uint64_t(s.rows) * op.width, 128);
      c.patchRule = "tokenOffset";
      c.patchBuffer = 0;
      c.sequenceRow = s.sequenceRow;
      add(std::move(c));
    }
  }

  std::vector<Matrix> matrices(const GraphOp& op) const {
    std::vector<Matrix> m;
    for (const Projection& p : op.projections) {
      const TensorDecl& t = g_.tensor(p.weight);
      m.push_back({p.label, tensorName(p.weight), suffixOf(t.type), activationName(p.out), p.rows, 0,
                   uint64_t(p.rowOffset) * rowBytes(tensorTypeInfo(t.type), t.cols)});
    }
    return m;
  }

  bool fusesSwiglu(const GraphOp& op) const {
    return matrixVector() && op.projections.size() == 2 &&
           g_.tensor(op.projections[0].weight).type == g_.tensor(op.projections[1].weight).type;
  }

  // y = W x for each token (y += W x with accumulate: the residual add fused
  // in), then the biases. One token: the matrix-vector kernel, one dispatch
  // for up to three matrices of a type that read the same x. A batch: the
  // matrix-matrix kernel, one per matrix.
  void project(const GraphOp& op) {
    const std::string x = activationName(op.in);
    const std::vector<Matrix> outputs = matrices(op);
    if (!matrixVector()) {
      for (const Matrix& m : outputs) matmul(x, op.width, m, op.accumulate);
    } else {
      // Runs of up to three matrices of one type, in order (files may mix
      // types, e.g. Q6_K for V).
      std::vector<Matrix> group;
      for (const Matrix& m : outputs) {
        if (!group.empty() && (group.size() == 3 || group[0].suffix != m.suffix)) {
          matvec(x, op.width, group, op.accumulate ? MD_MATVEC_ACCUMULATE : MD_MATVEC_STORE, o_.count);
          group.clear();
        }
        group.push_back(m);
      }
      matvec(x, op.width, group, op.accumulate ? MD_MATVEC_ACCUMULATE : MD_MATVEC_STORE, o_.count);
    }
    for (const Projection& p : op.projections) {
      if (!p.bias.present()) continue;
      RecordedCommand c = command("md_add_f32", p.label + " bias");
      c.buffers = {{0, activationName(p.out), 0}, {1, tensorName(p.bias), 0}};
      c.paramsIndex = 2;
      c.params = rowsParams(p.rows, o_.count, 0, true);
      grid(c, uint64_t(p.rows) * o_.count, 256);
      add(std::move(c));
    }
  }

  // Y (+)= X W^T for the batch: one dispatch of tiles.
  void matmul(const std::string& x, uint32_t cols, const Matrix& m, bool accumulate) {
    RecordedCommand c = command("md_matmul_" + m.suffix, m.label);
    c.buffers = {{0, m.tensor, m.tensorOffset}, {1, x, 0}, {3, m.out, 0}};
    md_matmul_params p{};
    p.rows = m.rows;
    p.cols = cols;
    p.count = o_.count;
    p.accumulate = accumulate ? 1 : 0;
    c.paramsIndex = 2;
    c.params = bytesOf(p);
    c.threadgroups = ceilDiv(m.rows, MD_MATMUL_ROWS) * ceilDiv(o_.count, MD_MATMUL_TOKENS);
    c.threadsPerThreadgroup = MD_MATMUL_THREADS;
    add(std::move(c));
  }

  // The tokens' rows of x in runs of up to MD_MATVEC_BATCH: one dispatch each.
  void matvec(const std::string& x, uint32_t cols, const std::vector<Matrix>& group, uint32_t mode, uint32_t tokens) {
    const Matrix* slots[3];
    for (size_t m = 0; m < 3; ++m) slots[m] = &group[m < group.size() ? m : 0];  // Metal wants every argument bound
    std::string label;
    for (const Matrix& m : group) label += (label.empty() ? "" : " + ") + m.label;
    for (uint32_t first = 0; first < tokens; first += MD_MATVEC_BATCH) {
      const uint32_t n = std::min<uint32_t>(MD_MATVEC_BATCH, tokens - first);
      RecordedCommand c =
          command(std::string("md_matvec_") + (n > 1 ? "batch_" : "") + group[0].suffix,
                  tokens > 1 ? label + " (tokens " + std::to_string(first) + ".." + std::to_string(first + n - 1) + ")"
                             : label);
      auto y = [&](const Matrix& m, uint32_t index) {
        return BufferBinding{index, m.out, m.outOffset + uint64_t(first) * m.rows * 4};
      };
      c.buffers = {{0, slots[0]->tensor, slots[0]->tensorOffset},
                   {1, x, uint64_t(first) * cols * 4},
                   y(*slots[0], 3),
                   {4, slots[1]->tensor, slots[1]->tensorOffset},
                   y(*slots[1], 5),
                   {6, slots[2]->tensor, slots[2]->tensorOffset},
                   y(*slots[2], 7)};
      md_matvec_params p{};
      p.cols = cols;
      p.mode = mode;
      for (size_t m = 0; m < group.size(); ++m) p.rows[m] = group[m].rows;
      p.count = n;
      static const uint32_t kWeightIndex[3] = {0, 4, 6};
      for (uint32_t m = 0; m < group.size(); ++m)
        c.linePhases.push_back({uint32_t(offsetof(md_matvec_params, line_phases)) + m, kWeightIndex[m]});
      c.paramsIndex = 2;
      c.params = bytesOf(p);
      c.threadgroups = ceilDiv(md_matvec_simd_groups(p, n > 1 ? MD_MATVEC_BATCH : 1), 4);
      c.threadsPerThreadgroup = 128;
      add(std::move(c));
    }
  }

  // A mixture of experts (moe.metal's order): the router's logits, the
  // choice per token, each (token, slot) pair's expert FFN, the weighted
  // sum into the residual. One token and verification rows take the
  // indexed matrix-vector kernels (each pair a one-token step's bits); a
  // prefill batch groups the pairs by expert for the matrix-matrix kernels.
  void moe(const GraphOp& op) {
    const uint32_t experts = c_.expertCount, used = c_.expertUsedCount, pairs = o_.count * used;
    if (experts > MD_MOE_MAX_EXPERTS || used > MD_MOE_MAX_USED)
      throw std::invalid_argument("expertCount " + std::to_string(experts) + " and expertUsedCount " +
                                  std::to_string(used) + ": the GPU tables choose up to " +
                                  std::to_string(MD_MOE_MAX_USED) + " of up to " + std::to_string(MD_MOE_MAX_EXPERTS) +
                                  " experts (" + op.label + "); this model runs on the CPU (backend 'native')");
    const std::string x = activationName(op.in);
    const Matrix router{op.label + " router", tensorName(op.weight), suffixOf(g_.tensor(op.weight).type),
                        "routerLogits", experts};
    if (matrixVector())
      matvec(x, op.width, {router}, MD_MATVEC_STORE, o_.count);
    else
      matmul(x, op.width, router, false);
    md_moe_params moe{};
    moe.experts = experts;
    moe.used = used;
    moe.count = o_.count;
    moe.dim = c_.embeddingLength;
    RecordedCommand route = command("md_moe_route_f32", op.label + " choice");
    route.buffers = {{0, "routerLogits", 0}, {2, "expertIds", 0}, {3, "expertWeights", 0}};
    route.paramsIndex = 1;
    route.params = bytesOf(moe);
    grid(route, uint64_t(o_.count) * 32, 128);  // a SIMD group per token
    add(std::move(route));

    const Projection &gate = op.projections[0], &up = op.projections[1], &down = op.projections[2];
    const Activation gateOut = Activation::Gate, upOut = Activation::Up;
    const bool fused = g_.tensor(gate.weight).type == g_.tensor(up.weight).type;
    if (matrixVector()) {
      if (fused) {
        expertMatvec(MD_MATVEC_SWIGLU, gate, &up, x, false, activationName(gateOut), pairs);
      } else {
        expertMatvec(MD_MATVEC_STORE, gate, nullptr, x, false, activationName(gateOut), pairs);
        expertMatvec(MD_MATVEC_STORE, up, nullptr, x, false, activationName(upOut), pairs);
      }
    } else {
      RecordedCommand group = command("md_moe_group_u32", op.label + " grouped by expert");
      group.buffers = {{0, "expertIds", 0}, {2, "expertCounts", 0}, {3, "expertPairs", 0}};
      group.paramsIndex = 1;
      group.params = bytesOf(moe);
      grid(group, experts, 64);
      add(std::move(group));
      expertMatmul(gate, x, false, activationName(gateOut));
      expertMatmul(up, x, false, activationName(upOut));
    }
    if (!matrixVector() || !fused) {
      RecordedCommand swiglu = command("md_swiglu_f32", op.label + " SwiGLU");
      swiglu.buffers = {{0, activationName(gateOut), 0}, {1, activationName(upOut), 0}};
      swiglu.paramsIndex = 2;
      swiglu.params = rowsParams(gate.rows, pairs, 0, false);
      grid(swiglu, uint64_t(gate.rows) * pairs, 256);
      add(std::move(swiglu));
    }
    if (matrixVector())
      expertMatvec(MD_MATVEC_STORE, down, nullptr, activationName(gateOut), true, "expertOutputs", pairs);
    else
      expertMatmul(down, activationName(gateOut), true, "expertOutputs");

    RecordedCommand sum = command("md_moe_sum_f32", op.label + " weighted sum");
    sum.buffers = {{0, "expertOutputs", 0}, {1, "expertWeights", 0}, {3, activationName(op.out), 0}};
    sum.paramsIndex = 2;
    sum.params = bytesOf(moe);
    grid(sum, uint64_t(o_.count) * c_.embeddingLength, 256);
    add(std::move(sum));
  }

  // One expert's matrix of a stacked tensor, in bytes.
  uint64_t expertBytes(const Projection& p) const {
    const TensorDecl& t = g_.tensor(p.weight);
    return uint64_t(p.rows) * rowBytes(tensorTypeInfo(t.type), t.cols);
  }

  // Each pair's rows of `p` (SwiGLU: with `up`) on its expert's matrix.
  void expertMatvec(uint32_t mode, const Projection& p, const Projection* up, const std::string& x, bool xPerPair,
                    const std::string& y, uint32_t pairs) {
    const TensorDecl& t = g_.tensor(p.weight);
    RecordedCommand c = command("md_matvec_id_" + suffixOf(t.type), up ? p.label + " + " + up->label : p.label);
    const std::string w1 = up ? tensorName(up->weight) : tensorName(p.weight);
    c.buffers = {{0, tensorName(p.weight), 0}, {1, x, 0}, {3, y, 0}, {4, w1, 0}, {5, "expertIds", 0}};
    md_matvec_id_params params{};
    params.cols = uint32_t(t.cols);
    params.mode = mode;
    params.rows = p.rows;
    params.pairs = pairs;
    params.used = c_.expertUsedCount;
    params.x_per_pair = xPerPair ? 1 : 0;
    params.experts = c_.expertCount;
    params.expert_bytes = uint32_t(expertBytes(p));
    c.linePhases.push_back({uint32_t(offsetof(md_matvec_id_params, line_phases)), 0});
    if (up) c.linePhases.push_back({uint32_t(offsetof(md_matvec_id_params, line_phases)) + 1, 4});
    c.paramsIndex = 2;
    c.params = bytesOf(params);
    c.threadsPerThreadgroup = 128;
    c.threadgroups = pairs * MD_MATVEC_ID_GROUPS(p.rows, c.threadsPerThreadgroup / 32);
    add(std::move(c));
  }

  // `p` for every expert over the pairs md_moe_group_u32 listed for it.
  void expertMatmul(const Projection& p, const std::string& x, bool xPerPair, const std::string& y) {
    const TensorDecl& t = g_.tensor(p.weight);
    RecordedCommand c = command("md_matmul_id_" + suffixOf(t.type), p.label);
    c.buffers = {{0, tensorName(p.weight), 0}, {1, x, 0}, {3, y, 0}, {4, "expertCounts", 0}, {5, "expertPairs", 0}};
    md_matmul_id_params params{};
    params.rows = p.rows;
    params.cols = uint32_t(t.cols);
    params.count = o_.count;
    params.used = c_.expertUsedCount;
    params.x_per_pair = xPerPair ? 1 : 0;
    params.experts = c_.expertCount;
    params.expert_bytes = uint32_t(expertBytes(p));
    c.paramsIndex = 2;
    c.params = bytesOf(params);
    c.threadgroups = c_.expertCount * ceilDiv(p.rows, MD_MATMUL_ROWS) * ceilDiv(o_.count, MD_MATMUL_TOKENS);
    c.threadsPerThreadgroup = MD_MATMUL_THREADS;
    add(std::move(c));
  }

  void rope(const GraphOp& op) {
    const TensorRef factorsRef = g_.ropeFactorsFor(c_, o_.contextSize);
    const bool factors = factorsRef.present();
    md_rope_params p{};
    p.heads = c_.headCount;
    p.k_heads = c_.headCountKv;
    p.head_dim = c_.headDim;
    p.rope_dims = c_.ropeDims;
    p.mode = uint32_t(c_.ropeMode);
    // base^(-2 / ropeDims) once, in the order the CPU's angles take it, at the layer's frequencies.
    const RopeFrequencies f = ropeFrequencies(c_, op.layer);
    p.theta_scale = float(std::pow(double(f.base), double(float(-2.0 / double(c_.ropeDims)))));
    p.freq_scale = f.freqScale;
    p.has_factors = factors ? 1 : 0;
    p.attn_factor = c_.ropeAttnFactor;
    for (const RowSpan& s : rowSpans()) {
      RecordedCommand c = command("md_rope_f32", rowLabel(op.label, s));
      c.buffers = {{0, "q", uint64_t(s.first) * c_.headCount * c_.headDim * 4},
                   {1, factors ? tensorName(factorsRef) : "q", 0},
                   {3, "k", uint64_t(s.first) * c_.headCountKv * c_.headDim * 4}};
      p.count = s.rows;
      c.paramsIndex = 2;
      c.params = bytesOf(p);
      grid(c, uint64_t(s.rows) * (c_.headCount + c_.headCountKv) * (c_.ropeDims / 2), 64);
      c.patchRule = "position";
      c.patchFields = {uint32_t(offsetof(md_rope_params, position))};
      c.sequenceRow = s.sequenceRow;
      add(std::move(c));
    }
  }

  void kvStore(const GraphOp& op) {
    const uint32_t kvDim = c_.headCountKv * c_.headDim;
    const std::string layer = std::to_string(op.layer);
    // One thread per value; Q8_0's one per block.
    const uint32_t items =
        o_.cacheType == TensorType::Q8_0 ? kvDim / tensorTypeInfo(TensorType::Q8_0).blockValues : kvDim;
    for (const RowSpan& s : rowSpans()) {
      RecordedCommand c = command("md_kv_store_" + suffixOf(o_.cacheType), rowLabel(op.label, s));
      const uint64_t row = uint64_t(s.first) * kvDim * 4;
      c.buffers = {{0, "k", row}, {1, "v", row}, {3, "keys." + layer, 0}, {4, "values." + layer, 0}};
      md_kv_store_params p{};
      p.kv_dim = kvDim;
      p.count = s.rows;
      c.paramsIndex = 2;
      c.params = bytesOf(p);
      grid(c, uint64_t(s.rows) * items, 64);
      c.patchRule = "position";
      c.patchFields = {uint32_t(offsetof(md_kv_store_params, position))};
      c.sequenceRow = s.sequenceRow;
      add(std::move(c));
    }
  }

  void attention(const GraphOp& op) {
    const std::string layer = std::to_string(op.layer);
    md_attention_params p{};
    p.heads = c_.headCount;
    p.kv_heads = c_.headCountKv;
    p.head_dim = c_.headDim;
    p.context = o_.contextSize;
    p.scale = c_.attentionScale > 0 ? c_.attentionScale : float(1.0 / std::sqrt(double(c_.headDim)));
    p.splits = o_.attentionSplits;
    p.window = op.window;
    const uint64_t qRow = uint64_t(c_.headCount) * c_.headDim * 4;
    const uint64_t partialsRow =
        uint64_t(c_.headCount) * o_.attentionSplits * MD_ATTENTION_PARTIAL_FLOATS(c_.headDim) * 4;
    for (const RowSpan& s : rowSpans()) {
      p.count = s.rows;
      RecordedCommand c = command("md_attention_" + suffixOf(o_.cacheType), rowLabel(op.label, s));
      c.buffers = {{0, "q", s.first * qRow},
                   {1, "keys." + layer, 0},
                   {2, "values." + layer, 0},
                   {4, activationName(op.out), s.first * qRow},
                   {5, "partials", s.first * partialsRow}};
      c.paramsIndex = 3;
      c.params = bytesOf(p);
      c.threadgroups = s.rows * c_.headCountKv * o_.attentionSplits;  // one per (query, KV head, split)
      c.threadsPerThreadgroup = 128;
      c.patchRule = "kvLength";
      c.patchFields = {uint32_t(offsetof(md_attention_params, kv_length))};
      c.sequenceRow = s.sequenceRow;
      add(c);
      if (o_.attentionSplits > 1) {
        RecordedCommand merge = command("md_attention_merge_f32", c.label + " merge");
        merge.buffers = {{0, "partials", s.first * partialsRow}, {2, activationName(op.out), s.first * qRow}};
        merge.paramsIndex = 1;
        merge.params = c.params;
        grid(merge, uint64_t(s.rows) * c_.headCount * c_.headDim, 128);
        merge.patchRule = "kvLength";
        merge.patchFields = c.patchFields;
        merge.sequenceRow = s.sequenceRow;
        add(std::move(merge));
      }
    }
  }

  // An element-wise kernel over the batch's rows: out = f(out, in).
  void rowsKernel(const char* kernel, const GraphOp& op) {
    RecordedCommand c = command(kernel, op.label);
    c.buffers = {{0, activationName(op.out), 0}, {1, activationName(op.in), 0}};
    c.paramsIndex = 2;
    c.params = rowsParams(op.width, o_.count, 0, false);
    grid(c, uint64_t(op.width) * o_.count, 256);
    add(std::move(c));
  }

  void lmHead(const GraphOp& op) {
    if (o_.headPick) {
      out_.headTensor = g_.tensor(op.weight).name;
      return;
    }
    Matrix head{op.label, tensorName(op.weight), suffixOf(g_.tensor(op.weight).type),
                o_.logits == LogitRows::Every ? "rowLogits" : "logits", c_.vocabSize};
    matvec(activationName(op.in), op.width, {head}, MD_MATVEC_STORE, headRows());
  }

  const ForwardGraph& g_;
  const ModelConfig& c_;
  const RecordOptions& o_;
  RecordedForward out_;
};

}  // namespace

RecordedForward recordForward(const ForwardGraph& graph, const ModelConfig& config, const RecordOptions& options) {
  if (options.count < 1) throw std::invalid_argument("count: expected at least 1 token, got 0");
  if (options.contextSize < 1) throw std::invalid_argument("contextSize: must be positive, got 0");
  if (options.attentionSplits < 1) throw std::invalid_argument("attentionSplits: must be positive, got 0");
  if (options.cacheType != TensorType::F16 && options.cacheType != TensorType::F32 &&
      options.cacheType != TensorType::Q8_0)
    throw std::invalid_argument("cacheType: expected F16, F32 or Q8_0, got type " +
                                std::to_string(uint32_t(options.cacheType)));
  if (options.sequenceRows && (options.logits != LogitRows::Every || options.headPick))
    throw std::invalid_argument(
        "sequenceRows: a batched decode step leaves every row's logits (logits 'every', no headPick)");
  return Recorder(graph, config, options).run();
}

std::vector<std::pair<std::string, uint64_t>> forwardBuffers(const ModelConfig& c, uint32_t maxBatch,
                                                             uint32_t contextSize, uint32_t attentionSplits,
                                                             TensorType cacheType) {
  std::vector<std::pair<std::string, uint64_t>> buffers;
  const uint64_t batch = maxBatch;
  for (int a = 0; a < kActivationCount; ++a)
    buffers.emplace_back(activationName(Activation(a)), batch * activationWidth(c, Activation(a)) * 4);
  buffers.emplace_back("partials",
                       batch * c.headCount * attentionSplits * (MD_ATTENTION_PARTIAL_FLOATS(c.headDim)) * 4);
  if (c.expertCount > 0) {
    const uint64_t pairs = batch * c.expertUsedCount;
    buffers.emplace_back("routerLogits", batch * c.expertCount * 4);
    buffers.emplace_back("expertIds", pairs * 4);
    buffers.emplace_back("expertWeights", pairs * 4);
    buffers.emplace_back("expertCounts", uint64_t(c.expertCount) * 4);
    buffers.emplace_back("expertPairs", uint64_t(c.expertCount) * batch * 4);
    buffers.emplace_back("expertOutputs", pairs * c.embeddingLength * 4);
  }
  const uint64_t cacheBytes =
      uint64_t(contextSize) * rowBytes(tensorTypeInfo(cacheType), uint64_t(c.headCountKv) * c.headDim);
  for (uint32_t layer = 0; layer < c.blockCount; ++layer) {
    buffers.emplace_back("keys." + std::to_string(layer), cacheBytes);
    buffers.emplace_back("values." + std::to_string(layer), cacheBytes);
  }
  return buffers;
}

}  // namespace md
