// model_arguments.h: a model's config and tensor table as JavaScript hands
// them over (lib/native/contract.ts: NativeModelConfig, NativeTensorEntry),
// checked field by field: a TypeError or RangeError naming the field.
#pragma once
#include <napi.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "../core/transformer/model_config.h"
#include "../core/transformer/weights.h"

namespace md::addon {

ModelConfig parseConfig(Napi::Value value);
std::vector<TensorEntry> parseTensors(Napi::Value value);

// options[name] as an integer from min to 2^32 - 1; `fallback` when it is
// absent and one is given. A RangeError "<method>: options.<name> must be ...".
uint32_t uint32Option(Napi::Object options, const char* method, const char* name, uint32_t min,
                      std::optional<uint32_t> fallback = std::nullopt);

}  // namespace md::addon
