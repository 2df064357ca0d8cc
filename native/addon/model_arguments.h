// model_arguments.h: a model's config and tensor table as JavaScript hands
// them over (lib/native/contract.ts: NativeModelConfig, NativeTensorEntry),
// checked field by field: a TypeError or RangeError naming the field.
#pragma once
#include <napi.h>

#include <vector>

#include "../core/transformer/model_config.h"
#include "../core/transformer/weights.h"

namespace md::addon {

ModelConfig parseConfig(Napi::Value value);
std::vector<TensorEntry> parseTensors(Napi::Value value);

}  // namespace md::addon
