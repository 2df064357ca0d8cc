// tensor_types.cpp: the table of tensor_types.h.
#include "tensor_types.h"

#include <stdexcept>

#include "blocks.h"

namespace md {
namespace {

constexpr TensorTypeInfo kTypes[] = {
    {TensorType::F32, "F32", 1, 4, true},
    {TensorType::F16, "F16", 1, 2, true},
    {TensorType::Q4_0, "Q4_0", blocks::kBlock, sizeof(blocks::Q4_0), true},
    {TensorType::Q4_1, "Q4_1", blocks::kBlock, sizeof(blocks::Q4_1), true},
    {TensorType::Q5_0, "Q5_0", blocks::kBlock, sizeof(blocks::Q5_0), true},
    {TensorType::Q8_0, "Q8_0", blocks::kBlock, sizeof(blocks::Q8_0), true},
    {TensorType::Q8_1, "Q8_1", blocks::kBlock, sizeof(blocks::Q8_1), false},
    {TensorType::Q4_K, "Q4_K", blocks::kSuperBlock, sizeof(blocks::Q4_K), true},
    {TensorType::Q5_K, "Q5_K", blocks::kSuperBlock, sizeof(blocks::Q5_K), true},
    {TensorType::Q6_K, "Q6_K", blocks::kSuperBlock, sizeof(blocks::Q6_K), true},
    {TensorType::Q8_K, "Q8_K", blocks::kSuperBlock, sizeof(blocks::Q8_K), false},
    {TensorType::BF16, "BF16", 1, 2, true},
};

}  // namespace

const TensorTypeInfo* tensorTypes(size_t* count) {
  *count = sizeof kTypes / sizeof kTypes[0];
  return kTypes;
}

const TensorTypeInfo* findTensorType(uint32_t id) {
  for (const TensorTypeInfo& t : kTypes)
    if (uint32_t(t.type) == id) return &t;
  return nullptr;
}

const TensorTypeInfo& tensorTypeInfo(TensorType type) {
  const TensorTypeInfo* t = findTensorType(uint32_t(type));
  if (t == nullptr) throw std::logic_error("tensorTypeInfo: unknown type");
  return *t;
}

}  // namespace md
