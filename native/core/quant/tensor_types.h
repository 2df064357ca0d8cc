// tensor_types.h: the GGUF tensor types this package reads, and the one
// definition of each type's block: how many values a block holds and how
// many bytes it takes. The numbers are GGUF's (ggml's type ids), since
// they are read from files; the TypeScript loader gets this table from the
// addon rather than keeping its own.
#pragma once
#include <cstddef>
#include <cstdint>

#include "md_blocks.h"  // MD_WEIGHT_TYPES, MD_ACTIVATION_TYPES: the list of types

namespace md {

#define MD_TENSOR_TYPE_ENUM(NAME, suffix, id, values, bytes) NAME = id,
enum class TensorType : uint32_t { MD_WEIGHT_TYPES(MD_TENSOR_TYPE_ENUM) MD_ACTIVATION_TYPES(MD_TENSOR_TYPE_ENUM) };
#undef MD_TENSOR_TYPE_ENUM

struct TensorTypeInfo {
  TensorType type;
  const char* name;
  uint32_t blockValues;      // values per block
  uint32_t blockBytes;       // bytes per block
  bool weight;               // may appear in a model file (false: activations only)
  const char* kernelSuffix;  // the GPU kernels' suffix (md_matvec_<suffix>...); nullptr for activation-only types
};

// Every type of MD_WEIGHT_TYPES, then of MD_ACTIVATION_TYPES.
const TensorTypeInfo* tensorTypes(size_t* count);
// nullptr when `id` is not a type this package reads.
const TensorTypeInfo* findTensorType(uint32_t id);
const TensorTypeInfo& tensorTypeInfo(TensorType type);

// Bytes of one row of `values` values; 0 when values is not a whole number
// of blocks.
inline size_t rowBytes(const TensorTypeInfo& t, uint64_t values) {
  if (values % t.blockValues != 0) return 0;
  return size_t(values / t.blockValues) * t.blockBytes;
}

}  // namespace md
