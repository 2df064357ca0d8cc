// chain_test.cpp: DispatchTable checks, every patch rule of encodeChain on
// the emulated device (with a probe kernel that logs what it saw), and the
// bigram kernels against the CPU forward.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "bigram_forward.h"
#include "dispatch_table.h"
#include "emulated_device.h"
#include "md_sampling.h"

namespace md::emu::testing {
extern const EmulatedKernel kChainProbeKernel;
}

namespace {

using md::BufferBinding;
using md::DispatchCmd;
using md::DispatchTable;
using md::PatchRule;

md::emu::EmulatedDevice& device() {
  // The kernels of metal/ plus the probe.
  static std::vector<md::emu::EmulatedKernel> kernels = [] {
    size_t count = 0;
    const md::emu::EmulatedKernel* builtIn = md::emu::emulatedKernels(&count);
    std::vector<md::emu::EmulatedKernel> all(builtIn, builtIn + count);
    all.push_back(md::emu::testing::kChainProbeKernel);
    return all;
  }();
  static md::emu::EmulatedDevice d(kernels.data(), kernels.size());
  return d;
}

std::shared_ptr<md::Buffer> uintBuffer(std::vector<uint32_t> values) {
  auto b = device().newBuffer(values.size() * 4);
  std::memcpy(b->contents(), values.data(), values.size() * 4);
  return b;
}

const uint32_t* uints(md::Buffer& b) { return static_cast<const uint32_t*>(b.contents()); }

struct Record {
  uint32_t input, a, b;
  bool operator==(const Record& o) const { return input == o.input && a == o.a && b == o.b; }
};

std::vector<Record> records(md::Buffer& log) {
  const uint32_t* l = uints(log);
  std::vector<Record> out;
  for (uint32_t i = 0; i < l[0]; ++i) out.push_back({l[1 + 3 * i], l[2 + 3 * i], l[3 + 3 * i]});
  return out;
}

// A probe command: input, fields {a, b}, output, log.
DispatchCmd probe(md::Buffer& input, uint64_t inputOffset, md::Buffer& output, uint64_t outputOffset, md::Buffer& log,
                  uint32_t a = 7, uint32_t b = 9) {
  DispatchCmd cmd;
  cmd.pipeline = &device().pipeline("md_test_chain_probe");
  cmd.buffers[0] = BufferBinding{&input, inputOffset, 0};
  cmd.buffers[1] = BufferBinding{&output, outputOffset, 2};
  cmd.buffers[2] = BufferBinding{&log, 0, 3};
  cmd.bufferCount = 3;
  uint32_t fields[2] = {a, b};
  std::memcpy(cmd.params, fields, 8);
  cmd.paramsSize = 8;
  cmd.paramsIndex = 1;
  return cmd;
}

void runChain(const DispatchTable& table, uint32_t start, uint32_t n) {
  auto commands = device().newCommandBuffer();
  md::encodeChain(*commands, table, start, n);
  commands->commit();
  commands->wait();
}

// A two-command "model" over a sequence buffer: the first reads token p
// (token offset) into a scratch word, the second writes scratch + 1 to
// token p + 1 (argmax output). So seq[p + 1] = seq[p] + 2.
TEST(Chain, TokenOffsetAndArgmaxOutputReadTokenPAndWriteTokenPPlusOne) {
  auto seq = uintBuffer(std::vector<uint32_t>(16, 0));
  auto scratch = uintBuffer({0});
  auto log = uintBuffer(std::vector<uint32_t>(1 + 3 * 64, 0));
  uints(*seq);
  static_cast<uint32_t*>(seq->contents())[3] = 100;  // the token at position 3
  DispatchTable table;
  DispatchCmd read = probe(*seq, 0, *scratch, 0, *log);
  read.patch = {PatchRule::TokenOffset, 0, {md::kNoField, md::kNoField}};
  DispatchCmd write = probe(*scratch, 0, *seq, 0, *log);
  write.patch = {PatchRule::ArgmaxOutput, 2, {md::kNoField, md::kNoField}};
  table.add(read, "read");
  table.add(write, "write");

  // Two chunks, 3 + 4 tokens from position 3: the second reads what the
  // first wrote on the "GPU".
  runChain(table, 3, 3);
  runChain(table, 6, 4);
  std::vector<uint32_t> expected(16, 0);
  expected[3] = 100;
  for (uint32_t p = 4; p <= 10; ++p) expected[p] = expected[p - 1] + 2;
  EXPECT_EQ(std::vector<uint32_t>(uints(*seq), uints(*seq) + 16), expected);
  // Each step logged the token it read, then the scratch word.
  std::vector<Record> log7 = records(*log);
  ASSERT_EQ(log7.size(), 14u);
  for (uint32_t i = 0; i < 7; ++i) {
    EXPECT_EQ(log7[2 * i].input, expected[3 + i]) << "step " << i;
    EXPECT_EQ(log7[2 * i + 1].input, expected[3 + i] + 1) << "step " << i;
  }
}

struct FieldCase {
  PatchRule rule;
  uint8_t fields[2];
  // What fields a and b hold at position p (7 and 9 when untouched).
  uint32_t (*a)(uint32_t p);
  uint32_t (*b)(uint32_t p);
};

TEST(Chain, FieldRulesWriteThePositionAndKvLengthOfEveryStep) {
  const FieldCase cases[] = {
      {PatchRule::None, {md::kNoField, md::kNoField}, [](uint32_t) { return 7u; }, [](uint32_t) { return 9u; }},
      {PatchRule::Position, {4, md::kNoField}, [](uint32_t) { return 7u; }, [](uint32_t p) { return p; }},
      {PatchRule::Position, {0, 4}, [](uint32_t p) { return p; }, [](uint32_t p) { return p; }},
      {PatchRule::KvLength, {0, md::kNoField}, [](uint32_t p) { return p + 1; }, [](uint32_t) { return 9u; }},
      {PatchRule::KvLength, {4, 0}, [](uint32_t p) { return p + 1; }, [](uint32_t p) { return p + 1; }},
      {PatchRule::PositionAndKvLength, {0, 4}, [](uint32_t p) { return p; }, [](uint32_t p) { return p + 1; }},
      {PatchRule::PositionAndKvLength, {4, 0}, [](uint32_t p) { return p + 1; }, [](uint32_t p) { return p; }},
  };
  for (const FieldCase& c : cases) {
    SCOPED_TRACE(md::patchRuleName(c.rule));
    auto in = uintBuffer({5});
    auto out = uintBuffer({0});
    auto log = uintBuffer(std::vector<uint32_t>(1 + 3 * 16, 0));
    DispatchTable table;
    DispatchCmd cmd = probe(*in, 0, *out, 0, *log);
    cmd.patch = {c.rule, 0, {c.fields[0], c.fields[1]}};
    table.add(cmd, "probe");
    runChain(table, 1000, 5);  // steps 1000 (first of the chunk) .. 1004 (last)
    runChain(table, 1005, 1);  // a chunk of one token
    std::vector<Record> got = records(*log);
    ASSERT_EQ(got.size(), 6u);
    for (uint32_t i = 0; i < 6; ++i) EXPECT_EQ(got[i], (Record{5, c.a(1000 + i), c.b(1000 + i)})) << "step " << i;
  }
}

TEST(Chain, SampledTokenMovesTheOutputAndWritesKvLengthToBothFields) {
  auto in = uintBuffer({41});
  auto seq = uintBuffer(std::vector<uint32_t>(8, 0));
  auto log = uintBuffer(std::vector<uint32_t>(1 + 3 * 8, 0));
  DispatchTable table;
  DispatchCmd cmd = probe(*in, 0, *seq, 0, *log);
  cmd.patch = {PatchRule::SampledToken, 2, {0, 4}};
  table.add(cmd, "sample");
  runChain(table, 2, 4);
  EXPECT_EQ(std::vector<uint32_t>(uints(*seq), uints(*seq) + 8), (std::vector<uint32_t>{0, 0, 0, 42, 42, 42, 42, 0}));
  std::vector<Record> got = records(*log);
  ASSERT_EQ(got.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], (Record{41, 3 + i, 3 + i}));
}

// A command `ahead` rows acts for position p + ahead: speculative
// verification samples row r of a batch at p + r + 1 into p + r + 1's slot.
TEST(Chain, AheadShiftsEveryPatchedValueAndTheMovedBinding) {
  auto in = uintBuffer({41});
  auto seq = uintBuffer(std::vector<uint32_t>(8, 0));
  auto log = uintBuffer(std::vector<uint32_t>(1 + 3 * 8, 0));
  DispatchTable table;
  DispatchCmd cmd = probe(*in, 0, *seq, 0, *log);
  cmd.patch = {PatchRule::SampledToken, 2, {0, 4}, 2};
  table.add(cmd, "sample row 2");
  runChain(table, 1, 2);  // positions 1 and 2: slots and fields 4 and 5
  EXPECT_EQ(std::vector<uint32_t>(uints(*seq), uints(*seq) + 8), (std::vector<uint32_t>{0, 0, 0, 0, 42, 42, 0, 0}));
  EXPECT_EQ(records(*log), (std::vector<Record>{{41, 4, 4}, {41, 5, 5}}));
  try {
    runChain(table, 4, 2);  // position 5 + 2 + 1 = slot 8: past the 8 slots
    FAIL() << "no error";
  } catch (const md::DeviceError& e) {
    EXPECT_STREQ(e.what(),
                 "encodeChain: command 'sample row 2' (sampledToken) needs 36 bytes of buffer 2 for positions 4..5, "
                 "but it has 32");
  }
  DispatchCmd far = probe(*in, 0, *seq, 0, *log);
  far.patch = {PatchRule::SampledToken, 2, {0, 4}, md::kMaxPatchAhead + 1};
  EXPECT_EQ(md::commandProblem(far), "patch ahead 16777216 is over 16777215");
}

TEST(Chain, AChainPastTheEndOfItsBufferIsRefusedBeforeEncoding) {
  auto seq = uintBuffer(std::vector<uint32_t>(8, 0));
  auto log = uintBuffer(std::vector<uint32_t>(1 + 3 * 16, 0));
  DispatchTable table;
  DispatchCmd cmd = probe(*seq, 0, *seq, 0, *log);
  cmd.patch = {PatchRule::ArgmaxOutput, 2, {md::kNoField, md::kNoField}};
  table.add(cmd, "write");
  auto commands = device().newCommandBuffer();
  md::encodeChain(*commands, table, 0, 7);  // writes tokens 1..7: fits
  try {
    md::encodeChain(*commands, table, 4, 4);  // token 8 does not
    FAIL() << "no error";
  } catch (const md::DeviceError& e) {
    EXPECT_STREQ(e.what(),
                 "encodeChain: command 'write' (argmaxOutput) needs 36 bytes of buffer 2 for positions 4..7, "
                 "but it has 32");
  }
  commands->commit();
  commands->wait();
  EXPECT_EQ(records(*log).size(), 7u);  // nothing of the refused chain ran
}

TEST(Chain, MalformedCommandsAreRefusedWithTheirLabel) {
  auto seq = uintBuffer(std::vector<uint32_t>(8, 0));
  auto log = uintBuffer({0});
  auto expectProblem = [](const DispatchCmd& cmd, const char* message) {
    DispatchTable table;
    try {
      table.add(cmd, "step");
      ADD_FAILURE() << "accepted; expected " << message;
    } catch (const md::DeviceError& e) {
      EXPECT_STREQ(e.what(), message);
    }
  };
  DispatchCmd good = probe(*seq, 0, *seq, 4, *log);
  DispatchTable ok;
  ok.add(good, "fine");
  EXPECT_EQ(ok.size(), 1u);

  DispatchCmd c = good;
  c.buffers[1].index = 0;
  expectProblem(c, "command 'step': buffer 0 is bound twice");
  c = good;
  c.buffers[1].offset = 32;
  expectProblem(c, "command 'step': buffer 2: offset 32 is outside its 32-byte buffer");
  c = good;
  c.paramsSize = 65;
  expectProblem(c, "command 'step': has 65 bytes of params; at most 64");
  c = good;
  c.paramsIndex = 3;
  expectProblem(c, "command 'step': buffer 3: the params use this index");
  c = good;
  c.threadsPerThreadgroup = 48;
  expectProblem(c, "command 'step': threadsPerThreadgroup 48 is not a multiple of 32 from 32 to 1024");
  c = good;
  c.threadgroups = 0;
  expectProblem(c, "command 'step': dispatches 0 threadgroups");
  c = good;
  c.threadgroupMemory = 24;
  expectProblem(c, "command 'step': threadgroup memory of 24 bytes: Metal takes a multiple of 16 bytes, at most 32768");
  c = good;
  c.threadgroupMemory = 32784;
  expectProblem(c,
                "command 'step': threadgroup memory of 32784 bytes: Metal takes a multiple of 16 bytes, at most 32768");
  c = good;
  c.patch = {PatchRule::TokenOffset, 5, {md::kNoField, md::kNoField}};
  expectProblem(c, "command 'step': patch tokenOffset: buffer 5 is not bound");
  c = good;
  c.patch = {PatchRule::Position, 0, {8, md::kNoField}};
  expectProblem(
      c, "command 'step': patch position: field at byte 8 is not an aligned uint32 inside the 8 bytes of params");
  c = good;
  c.patch = {PatchRule::PositionAndKvLength, 0, {0, md::kNoField}};
  expectProblem(c, "command 'step': patch positionAndKvLength needs 2 params field(s)");
  c = good;
  c.patch = {PatchRule::TokenOffset, 0, {0, md::kNoField}};
  expectProblem(c, "command 'step': patch tokenOffset writes no params field");
}

uint16_t randomHalf(std::mt19937& rng) {
  // Finite halves in about [-2, 2], both signs, some subnormals.
  uint16_t h;
  do h = uint16_t(rng() & 0xBFFF);
  while ((h & 0x7C00) == 0x7C00);
  return h;
}

TEST(BigramKernels, EmbeddingAndLmHeadEqualTheCpuForward) {
  for (md::BigramShape shape : {md::BigramShape{1, 1}, md::BigramShape{37, 5}, md::BigramShape{1000, 64}}) {
    SCOPED_TRACE(shape.vocab);
    std::mt19937 rng(shape.vocab);
    const size_t weights = size_t(shape.vocab) * shape.dim;
    auto embedding = device().newBuffer(weights * 2);
    auto head = device().newBuffer(weights * 2);
    for (size_t i = 0; i < weights; ++i) {
      static_cast<uint16_t*>(embedding->contents())[i] = randomHalf(rng);
      static_cast<uint16_t*>(head->contents())[i] = randomHalf(rng);
    }
    auto token = uintBuffer({0, shape.vocab / 2, shape.vocab - 1, 0xFFFFFFFFu});
    auto hidden = device().newBuffer(shape.dim * 2);
    auto logits = device().newBuffer(shape.vocab * 2);
    md_bigram_params params{shape.vocab, shape.dim};

    DispatchTable table;
    DispatchCmd embed;
    embed.pipeline = &device().pipeline("md_embed_f16");
    embed.buffers[0] = {token.get(), 0, 0};
    embed.buffers[1] = {embedding.get(), 0, 1};
    embed.buffers[2] = {hidden.get(), 0, 3};
    embed.bufferCount = 3;
    std::memcpy(embed.params, &params, sizeof params);
    embed.paramsSize = sizeof params;
    embed.paramsIndex = 2;
    embed.threadgroups = (shape.dim + 31) / 32;
    embed.patch = {PatchRule::TokenOffset, 0, {md::kNoField, md::kNoField}};
    DispatchCmd lmHead = embed;
    lmHead.pipeline = &device().pipeline("md_lm_head_f16");
    lmHead.buffers[0] = {head.get(), 0, 0};
    lmHead.buffers[1] = {hidden.get(), 0, 1};
    lmHead.buffers[2] = {logits.get(), 0, 3};
    lmHead.threadgroups = (shape.vocab + 63) / 64;
    lmHead.threadsPerThreadgroup = 64;
    lmHead.patch = {};
    table.add(embed, "embed");
    table.add(lmHead, "lm head");

    std::vector<uint16_t> expected(shape.vocab);
    for (uint32_t p = 0; p < 4; ++p) {
      runChain(table, p, 1);
      md::bigramForward(shape, static_cast<const uint16_t*>(embedding->contents()),
                        static_cast<const uint16_t*>(head->contents()), uints(*token)[p], expected.data());
      const auto* got = static_cast<const uint16_t*>(logits->contents());
      ASSERT_EQ(std::vector<uint16_t>(got, got + shape.vocab), expected) << "token at position " << p;
    }
    // The out-of-vocabulary token (MD_NO_TOKEN) gives all-zero logits.
    EXPECT_EQ(expected, std::vector<uint16_t>(shape.vocab, 0));
  }
}

}  // namespace
