// weights.cpp: binding GGUF tensors to the declarations of a forward graph.
#include "weights.h"

#include <cmath>
#include <map>
#include <stdexcept>

namespace md {
namespace {

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument(message); }

std::string dimsText(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

class Binder {
 public:
  Binder(const std::vector<TensorEntry>& entries, const uint8_t* file, uint64_t fileSize)
      : file_(file), fileSize_(fileSize) {
    for (const TensorEntry& e : entries)
      if (!byName_.emplace(e.name, &e).second)
        fail("tensor " + e.name + ": the name appears twice in the tensor table");
  }

  // A weight matrix of `rows` rows of `cols` values (or a vector when rows == 0).
  TensorView bind(const std::string& name, uint64_t cols, uint64_t rows, uint64_t slices, bool required,
                  bool floatOnly) {
    auto it = byName_.find(name);
    if (it == byName_.end()) {
      if (required) fail("tensor " + name + ": missing (the architecture needs it)");
      return {};
    }
    used_.emplace(name, true);
    const TensorEntry& e = *it->second;
    const TensorTypeInfo* info = findTensorType(e.type);
    if (info == nullptr || !info->weight)
      fail("tensor " + name + ": type " + std::to_string(e.type) + " is not supported (supported: " + supportedTypes() +
           ")");
    if (floatOnly && info->type != TensorType::F32)
      fail("tensor " + name + ": type " + info->name +
           " is not supported for a norm, bias or factor vector (expected F32)");
    const std::vector<uint64_t> expected = rows == 0     ? std::vector<uint64_t>{cols}
                                           : slices == 0 ? std::vector<uint64_t>{cols, rows}
                                                         : std::vector<uint64_t>{cols, rows, slices};
    if (e.dims != expected) fail("tensor " + name + ": shape " + dimsText(e.dims) + ", expected " + dimsText(expected));
    const size_t bytesPerRow = rowBytes(*info, cols);
    if (bytesPerRow == 0)
      fail("tensor " + name + ": a row of " + std::to_string(cols) + " values is not a whole number of " + info->name +
           " blocks of " + std::to_string(info->blockValues));
    // A 3-D tensor's matrices are rows one after another: rows x slices rows.
    const uint64_t rowCount = rows == 0 ? 1 : slices == 0 ? rows : rows * slices;
    if (rowCount > UINT64_MAX / bytesPerRow) fail("tensor " + name + ": its size overflows");
    const uint64_t bytes = rowCount * bytesPerRow;
    if (e.offset % 4 != 0)
      fail("tensor " + name + ": data offset " + std::to_string(e.offset) + " is not 4-byte aligned");
    if (e.offset > fileSize_ || bytes > fileSize_ - e.offset)
      fail("tensor " + name + ": bytes " + std::to_string(e.offset) + " + " + std::to_string(bytes) +
           " run past the end of the file (" + std::to_string(fileSize_) + " bytes)");
    TensorView v;
    v.type = info->type;
    v.cols = cols;
    v.rows = rowCount;
    v.data = file_ + e.offset;
    v.rowBytes = bytesPerRow;
    return v;
  }

  void checkAllUsed(const char* what) const {
    for (const auto& [name, entry] : byName_)
      if (used_.find(name) == used_.end())
        fail("tensor " + name + ": not part of " + what + " (an unsupported variant?)");
  }

  static std::string supportedTypes() {
    size_t count;
    const TensorTypeInfo* types = tensorTypes(&count);
    std::string s;
    for (size_t i = 0; i < count; ++i)
      if (types[i].weight) s += (s.empty() ? "" : ", ") + std::string(types[i].name);
    return s;
  }

 private:
  const uint8_t* file_;
  uint64_t fileSize_;
  std::map<std::string, const TensorEntry*> byName_;
  std::map<std::string, bool> used_;
};

void requirePositive(const char* field, uint64_t value) {
  if (value == 0) fail(std::string(field) + ": must be positive, got 0");
}

}  // namespace

void checkConfig(const ModelConfig& c) {
  requirePositive("vocabSize", c.vocabSize);
  requirePositive("embeddingLength", c.embeddingLength);
  requirePositive("blockCount", c.blockCount);
  requirePositive("headCount", c.headCount);
  requirePositive("headCountKv", c.headCountKv);
  requirePositive("headDim", c.headDim);
  requirePositive("ffnLength", c.ffnLength);
  if (c.headCount % c.headCountKv != 0)
    fail("headCountKv: " + std::to_string(c.headCountKv) + " does not divide headCount " + std::to_string(c.headCount));
  // 0 rotates nothing (llama.cpp allows it); an odd count is what ggml's rope asserts against.
  if (c.ropeDims % 2 != 0 || c.ropeDims > c.headDim)
    fail("ropeDims: expected an even number from 0 to headDim " + std::to_string(c.headDim) + ", got " +
         std::to_string(c.ropeDims));
  // Widths of any length: float rows have tails in the dot kernels, and a
  // quantized tensor's rows must be whole blocks, which bind() checks per
  // tensor (the file's own constraint, as in llama.cpp).
  if (c.ropeMode != RopeMode::AdjacentPairs && c.ropeMode != RopeMode::SplitHalves)
    fail("ropeMode: expected 0 (adjacent pairs) or 2 (split halves), got " + std::to_string(uint32_t(c.ropeMode)));
  if (!(c.ropeBase > 0)) fail("ropeBase: must be positive, got " + std::to_string(c.ropeBase));
  if (!(c.ropeFreqScale > 0)) fail("ropeFreqScale: must be positive, got " + std::to_string(c.ropeFreqScale));
  if (!(c.normEps > 0 && c.normEps < 1)) fail("normEps: expected a value in (0, 1), got " + std::to_string(c.normEps));
  if (c.graph != GraphFamily::Llama && c.graph != GraphFamily::Gemma3)
    fail("graph: expected 0 (llama) or 1 (gemma3), got " + std::to_string(uint32_t(c.graph)));
  if (c.ffnActivation != FfnActivation::Silu && c.ffnActivation != FfnActivation::GeluTanh)
    fail("ffnActivation: expected 0 (silu) or 1 (gelu), got " + std::to_string(uint32_t(c.ffnActivation)));
  if (!(c.embeddingScale > 0 && std::isfinite(c.embeddingScale)))
    fail("embeddingScale: must be a positive number, got " + std::to_string(c.embeddingScale));
  if (!(c.attentionScale >= 0 && std::isfinite(c.attentionScale)))
    fail("attentionScale: must be 0 (1 / sqrt(headDim)) or positive, got " + std::to_string(c.attentionScale));
  if ((c.expertCount == 0) != (c.expertUsedCount == 0) || c.expertUsedCount > c.expertCount || c.expertCount > 1024 ||
      (c.expertCount > 0 && c.expertFfnLength == 0))
    fail(
        "expertUsedCount: expected 1 to expertCount experts (at most 1024) of a positive expertFfnLength, or no "
        "experts; got " +
        std::to_string(c.expertUsedCount) + " of " + std::to_string(c.expertCount) + ", expertFfnLength " +
        std::to_string(c.expertFfnLength));
  if (!(c.ropeAttnFactor > 0 && std::isfinite(c.ropeAttnFactor)))
    fail("ropeAttnFactor: must be a positive number, got " + std::to_string(c.ropeAttnFactor));
  if (!(c.ropeBaseLocal >= 0 && std::isfinite(c.ropeBaseLocal)))
    fail("ropeBaseLocal: must be 0 (ropeBase) or positive, got " + std::to_string(c.ropeBaseLocal));
  // Bounds that keep every scratch size far from overflow.
  const uint64_t kMaxDim = 1u << 20;
  if (c.embeddingLength > kMaxDim || c.ffnLength > kMaxDim || c.expertFfnLength > kMaxDim ||
      uint64_t(c.headCount) * c.headDim > kMaxDim || c.blockCount > 4096 || c.vocabSize > (1u << 24))
    fail(
        "config: a dimension is beyond what this forward pass supports (width 1048576, 4096 layers, vocabulary "
        "16777216)");
}

ForwardGraph buildForwardGraph(const ModelConfig& c, const std::vector<TensorEntry>& entries) {
  // The file's type ids as they are: bindWeights names an unsupported one.
  std::map<std::string, TensorType> types;
  for (const TensorEntry& e : entries) types.emplace(e.name, TensorType(e.type));
  return buildForwardGraph(c, [&types](const std::string& name) -> const TensorType* {
    auto it = types.find(name);
    return it == types.end() ? nullptr : &it->second;
  });
}

ModelWeights bindWeights(const ModelConfig& c, const std::vector<TensorEntry>& entries, const uint8_t* file,
                         uint64_t fileSize) {
  checkConfig(c);
  Binder b(entries, file, fileSize);
  ModelWeights w;
  w.graph = buildForwardGraph(c, entries);
  w.tensors.reserve(w.graph.tensors.size());
  for (const TensorDecl& d : w.graph.tensors)
    w.tensors.push_back(b.bind(d.name, d.cols, d.rows, d.slices, d.required, d.rows == 0));
  b.checkAllUsed("this architecture's tensors");
  return w;
}

}  // namespace md
