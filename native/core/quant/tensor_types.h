// tensor_types.h: the GGUF tensor types this package reads, and the one
// definition of each type's block: how many values a block holds and how
// many bytes it takes. The numbers are GGUF's (ggml's type ids), since
// they are read from files; the TypeScript loader gets this table from the
// addon rather than keeping its own.
#pragma once
#include <cstddef>
#include <cstdint>

namespace md {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q8_0 = 8,
  Q8_1 = 9,  // activations only (the partner of Q4_1)
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,  // activations only (the partner of the K types)
  BF16 = 30,
};

struct TensorTypeInfo {
  TensorType type;
  const char* name;
  uint32_t blockValues;  // values per block
  uint32_t blockBytes;   // bytes per block
  bool weight;           // may appear in a model file (false: activations only)
};

// Every type above, in id order.
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
