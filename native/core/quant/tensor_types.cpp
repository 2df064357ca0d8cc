// tensor_types.cpp: the table of tensor_types.h, from the one list of types (metal/md_blocks.h).
#include "tensor_types.h"

#include <stdexcept>

#include "blocks.h"

namespace md {
namespace {

#define MD_WEIGHT_TYPE_ROW(NAME, suffix, id, values, bytes) \
  {TensorType::NAME, #NAME, values, uint32_t(bytes), true, #suffix},
#define MD_ACTIVATION_TYPE_ROW(NAME, suffix, id, values, bytes) \
  {TensorType::NAME, #NAME, values, uint32_t(bytes), false, nullptr},
constexpr TensorTypeInfo kTypes[] = {MD_WEIGHT_TYPES(MD_WEIGHT_TYPE_ROW) MD_ACTIVATION_TYPES(MD_ACTIVATION_TYPE_ROW)};
#undef MD_WEIGHT_TYPE_ROW
#undef MD_ACTIVATION_TYPE_ROW

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
