// weights_fuzz.cpp: libFuzzer target for the tensor binder and the forward
// pass it feeds (scripts/fuzz-native.sh), under ASan and UBSan.
//
// The input makes a small model config and a tensor table over the rest of
// the input as the "file": for each tensor the architecture wants, whether
// it is there, its type id, its shape (right or perturbed) and its offset
// (anywhere, in or past the file). bindWeights must refuse a bad table with
// std::invalid_argument; a table it accepts must run a forward pass of two
// tokens without reading outside the file.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "quant/dot.h"
#include "transformer/transformer.h"

namespace {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | byte();
    return v;
  }
  size_t at() const { return at_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

const uint32_t kTypes[] = {0, 1, 2, 3, 6, 8, 12, 13, 14, 30, 7, 9, 15, 99};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  md::ModelConfig c;
  c.vocabSize = 1 + in.byte() % 64;
  c.embeddingLength = 32 * (1 + in.byte() % 4);
  c.blockCount = 1 + in.byte() % 2;
  c.headDim = 32 * (1 + in.byte() % 2);
  c.headCountKv = 1 + in.byte() % 2;
  c.headCount = c.headCountKv * (1 + in.byte() % 2);
  c.ffnLength = 32 * (1 + in.byte() % 4);
  c.ropeDims = 2 * (in.byte() % (c.headDim / 2 + 2));
  c.ropeMode = (in.byte() & 1) ? md::RopeMode::SplitHalves : md::RopeMode::AdjacentPairs;
  c.qkvBias = in.byte() & 1;
  c.qkNorm = in.byte() & 1;
  const uint64_t d = c.embeddingLength, q = uint64_t(c.headCount) * c.headDim, kv = uint64_t(c.headCountKv) * c.headDim;

  std::vector<std::pair<std::string, std::vector<uint64_t>>> wanted = {{"token_embd.weight", {d, c.vocabSize}},
                                                                       {"output_norm.weight", {d}},
                                                                       {"output.weight", {d, c.vocabSize}},
                                                                       {"rope_freqs.weight", {c.ropeDims / 2}}};
  for (uint32_t l = 0; l < c.blockCount; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    wanted.push_back({p + "attn_norm.weight", {d}});
    wanted.push_back({p + "attn_q.weight", {d, q}});
    wanted.push_back({p + "attn_k.weight", {d, kv}});
    wanted.push_back({p + "attn_v.weight", {d, kv}});
    wanted.push_back({p + "attn_output.weight", {q, d}});
    wanted.push_back({p + "attn_q.bias", {q}});
    wanted.push_back({p + "attn_q_norm.weight", {c.headDim}});
    wanted.push_back({p + "ffn_norm.weight", {d}});
    wanted.push_back({p + "ffn_gate.weight", {d, c.ffnLength}});
    wanted.push_back({p + "ffn_up.weight", {d, c.ffnLength}});
    wanted.push_back({p + "ffn_down.weight", {c.ffnLength, d}});
  }
  std::vector<md::TensorEntry> entries;
  for (auto& [name, dims] : wanted) {
    const uint8_t how = in.byte();
    if (how % 8 == 0) continue;  // missing
    md::TensorEntry e{name, (how & 16) ? kTypes[in.byte() % (sizeof kTypes / sizeof kTypes[0])] : 0, dims, 0};
    if (how % 8 == 1 && !e.dims.empty()) e.dims[0] += in.byte();  // wrong shape
    e.offset = (how & 32) ? in.u64() : uint64_t(in.byte()) * 4;
    entries.push_back(e);
  }
  // The rest of the input is the file, 4-byte aligned as a mapping is.
  std::vector<uint32_t> words((size - std::min(size, in.at())) / 4 + 1, 0);
  std::memcpy(words.data(), data + std::min(size, in.at()), size - std::min(size, in.at()));
  const uint8_t* file = reinterpret_cast<const uint8_t*>(words.data());
  const uint64_t fileSize = size - std::min(size, in.at());

  md::ModelWeights weights;
  try {
    weights = md::bindWeights(c, entries, file, fileSize);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  md::Transformer t(c, std::move(weights), 1, md::bestDotTable());
  md::TransformerState state(c, 4, 2);
  std::vector<float> logits(c.vocabSize);
  const uint32_t tokens[3] = {0, c.vocabSize - 1, 0};
  t.evaluate(state, tokens, 3, 0, logits.data());
  return 0;
}
