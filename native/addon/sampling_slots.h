// sampling_slots.h: the order of the numbers in the Float64Array that
// carries one sampling step's scalar options from TypeScript. The addon
// exports these names with their indices (`samplingSlots`), and lib/ reads
// them from there, so the order is written down once.
#pragma once

namespace md::addon {

#define MD_SAMPLING_SLOTS(X) \
  X(temperature)             \
  X(topK)                    \
  X(topP)                    \
  X(minP)                    \
  X(seed)                    \
  X(position)                \
  X(unitFilterTemperature)   \
  X(repeatPenalty)           \
  X(frequencyPenalty)        \
  X(presencePenalty)         \
  X(lastTokens)

enum SamplingSlot : unsigned {
#define MD_SLOT_ENUM(name) kSlot_##name,
  MD_SAMPLING_SLOTS(MD_SLOT_ENUM)
#undef MD_SLOT_ENUM
      kSamplingSlotCount
};

}  // namespace md::addon
