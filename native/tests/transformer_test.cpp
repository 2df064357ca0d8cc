// transformer_test.cpp: the forward pass's own invariants on a tiny F32
// model held in memory (its numbers are checked against llama.cpp and a
// float64 reference in test/gguf-*.test.ts): a batch equals token by token,
// a rewind forgets, threads do not change the logits, and bad tensors or
// arguments are errors naming them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_sampler.h"
#include "float16.h"
#include "md_sampling.h"
#include "transformer/repack_weights.h"
#include "quant/dot.h"
#include "transformer/transformer.h"

namespace md {
namespace {

struct TinyModel {
  ModelConfig config;
  std::vector<uint8_t> file;
  std::vector<TensorEntry> entries;

  bool q4 = false;  // the matrices Q4_0 (the embedding table and the vectors stay F32)

  void add(const std::string& name, std::vector<uint64_t> dims, std::mt19937& rng, bool ones = false) {
    uint64_t count = 1;
    for (uint64_t d : dims) count *= d;
    std::normal_distribution<float> normal(0.f, 0.3f);
    std::vector<float> values(count);
    for (float& v : values) v = ones ? 1.f + 0.1f * normal(rng) : normal(rng);
    const size_t offset = file.size();
    if (q4 && dims.size() == 2 && name != "token_embd.weight") {
      // Q4_0 as llama.cpp quantizes it: d = the block's largest magnitude (signed) / -8.
      for (uint64_t b = 0; b < count / 32; ++b) {
        const float* x = values.data() + b * 32;
        float max = 0;
        for (int j = 0; j < 32; ++j)
          if (std::fabs(x[j]) > std::fabs(max)) max = x[j];
        const float d = max / -8, id = d != 0 ? 1 / d : 0;
        uint8_t block[18];
        const uint16_t half = halfFromFloat(d);
        std::memcpy(block, &half, 2);
        for (int j = 0; j < 16; ++j) {
          const auto quant = [&](float v) { return uint8_t(std::min(15.f, v * id + 8.5f)); };
          block[2 + j] = uint8_t(quant(x[j]) | (quant(x[j + 16]) << 4));
        }
        file.insert(file.end(), block, block + 18);
      }
      entries.push_back({name, uint32_t(TensorType::Q4_0), dims, offset});
      return;
    }
    file.resize(offset + count * 4);
    std::memcpy(file.data() + offset, values.data(), count * 4);
    entries.push_back({name, 0, dims, offset});
  }
};

TinyModel tinyModel(bool qwen3 = false, uint32_t layers = 2, bool q4 = false) {
  TinyModel m;
  m.q4 = q4;
  ModelConfig& c = m.config;
  c.vocabSize = 50;
  c.embeddingLength = 64;
  c.blockCount = layers;
  c.headCount = 4;
  c.headCountKv = 2;
  c.headDim = 32;
  c.ffnLength = 96;
  c.ropeDims = 32;
  c.ropeMode = qwen3 ? RopeMode::SplitHalves : RopeMode::AdjacentPairs;
  c.qkNorm = qwen3;
  c.qkvBias = false;
  std::mt19937 rng(7);
  const uint64_t d = 64, q = 128, kv = 64;
  m.add("token_embd.weight", {d, c.vocabSize}, rng);
  m.add("output_norm.weight", {d}, rng, true);
  for (uint32_t l = 0; l < layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    m.add(p + "attn_norm.weight", {d}, rng, true);
    m.add(p + "attn_q.weight", {d, q}, rng);
    m.add(p + "attn_k.weight", {d, kv}, rng);
    m.add(p + "attn_v.weight", {d, kv}, rng);
    m.add(p + "attn_output.weight", {q, d}, rng);
    if (qwen3) {
      m.add(p + "attn_q_norm.weight", {32}, rng, true);
      m.add(p + "attn_k_norm.weight", {32}, rng, true);
    }
    m.add(p + "ffn_norm.weight", {d}, rng, true);
    m.add(p + "ffn_gate.weight", {d, 96}, rng);
    m.add(p + "ffn_up.weight", {d, 96}, rng);
    m.add(p + "ffn_down.weight", {96, d}, rng);
  }
  return m;
}

Transformer makeTransformer(const TinyModel& m, int threads) {
  return Transformer(m.config, bindWeights(m.config, m.entries, m.file.data(), m.file.size()), threads, bestDotTable());
}

float maxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::fmax(d, std::fabs(a[i] - b[i]));
  return d;
}

TEST(Transformer, ABatchEqualsTokenByTokenAndThreadsDoNotMatter) {
  for (bool qwen3 : {false, true}) {
    TinyModel m = tinyModel(qwen3);
    Transformer one = makeTransformer(m, 1), two = makeTransformer(m, 2);
    const std::vector<uint32_t> tokens{3, 17, 42, 8, 8, 0, 49};
    std::vector<float> batch(50), stepwise(50), threaded(50);
    TransformerState a(m.config, 16, 512), b(m.config, 16, 512), c(m.config, 16, 3);
    one.evaluate(a, tokens.data(), int64_t(tokens.size()), 0, batch.data());
    for (size_t i = 0; i < tokens.size(); ++i) one.evaluate(b, &tokens[i], 1, int64_t(i), stepwise.data());
    two.evaluate(c, tokens.data(), int64_t(tokens.size()), 0, threaded.data());  // batches of 3
    // The attention and norms are the same ops; only the order in which
    // threads and batches do not enter: the same bits.
    EXPECT_EQ(maxDifference(batch, stepwise), 0.f) << "qwen3=" << qwen3;
    EXPECT_EQ(maxDifference(batch, threaded), 0.f) << "qwen3=" << qwen3;
    EXPECT_EQ(a.length(), tokens.size());
    float spread = 0;
    for (float v : batch) spread = std::fmax(spread, std::fabs(v - batch[0]));
    EXPECT_GT(spread, 1e-3f) << "logits should depend on the token";
  }
}

// The matrices repacked for the CPU's tiles (repack_weights.h, where the
// dot table has them): a batch still equals token by token bit for bit,
// and the logits are the unrepacked ones within float summation order.
TEST(Transformer, RepackedMatricesKeepABatchEqualToTokenByToken) {
  TinyModel m = tinyModel(false, 2, true);
  // AMX reads Q4_0's rows as the file has them; its CPU's AVX-512 vector kernels repack them.
  const DotTable& dots = bestDotTable().matrix != nullptr ? dotTableNamed("avx512") : bestDotTable();
  if (const DotTable* amx = amxDotTable()) {
    EXPECT_FALSE(amx->repackedFor(TensorType::Q4_0));
  }
  Transformer plain(m.config, bindWeights(m.config, m.entries, m.file.data(), m.file.size()), 2, dots);
  // The repacked model has a file of its own: what it lets go (the
  // repacked matrices' bytes, and the small tensors' it copied) is then
  // scribbled over, and the logits must not see it.
  std::vector<uint8_t> ownFile = m.file;
  Transformer repacked(m.config, bindWeights(m.config, m.entries, ownFile.data(), ownFile.size()), 2, dots);
  std::vector<std::pair<const uint8_t*, size_t>> released;
  const uint64_t bytes = repacked.repackWeights([&](const uint8_t* p, size_t n) { released.emplace_back(p, n); });
  size_t releasedBytes = 0;
  for (const auto& [p, n] : released) {
    ASSERT_GE(p, ownFile.data());
    ASSERT_LE(p + n, ownFile.data() + ownFile.size());
    std::memset(ownFile.data() + (p - ownFile.data()), 0xFF, n);
    releasedBytes += n;
  }
  if (bytes > 0) {
    EXPECT_GT(releasedBytes, bytes) << "the norms and the embedding table are let go with the matrices";
  }
  // Q, K, V, the output and the FFN's three matrices of each layer (the LM head's 50 rows are not groups of 8).
  const uint64_t perLayer = (128 * 64 + 2 * 64 * 64 + 64 * 128 + 2 * 96 * 64 + 64 * 96) / 32 * 18;
  EXPECT_EQ(bytes, repacksFor(dots) ? 2 * perLayer : 0u) << dots.isa;
#if defined(__x86_64__) || defined(__aarch64__)
  EXPECT_GT(bytes, 0u) << "every x86-64 CPU this runs on has AVX2's repacked tiles, every arm64 one NEON's";
#endif
  EXPECT_EQ(repacked.repackedBytes(), bytes);
  const std::vector<uint32_t> tokens{3, 17, 42, 8, 8, 0, 49, 12, 5};
  std::vector<float> batch(50), stepwise(50), before(50);
  TransformerState a(m.config, 16, 512), b(m.config, 16, 512), c(m.config, 16, 512);
  repacked.evaluate(a, tokens.data(), int64_t(tokens.size()), 0, batch.data());
  for (size_t i = 0; i < tokens.size(); ++i) repacked.evaluate(b, &tokens[i], 1, int64_t(i), stepwise.data());
  plain.evaluate(c, tokens.data(), int64_t(tokens.size()), 0, before.data());
  EXPECT_EQ(maxDifference(batch, stepwise), 0.f);
  EXPECT_LT(maxDifference(batch, before), 1e-4f);
  if (bytes > 0) {
    EXPECT_GT(maxDifference(batch, before), 0.f) << "the repacked tiles sum in another order";
  }
}

// With a BLAS library (blasDotTable(): Accelerate on macOS, OpenBLAS in a
// Linux build made to test it), a prompt of 32 tokens or more sends the
// float matrices to the library: the logits are the tiles' within float
// summation order and the activations' rounding (the tiles read them as the
// weights' type; here F32, so summation order alone), and fewer tokens stay
// on the tiles bit for bit.
TEST(Transformer, ABlasLibraryTakesLongPromptsWithinSummationOrder) {
  const DotTable* library = blasDotTable();
  if (library == nullptr) {
    EXPECT_THROW(dotTableNamed("openblas"), std::invalid_argument);
    return;
  }
  DotTable tiles = *library;
  tiles.floatMatrix = nullptr;
  TinyModel m = tinyModel(true);
  auto transformer = [&](const DotTable& dots) {
    return Transformer(m.config, bindWeights(m.config, m.entries, m.file.data(), m.file.size()), 2, dots);
  };
  Transformer withLibrary = transformer(*library), withTiles = transformer(tiles);
  std::vector<uint32_t> tokens(40);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = uint32_t(i * 7 % 50);
  for (int64_t count : {int64_t(40), kLibraryMinimum - 1}) {
    std::vector<float> a(50), b(50);
    TransformerState sa(m.config, 64, 512), sb(m.config, 64, 512);
    const uint64_t before = blasProductCalls();
    withLibrary.evaluate(sa, tokens.data(), count, 0, a.data());
    const uint64_t calls = blasProductCalls() - before;
    withTiles.evaluate(sb, tokens.data(), count, 0, b.data());
    if (count >= kLibraryMinimum) {
      // Q, K, V, the output and the FFN's three matrices of 2 layers (the
      // LM head reads the last token only).
      EXPECT_EQ(calls, 2u * 7u);
      // Float32 sums in another order, carried through two layers' norms
      // and attention: 1e-4 of the largest logit (2.1e-5 seen).
      float largest = 0;
      for (float v : b) largest = std::fmax(largest, std::fabs(v));
      EXPECT_LT(maxDifference(a, b), 1e-4f * largest);
      EXPECT_GT(maxDifference(a, b), 0.f) << "the library sums in another order";
    } else {
      EXPECT_EQ(calls, 0u);
      EXPECT_EQ(maxDifference(a, b), 0.f);
    }
  }
}

// Many users at once: one token of each of several sequences (different
// prompts, lengths, contexts and cache types) in one forward pass gives
// each the bits it gets alone, and each sequence then goes on as if it had
// been evaluated alone; rows past a batch's size run in several passes.
TEST(Transformer, SequencesBatchedTogetherGetTheBitsEachGetsAlone) {
  for (bool qwen3 : {false, true}) {
    TinyModel m = tinyModel(qwen3);
    Transformer t = makeTransformer(m, 2);
    const std::vector<std::vector<uint32_t>> prompts{{3, 17, 42}, {5}, {9, 9, 1, 30, 2, 7}, {44, 12}};
    const TensorType caches[4] = {TensorType::F16, TensorType::F32, TensorType::F16, TensorType::Q8_0};
    const uint32_t contexts[4] = {16, 24, 16, 12};
    std::vector<std::unique_ptr<TransformerState>> together, alone;
    std::vector<float> logits(50);
    for (size_t i = 0; i < prompts.size(); ++i) {
      for (auto* states : {&together, &alone}) {
        states->push_back(std::make_unique<TransformerState>(m.config, contexts[i], 3, caches[i]));
        t.evaluate(*states->back(), prompts[i].data(), int64_t(prompts[i].size()), 0, logits.data());
      }
    }
    // Three steps of all four (batch size 3: two passes), the next tokens each.
    for (uint32_t step = 0; step < 3; ++step) {
      std::vector<SequenceStep> steps;
      for (size_t i = 0; i < prompts.size(); ++i)
        steps.push_back({together[i].get(), uint32_t((7 * i + 11 * step) % 50), uint32_t(prompts[i].size() + step)});
      std::vector<float> batched(steps.size() * 50);
      t.evaluateSequences(steps, batched.data());
      for (size_t i = 0; i < steps.size(); ++i) {
        std::vector<float> own(50);
        t.evaluate(*alone[i], &steps[i].token, 1, steps[i].position, own.data());
        EXPECT_EQ(
            maxDifference(std::vector<float>(batched.begin() + int64_t(i * 50), batched.begin() + int64_t(i * 50 + 50)),
                          own),
            0.f)
            << "qwen3=" << qwen3 << " step " << step << " sequence " << i;
        EXPECT_EQ(together[i]->length(), alone[i]->length());
      }
    }
    // Then each alone again: the caches the batch wrote are the ones evaluate() writes.
    for (size_t i = 0; i < prompts.size(); ++i) {
      const uint32_t token = 23, position = together[i]->length();
      std::vector<float> a(50), b(50);
      t.evaluate(*together[i], &token, 1, position, a.data());
      t.evaluate(*alone[i], &token, 1, position, b.data());
      EXPECT_EQ(maxDifference(a, b), 0.f) << "sequence " << i;
    }
  }
}

TEST(Transformer, ABadStepOfABatchIsAnErrorNamingItAndLeavesEveryStateAlone) {
  TinyModel m = tinyModel();
  Transformer t = makeTransformer(m, 1);
  TransformerState a(m.config, 4, 512), b(m.config, 4, 512);
  std::vector<float> logits(100);
  const uint32_t two[2] = {1, 2};
  t.evaluate(a, two, 2, 0, logits.data());
  auto message = [&](std::vector<SequenceStep> steps) {
    try {
      t.evaluateSequences(steps, logits.data());
    } catch (const std::out_of_range& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({}), "steps: at least one is needed, got 0");
  EXPECT_EQ(message({{&a, 3, 2}, {&a, 4, 3}}),
            "steps[1].state: the sequence of steps[0] too (one token per sequence in a batch)");
  EXPECT_EQ(message({{&a, 3, 2}, {&b, 4, 1}}), "steps[1].position: 1 is after the sequence's end (0 positions)");
  EXPECT_EQ(message({{&a, 50, 2}}), "steps[0].token: 50 is not below the vocabulary size 50");
  EXPECT_EQ(message({{&b, 1, 0}, {nullptr, 1, 0}}), "steps[1].state: no sequence");
  EXPECT_EQ(a.length(), 2u);
  EXPECT_EQ(b.length(), 0u);
  EXPECT_EQ(message({{&a, 3, 2}, {&b, 4, 0}}), "no error");
  EXPECT_EQ(message({{&a, 3, 3}}), "no error");
  EXPECT_EQ(message({{&a, 3, 4}}), "steps[0].position: 4 is not below contextSize 4");
  EXPECT_EQ(a.length(), 4u);
  EXPECT_EQ(b.length(), 1u);
}

// Speculative verification reads the logits after each draft token: the
// last `rows` rows of one call, each the bits of evaluating up to its token
// one at a time, across batch boundaries (maxBatch 3 splits 7 tokens 3+3+1).
TEST(Transformer, TheLastRowsOfACallAreTheStepwiseLogitsOfEachToken) {
  for (bool qwen3 : {false, true}) {
    TinyModel m = tinyModel(qwen3);
    Transformer t = makeTransformer(m, 2);
    const std::vector<uint32_t> tokens{3, 17, 42, 8, 8, 0, 49};
    const int64_t n = int64_t(tokens.size());
    std::vector<std::vector<float>> stepwise(tokens.size(), std::vector<float>(50));
    TransformerState one(m.config, 16, 512);
    for (size_t i = 0; i < tokens.size(); ++i) t.evaluate(one, &tokens[i], 1, int64_t(i), stepwise[i].data());
    for (uint32_t maxBatch : {512u, 3u}) {
      for (int64_t rows : {int64_t(1), int64_t(4), n}) {
        TransformerState s(m.config, 16, maxBatch);
        std::vector<float> logits(size_t(rows) * 50);
        t.evaluate(s, tokens.data(), n, 0, logits.data(), rows);
        for (int64_t r = 0; r < rows; ++r) {
          const std::vector<float> row(logits.begin() + r * 50, logits.begin() + (r + 1) * 50);
          EXPECT_EQ(maxDifference(row, stepwise[size_t(n - rows + r)]), 0.f)
              << "qwen3=" << qwen3 << " maxBatch " << maxBatch << " rows " << rows << " row " << r;
        }
      }
    }
    TransformerState s(m.config, 16, 512);
    std::vector<float> logits(50 * 8);
    try {
      t.evaluate(s, tokens.data(), n, 0, logits.data(), 8);
      ADD_FAILURE() << "8 rows of 7 tokens were accepted";
    } catch (const std::out_of_range& e) {
      EXPECT_STREQ(e.what(), "rows: expected 1 to 7 (the tokens given), got 8");
    }
  }
}

// FlashSampling on the CPU: evaluateAndPick's token is the one CpuSampler
// draws from evaluate()'s logits, for greedy, greedy with a bias and
// temperature-only sampling with and without one, on 1 to 3 threads (each
// splits the LM head's rows its own way), and no token when every logit is
// -inf.
TEST(Transformer, EvaluateAndPickGivesTheSamplersTokenFromTheLogits) {
  TinyModel m = tinyModel();
  const std::vector<uint32_t> tokens{3, 17, 42, 8};
  const float negInf = -INFINITY;
  std::vector<float> logits(50);
  {
    Transformer t = makeTransformer(m, 2);
    TransformerState s(m.config, 16, 512);
    t.evaluate(s, tokens.data(), 4, 0, logits.data());
  }
  uint32_t top = 0;
  for (uint32_t i = 1; i < 50; ++i)
    if (logits[i] > logits[top]) top = i;
  const uint32_t other = (top + 7) % 50;
  struct Case {
    float temperature;
    std::vector<uint32_t> biasTokens;
    std::vector<float> biasValues;
  };
  std::vector<uint32_t> all(50);
  for (uint32_t i = 0; i < 50; ++i) all[i] = i;
  const float gap = logits[top] - logits[other];
  const std::vector<Case> cases = {
      {0.0f, {}, {}},
      // Just past the argmax; a repeated token keeps its first bias; a token beyond the vocabulary is ignored.
      {0.0f, {other, other, 60}, {gap + 1e-4f, -9.0f, 5.0f}},
      {0.0f, {top}, {negInf}},
      {0.7f, {}, {}},
      {2.5f, {}, {}},
      {1.0f, {top, other, other}, {negInf, gap * 0.5f, 3.0f}},
      // Ties: each of these logits + 1e30 rounds to 1e30, and the noise is
      // below its ulp; the lowest index wins.
      {0.0f, {other, top, 7}, {1e30f, 1e30f, 1e30f}},
      {0.8f, {other, top, 7}, {1e30f, 1e30f, 1e30f}},
      {0.0f, all, std::vector<float>(50, negInf)},  // no token: cases 8 and 9
      {0.9f, all, std::vector<float>(50, negInf)},
  };
  CpuSampler sampler;
  for (int threads : {1, 2, 3}) {
    Transformer t = makeTransformer(m, threads);
    for (size_t c = 0; c < cases.size(); ++c) {
      for (uint32_t position = 4; position < 12; ++position) {
        HeadPick pick;
        pick.temperature = cases[c].temperature;
        pick.seed = 99 + uint32_t(c);
        pick.position = position;
        pick.bias =
            headPickBias(cases[c].biasTokens.data(), cases[c].biasValues.data(), cases[c].biasTokens.size(), 50);
        SamplingInputs in{greedySamplingParams(50), nullptr, cases[c].biasTokens.data(), cases[c].biasValues.data()};
        in.params.temperature = pick.temperature;
        in.params.seed = pick.seed;
        in.params.position = position;
        in.params.bias_count = uint32_t(cases[c].biasTokens.size());
        const LogitsRow row{logits.data(), LogitsFormat::Float32, 50};
        ASSERT_EQ(checkSamplingInputs(row, in), nullptr);
        const uint32_t expected = sampler.sample(row, in);
        TransformerState s(m.config, 16, 512);
        EXPECT_EQ(t.evaluateAndPick(s, tokens.data(), 4, 0, pick), expected)
            << "threads " << threads << " case " << c << " position " << position;
        EXPECT_EQ(s.length(), 4u);
        if (c >= 8) {
          EXPECT_EQ(expected, MD_NO_TOKEN);
        }
      }
    }
  }
}

TEST(Transformer, RewindForgetsThePositionsAfterIt) {
  TinyModel m = tinyModel();
  Transformer t = makeTransformer(m, 2);
  TransformerState s(m.config, 16, 512), fresh(m.config, 16, 512);
  const std::vector<uint32_t> first{1, 2, 3, 4, 5}, replay{1, 2, 9, 9};
  std::vector<float> rewound(50), expected(50), before(50);
  t.evaluate(s, first.data(), 5, 0, before.data());
  t.evaluate(s, replay.data() + 2, 2, 2, rewound.data());  // back to position 2
  EXPECT_EQ(s.length(), 4u);
  t.evaluate(fresh, replay.data(), 4, 0, expected.data());
  EXPECT_EQ(maxDifference(rewound, expected), 0.f);
  EXPECT_GT(maxDifference(rewound, before), 0.f);
}

// Context shift: after shift(keep 3, discard 4) of 12 positions, the next
// token's logits are those of a fresh sequence of the 8 kept tokens, on a
// one-layer model (with more layers a kept position's K and V also carry
// the dropped tokens, which its attention saw: that is what a shift
// keeps, in llama.cpp too). The keys were rotated, not computed again, so
// the bits differ: by float32 rounding of the two rotations for an F32
// cache (seen: 5e-7 of the largest logit; a key left unrotated sits 4
// positions off: 0.6-1.3), plus a second rounding of each key to the
// cache's type for F16 (seen: 6e-4) and Q8_0 (1.5e-2), as llama.cpp's
// shift rounds.
TEST(Transformer, AShiftedCacheGivesTheLogitsOfTheKeptTokensAtTheirNewPositions) {
  struct Case {
    TensorType cache;
    float tolerance;  // of the logits' largest magnitude
  };
  for (bool qwen3 : {false, true}) {
    TinyModel m = tinyModel(qwen3, 1);
    Transformer t = makeTransformer(m, 2);
    for (const Case& k : {Case{TensorType::F32, 1e-5f}, Case{TensorType::F16, 2e-3f}, Case{TensorType::Q8_0, 3e-2f}}) {
      const std::vector<uint32_t> tokens{3, 17, 42, 8, 8, 0, 49, 12, 5, 33, 21, 7}, next{19};
      TransformerState s(m.config, 16, 512, k.cache), fresh(m.config, 16, 512, k.cache);
      std::vector<float> shifted(50), expected(50);
      t.evaluate(s, tokens.data(), 12, 0, shifted.data());
      t.shift(s, 3, 4);
      EXPECT_EQ(s.length(), 8u);
      t.evaluate(s, next.data(), 1, 8, shifted.data());
      std::vector<uint32_t> kept(tokens.begin(), tokens.begin() + 3);
      kept.insert(kept.end(), tokens.begin() + 7, tokens.end());
      kept.push_back(next[0]);
      t.evaluate(fresh, kept.data(), int64_t(kept.size()), 0, expected.data());
      float scale = 0;
      for (float v : expected) scale = std::fmax(scale, std::fabs(v));
      const std::string label = std::string("qwen3=") + (qwen3 ? "1 " : "0 ") + tensorTypeInfo(k.cache).name;
      EXPECT_LE(maxDifference(shifted, expected), k.tolerance * scale) << label;
    }
  }
}

TEST(Transformer, AShiftThatDoesNotFitIsAnErrorNamingItAndLeavesTheStateAlone) {
  TinyModel m = tinyModel();
  Transformer t = makeTransformer(m, 1);
  TransformerState s(m.config, 8, 512);
  const std::vector<uint32_t> tokens{1, 2, 3, 4, 5};
  std::vector<float> before(50), after(50);
  t.evaluate(s, tokens.data(), 5, 0, before.data());
  auto message = [&](uint32_t keep, uint32_t discard) {
    try {
      t.shift(s, keep, discard);
    } catch (const std::out_of_range& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(2, 4), "keep + discard: must be at most the 5 positions the cache holds, got 2 + 4");
  EXPECT_EQ(message(1, 0), "discard: must be at least 1, got 0");
  EXPECT_EQ(s.length(), 5u);
  t.evaluate(s, tokens.data() + 4, 1, 4, after.data());
  EXPECT_EQ(maxDifference(before, after), 0.f);
}

TEST(Transformer, BadArgumentsAreErrorsNamingThemAndLeaveTheStateAlone) {
  TinyModel m = tinyModel();
  Transformer t = makeTransformer(m, 1);
  TransformerState s(m.config, 4, 512);
  std::vector<float> logits(50);
  const uint32_t ok[2] = {1, 2}, bad[2] = {1, 50};
  t.evaluate(s, ok, 2, 0, logits.data());
  auto message = [&](auto call) {
    try {
      call();
    } catch (const std::out_of_range& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { t.evaluate(s, bad, 2, 2, logits.data()); }),
            "tokens[1]: 50 is not below the vocabulary size 50");
  EXPECT_EQ(message([&] { t.evaluate(s, ok, 2, 3, logits.data()); }),
            "start: position 3 is after the sequence's end (2 positions)");
  EXPECT_EQ(message([&] { t.evaluate(s, ok, 2, 3 - 0 - 1 + 0, logits.data()); }), "no error");
  EXPECT_EQ(message([&] { t.evaluate(s, ok, 2, 3, logits.data()); }), "tokens: positions 3 + 2 exceed contextSize 4");
  EXPECT_EQ(s.length(), 4u);
}

std::string bindError(TinyModel m) {
  try {
    bindWeights(m.config, m.entries, m.file.data(), m.file.size());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(BindWeights, NamesTheTensorAndTheField) {
  TinyModel m = tinyModel();
  EXPECT_EQ(bindError(m), "no error");
  {
    TinyModel x = m;
    x.entries.erase(x.entries.begin() + 3);
    EXPECT_EQ(bindError(x), "tensor blk.0.attn_q.weight: missing (the architecture needs it)");
  }
  {
    TinyModel x = m;
    x.entries[3].dims = {64, 127};
    EXPECT_EQ(bindError(x), "tensor blk.0.attn_q.weight: shape [64, 127], expected [64, 128]");
  }
  {
    TinyModel x = m;
    x.entries[3].offset = x.file.size() - 64;
    EXPECT_EQ(bindError(x), "tensor blk.0.attn_q.weight: bytes " + std::to_string(x.file.size() - 64) +
                                " + 32768 run past the end of the file (" + std::to_string(x.file.size()) + " bytes)");
  }
  {
    TinyModel x = m;
    x.entries[3].offset = UINT64_MAX - 3;
    EXPECT_NE(bindError(x).find("run past the end of the file"), std::string::npos);
  }
  {
    TinyModel x = m;
    x.entries[3].type = 16;  // IQ2_XXS
    EXPECT_EQ(
        bindError(x),
        "tensor blk.0.attn_q.weight: type 16 is not supported (supported: F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
        "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, BF16)");
  }
  {
    TinyModel x = m;
    x.entries[1].type = 1;
    EXPECT_EQ(bindError(x),
              "tensor output_norm.weight: type F16 is not supported for a norm, bias or factor vector (expected F32)");
  }
  {
    TinyModel x = m;
    x.entries.push_back(x.entries[2]);
    EXPECT_EQ(bindError(x), "tensor blk.0.attn_norm.weight: the name appears twice in the tensor table");
  }
  {
    TinyModel x = m;
    x.entries.push_back({"blk.0.attn_q.bias", 0, {128}, 0});
    EXPECT_EQ(bindError(x),
              "tensor blk.0.attn_q.bias: not part of this architecture's tensors (an unsupported variant?)");
  }
  {
    TinyModel x = m;
    x.config.headCountKv = 3;
    EXPECT_EQ(bindError(x), "headCountKv: 3 does not divide headCount 4");
  }
}

}  // namespace
}  // namespace md
