// cpu_sampler.cpp: the steps of docs/sampling.md in order, on either row type.
#include "cpu_sampler.h"

#include <cmath>
#include <cstring>

#include "logit_edits.h"
#include "noise_argmax.h"
#include "row_passes.h"
#include "top_p.h"

namespace md {
namespace {

template <class Logits>
uint32_t sampleRow(const typename Logits::Bits* row, const SamplingInputs& in, SamplerScratch& scratch) {
  using Bits = typename Logits::Bits;
  const md_sampling_params& p = in.params;
  const uint32_t n = p.vocab_size;

  // Steps 1-2 on a copy, so the caller's logits are never written. A
  // token the mask refuses is -inf, whatever its edits (-inf stays -inf
  // under bias and penalties).
  std::vector<LogitEdit<Logits>> edits;
  computeLogitEdits<Logits>(row, in, scratch, edits);
  const bool masked = (p.flags & MD_FLAG_TOKEN_MASK) != 0;
  if (!edits.empty() || masked) {
    scratch.editedRow.resize(size_t(n) * sizeof(Bits));
    Bits* copy = reinterpret_cast<Bits*>(scratch.editedRow.data());
    std::memcpy(copy, row, size_t(n) * sizeof(Bits));
    for (const auto& e : edits) copy[e.token] = e.bits;
    if (masked) {
      const Bits refused = Logits::bitsOfKey(Logits::kNegInf);
      for (uint32_t t = 0; t < n; ++t)
        if (!md_mask_allows(in.mask[t >> 5], t)) copy[t] = refused;
    }
    row = copy;
  }

  // Step 3: nothing can be sampled.
  const ScannedRow<Logits> scanned = scanRow<Logits>(row, n, scratch.maxima);
  if (scanned.top == Logits::kNegInf) return MD_NO_TOKEN;
  const uint32_t argmax = firstIndexOfTop(scanned);

  // Step 4: greedy.
  if (p.temperature == 0.0f) return argmax;

  // Step 5: filters, as one threshold on the keys.
  const float filterT = (p.flags & MD_FLAG_UNIT_FILTER_TEMPERATURE) ? 1.0f : p.temperature;
  int32_t tau = Logits::kNegInf;
  int32_t topKFloor = Logits::kNegInf;
  if (p.top_k > 0 && p.top_k < n) {
    topKFloor = kthLargestKey(scanned, p.top_k, scratch.keys);
    tau = topKFloor;
  }
  if (p.top_p < 1.0f) tau = std::max(tau, topPThreshold(scanned, topKFloor, filterT, p.top_p, scratch));
  if (p.min_p > 0.0f) {
    float shift = filterT * md_log_any(p.min_p);
    tau = std::max(tau, keyAtLeast<Logits>(Logits::value(scanned.top) + shift));
  }

  // Step 6: noise and argmax over the survivors.
  NoiseArgmax<Logits> noise(scanned, tau, p.temperature, md_noise_key(p.seed, p.position));
  return noise.run(argmax);
}

bool isFinite(float x) { return std::isfinite(x); }

}  // namespace

const char* checkSamplingInputs(const LogitsRow& row, const SamplingInputs& in) {
  const md_sampling_params& p = in.params;
  if (row.data == nullptr && row.size > 0) return "logits: no data";
  if (row.size == 0) return "logits: the vocabulary size must be at least 1";
  if (p.vocab_size != row.size) return "vocab_size: must equal the length of the logits row";
  if (!isFinite(p.temperature) || p.temperature < 0 || p.temperature > MD_MAX_TEMPERATURE)
    return "temperature: must be a number from 0 to 1e30";
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return "topP: must be in (0, 1]";
  if (!(p.min_p >= 0.0f && p.min_p < 1.0f)) return "minP: must be in [0, 1)";
  if (!isFinite(p.repeat_penalty) || !(p.repeat_penalty > 0))
    return "repeatPenalty.penalty: must be a finite number > 0";
  if (!isFinite(p.frequency_penalty)) return "repeatPenalty.frequencyPenalty: must be finite";
  if (!isFinite(p.presence_penalty)) return "repeatPenalty.presencePenalty: must be finite";
  if (p.flags & ~MD_KNOWN_FLAGS) return "flags: unknown flag bits";
  if ((p.flags & MD_FLAG_TOKEN_MASK) && in.mask == nullptr) return "mask: no data";
  if (p.history_count > 0 && in.history == nullptr) return "history: no data";
  if (p.bias_count > 0 && (in.biasTokens == nullptr || in.biasValues == nullptr)) return "logitBias: no data";
  for (uint32_t i = 0; i < p.bias_count; ++i) {
    float b = in.biasValues[i];
    if (!(isFinite(b) || b == -INFINITY)) return "logitBias: every bias must be finite or -Infinity";
  }
  return nullptr;
}

uint32_t CpuSampler::sample(const LogitsRow& row, const SamplingInputs& in) {
  if (row.format == LogitsFormat::Float16)
    return sampleRow<HalfLogits>(static_cast<const uint16_t*>(row.data), in, scratch_);
  return sampleRow<FloatLogits>(static_cast<const uint32_t*>(row.data), in, scratch_);
}

}  // namespace md
