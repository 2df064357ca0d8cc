// forward_graph_test.cpp: the Llama family's forward graph and its record
// as kernel launches, checked structurally (what each switch adds, which
// kernels a batch, a decode step and a verification take, the patches).
// The numbers each backend computes from the graph are checked elsewhere:
// the CPU executor against llama.cpp (test/gguf-llama-cpp.test.ts), the
// recorded tables against the CPU on the emulated GPU (test/gguf-gpu-table.test.ts).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/forward_graph.h"
#include "graph/table_recorder.h"
#include "md_transformer.h"

namespace md {
namespace {

ModelConfig tinyConfig(bool qwen2, bool qwen3) {
  ModelConfig c;
  c.vocabSize = 300;
  c.embeddingLength = 256;
  c.blockCount = 2;
  c.headCount = 4;
  c.headCountKv = 2;
  c.headDim = 64;
  c.ffnLength = 512;
  c.ropeDims = 64;
  c.ropeMode = qwen2 || qwen3 ? RopeMode::SplitHalves : RopeMode::AdjacentPairs;
  c.qkvBias = qwen2;
  c.qkNorm = qwen3;
  c.normEps = 1e-5f;
  return c;
}

// A file's tensor table: every tensor the config needs, in `type`, with
// output.weight only when `untied`, V in Q6_K when `mixed`.
std::map<std::string, TensorType> fileTypes(const ModelConfig& c, TensorType type, bool untied, bool mixed = false) {
  std::map<std::string, TensorType> t{{"token_embd.weight", type}, {"output_norm.weight", TensorType::F32}};
  if (untied) t["output.weight"] = type;
  for (uint32_t l = 0; l < c.blockCount; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* m : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up", "ffn_down"})
      t[p + m + ".weight"] = type;
    t[p + "attn_v.weight"] = mixed ? TensorType::Q6_K : type;
    for (const char* v : {"attn_norm", "ffn_norm"}) t[p + v + ".weight"] = TensorType::F32;
    if (c.qkvBias)
      for (const char* b : {"attn_q", "attn_k", "attn_v"}) t[p + b + ".bias"] = TensorType::F32;
    if (c.qkNorm)
      for (const char* n : {"attn_q_norm", "attn_k_norm"}) t[p + n + ".weight"] = TensorType::F32;
  }
  return t;
}

ForwardGraph graphOf(const ModelConfig& c, const std::map<std::string, TensorType>& types) {
  return buildForwardGraph(c, [&types](const std::string& name) -> const TensorType* {
    auto it = types.find(name);
    return it == types.end() ? nullptr : &it->second;
  });
}

std::vector<std::string> kernels(const RecordedForward& r) {
  std::vector<std::string> k;
  for (const RecordedCommand& c : r.commands) k.push_back(c.kernel);
  return k;
}

size_t countOf(const std::vector<std::string>& v, const std::string& s) {
  return size_t(std::count(v.begin(), v.end(), s));
}

RecordOptions options(uint32_t count, LogitRows logits, uint32_t splits = 1) {
  RecordOptions o;
  o.count = count;
  o.logits = logits;
  o.contextSize = 64;
  o.attentionSplits = splits;
  return o;
}

TEST(ForwardGraph, EachSwitchAddsItsOpsAndTensors) {
  for (const bool qwen2 : {false, true}) {
    for (const bool qwen3 : {false, true}) {
      if (qwen2 && qwen3) continue;
      const ModelConfig c = tinyConfig(qwen2, qwen3);
      const ForwardGraph g = graphOf(c, fileTypes(c, TensorType::Q4_K, true));
      size_t headNorms = 0, biases = 0, projections = 0;
      for (const GraphOp& op : g.ops) {
        if (op.kind == OpKind::RmsNorm && op.rowsPerToken > 1) ++headNorms;
        for (const Projection& p : op.projections) biases += p.bias.present(), ++projections;
      }
      EXPECT_EQ(headNorms, qwen3 ? 2u * c.blockCount : 0u);
      EXPECT_EQ(biases, qwen2 ? 3u * c.blockCount : 0u);
      EXPECT_EQ(projections, 7u * c.blockCount);
      // Embed, output norm and head; per layer norm, QKV, [2 head norms], RoPE, KV, attention, O, norm, gate/up,
      // SwiGLU, down.
      EXPECT_EQ(g.ops.size(), 3 + c.blockCount * (10 + (qwen3 ? 2 : 0)));
      EXPECT_EQ(g.ops.front().kind, OpKind::Embed);
      EXPECT_EQ(g.ops.back().kind, OpKind::LmHead);
    }
  }
}

TEST(ForwardGraph, ATiedFileReadsTheEmbeddingTableAsItsHead) {
  const ModelConfig c = tinyConfig(false, false);
  const ForwardGraph tied = graphOf(c, fileTypes(c, TensorType::F16, false));
  const ForwardGraph untied = graphOf(c, fileTypes(c, TensorType::F16, true));
  EXPECT_EQ(tied.tensor(tied.ops.back().weight).name, "token_embd.weight");
  EXPECT_EQ(untied.tensor(untied.ops.back().weight).name, "output.weight");
  EXPECT_FALSE(tied.ropeFactors.present());
}

TEST(ForwardGraph, ABadConfigIsAnErrorNamingTheField) {
  ModelConfig c = tinyConfig(false, false);
  c.headCountKv = 3;
  try {
    graphOf(c, fileTypes(c, TensorType::F16, true));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "headCountKv: 3 does not divide headCount 4");
  }
}

TEST(TableRecorder, ADecodeStepTakesTheMatrixVectorKernelsWithGateUpAndSwigluFused) {
  const ModelConfig c = tinyConfig(false, false);
  const ForwardGraph g = graphOf(c, fileTypes(c, TensorType::Q4_K, true));
  const RecordedForward r = recordForward(g, c, options(1, LogitRows::Last));
  const std::vector<std::string> k = kernels(r);
  // Per layer: QKV in one dispatch, O, gate+up+SwiGLU in one, down; then the LM head.
  EXPECT_EQ(countOf(k, "md_matvec_q4_k"), 4u * c.blockCount + 1);
  EXPECT_EQ(countOf(k, "md_swiglu_f32"), 0u);
  EXPECT_EQ(countOf(k, "md_attention_merge_f32"), 0u);
  EXPECT_EQ(k.front(), "md_embed_rows_q4_k");
  EXPECT_EQ(r.commands.back().label, "LM head");
  EXPECT_EQ(r.commands[2].label, "0: attn_q + 0: attn_k + 0: attn_v");
  md_matvec_params qkv;
  ASSERT_EQ(r.commands[2].params.size(), sizeof qkv);
  std::memcpy(&qkv, r.commands[2].params.data(), sizeof qkv);
  EXPECT_EQ(qkv.rows[0], 256u);
  EXPECT_EQ(qkv.rows[1], 128u);
  EXPECT_EQ(qkv.rows[2], 128u);
  EXPECT_EQ(qkv.mode, MD_MATVEC_STORE);
}

TEST(TableRecorder, APrefillBatchTakesTheMatrixMatrixKernelsOneMatrixEach) {
  const ModelConfig c = tinyConfig(true, false);
  const ForwardGraph g = graphOf(c, fileTypes(c, TensorType::Q8_0, true));
  const RecordedForward r = recordForward(g, c, options(5, LogitRows::None));
  const std::vector<std::string> k = kernels(r);
  EXPECT_EQ(countOf(k, "md_matmul_q8_0"), 7u * c.blockCount);
  EXPECT_EQ(countOf(k, "md_swiglu_f32"), c.blockCount);
  EXPECT_EQ(countOf(k, "md_add_f32"), 3u * c.blockCount);  // qwen2's biases
  EXPECT_EQ(k.back(), "md_matmul_q8_0");                   // no logits: no output norm, no head
}

TEST(TableRecorder, VerificationTakesTheBatchFormAndMixedTypesSplitTheirDispatches) {
  const ModelConfig c = tinyConfig(false, true);
  const ForwardGraph g = graphOf(c, fileTypes(c, TensorType::Q4_K, false, true));
  const RecordedForward r = recordForward(g, c, options(10, LogitRows::Every, 3));
  const std::vector<std::string> k = kernels(r);
  // 10 rows: batches of 8 and 2. Q and K in one dispatch, V (Q6_K) in its own.
  EXPECT_EQ(countOf(k, "md_matvec_batch_q6_k"), 2u * c.blockCount);
  EXPECT_EQ(countOf(k, "md_attention_merge_f32"), c.blockCount);
  EXPECT_EQ(r.commands.back().label, "LM head (tokens 8..9)");
  EXPECT_EQ(r.commands.back().buffers[2].buffer, "rowLogits");
  EXPECT_EQ(r.commands.back().buffers[2].offset, 8u * c.vocabSize * 4);
}

TEST(TableRecorder, AFusedHeadStopsBeforeTheLmHeadAndNamesIt) {
  const ModelConfig c = tinyConfig(false, false);
  const ForwardGraph g = graphOf(c, fileTypes(c, TensorType::F16, false));
  RecordOptions o = options(1, LogitRows::Last);
  o.headPick = true;
  const RecordedForward r = recordForward(g, c, o);
  EXPECT_EQ(r.headTensor, "token_embd.weight");
  EXPECT_EQ(r.commands.back().label, "output norm");
}

TEST(TableRecorder, PositionalCommandsCarryTheirPatches) {
  const ModelConfig c = tinyConfig(false, false);
  const ForwardGraph g = graphOf(c, fileTypes(c, TensorType::F16, true));
  for (const RecordedCommand& cmd : recordForward(g, c, options(1, LogitRows::Last)).commands) {
    if (cmd.kernel == "md_rope_f32")
      EXPECT_EQ(cmd.patchFields, std::vector<uint32_t>{offsetof(md_rope_params, position)});
    else if (cmd.kernel == "md_kv_store_f16")
      EXPECT_EQ(cmd.patchFields, std::vector<uint32_t>{offsetof(md_kv_store_params, position)});
    else if (cmd.kernel == "md_attention_f16")
      EXPECT_EQ(cmd.patchFields, std::vector<uint32_t>{offsetof(md_attention_params, kv_length)});
    else if (cmd.kernel == "md_embed_rows_f16")
      EXPECT_EQ(cmd.patchRule, "tokenOffset");
    else
      EXPECT_EQ(cmd.patchRule, "") << cmd.kernel;
  }
}

TEST(TableRecorder, BadOptionsAreErrorsNamingThem) {
  const ModelConfig c = tinyConfig(false, false);
  const ForwardGraph g = graphOf(c, fileTypes(c, TensorType::F16, true));
  RecordOptions o = options(0, LogitRows::Last);
  EXPECT_THROW(recordForward(g, c, o), std::invalid_argument);
  o = options(1, LogitRows::Last, 0);
  try {
    recordForward(g, c, o);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "attentionSplits: must be positive, got 0");
  }
}

TEST(TableRecorder, ForwardBuffersHoldABatchAndEachLayersCache) {
  const ModelConfig c = tinyConfig(false, false);
  std::map<std::string, uint64_t> bytes;
  for (const auto& [name, size] : forwardBuffers(c, 32, 64, 2, TensorType::Q8_0)) bytes[name] = size;
  EXPECT_EQ(bytes.at("hidden"), 32u * 256 * 4);
  EXPECT_EQ(bytes.at("gate"), 32u * 512 * 4);
  EXPECT_EQ(bytes.at("partials"), 32u * 4 * 2 * (2 + 64) * 4);
  EXPECT_EQ(bytes.at("keys.1"), 64u * (128 / 32) * 34);  // Q8_0: 34 bytes per 32 values
  EXPECT_EQ(bytes.count("keys.2"), 0u);
}

}  // namespace
}  // namespace md
