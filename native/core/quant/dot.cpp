// dot.cpp: picking the dot table for this CPU.
#include "dot.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace md {

TileDot DotTable::forType(TensorType weights) const {
  switch (weights) {
    case TensorType::F32: return f32;
    case TensorType::F16: return f16;
    case TensorType::BF16: return bf16;
    case TensorType::Q4_0: return q4_0;
    case TensorType::Q4_1: return q4_1;
    case TensorType::Q5_0: return q5_0;
    case TensorType::Q5_1: return q5_1;
    case TensorType::Q8_0: return q8_0;
    case TensorType::Q2_K: return q2_k;
    case TensorType::Q3_K: return q3_k;
    case TensorType::Q4_K: return q4_k;
    case TensorType::Q5_K: return q5_k;
    case TensorType::Q6_K: return q6_k;
    case TensorType::IQ4_NL: return iq4_nl;
    case TensorType::IQ4_XS: return iq4_xs;
    default: return nullptr;
  }
}

TileDot DotTable::repackedFor(TensorType weights) const {
  switch (weights) {
    case TensorType::Q4_0: return q4_0x8;
    case TensorType::Q8_0: return q8_0x8;
    case TensorType::Q4_K: return q4_kx8;
    case TensorType::Q5_K: return q5_kx8;
    case TensorType::Q6_K: return q6_kx8;
    default: return nullptr;
  }
}

float DotTable::dot(TensorType weights, const void* w, const void* a, int64_t n) const {
  float out;
  forType(weights)(static_cast<const uint8_t*>(w), 0, 1, static_cast<const uint8_t*>(a), 0, 1, n, &out, 1);
  return out;
}

namespace {

// The fastest vector table, whatever MD_CPU_ISA says.
const DotTable& fastestVectorTable() {
  if (const DotTable* t = amxDotTable()) return *t;
  if (const DotTable* t = avx512DotTable()) return *t;
  if (const DotTable* t = avxVnniDotTable()) return *t;
  if (const DotTable* t = avx2DotTable()) return *t;
  if (const DotTable* t = neonI8mmDotTable()) return *t;
  if (const DotTable* t = neonDotTable()) return *t;
  return *portableDotTable();
}

}  // namespace

const DotTable* blasDotTable() {
  static const DotTable* table = []() -> const DotTable* {
    const char* name;
    const FloatMatrixProduct product = linkedBlasProduct(&name);
    if (product == nullptr) return nullptr;
    static DotTable withLibrary = fastestVectorTable();
    withLibrary.isa = name;
    withLibrary.floatMatrix = product;
    return &withLibrary;
  }();
  return table;
}

const DotTable& dotTableNamed(const char* isa) {
  const DotTable* table = nullptr;
  if (std::strcmp(isa, "accelerate") == 0 || std::strcmp(isa, "openblas") == 0) {
    table = blasDotTable();
    if (table != nullptr && std::strcmp(table->isa, isa) != 0) table = nullptr;
  } else if (std::strcmp(isa, "portable") == 0)
    table = portableDotTable();
  else if (std::strcmp(isa, "avx2") == 0)
    table = avx2DotTable();
  else if (std::strcmp(isa, "avx-vnni") == 0)
    table = avxVnniDotTable();
  else if (std::strcmp(isa, "avx512") == 0)
    table = avx512DotTable();
  else if (std::strcmp(isa, "amx") == 0)
    table = amxDotTable();
  else if (std::strcmp(isa, "neon") == 0)
    table = neonDotTable();
  else if (std::strcmp(isa, "neon-i8mm") == 0)
    table = neonI8mmDotTable();
  else
    throw std::invalid_argument(std::string("MD_CPU_ISA: expected portable, avx2, avx-vnni, avx512, amx, neon, "
                                            "neon-i8mm, accelerate or openblas, got ") +
                                isa);
  if (table == nullptr)
    throw std::invalid_argument(std::string("MD_CPU_ISA: ") + isa + " is not available on this CPU or build");
  return *table;
}

const DotTable& bestDotTable() {
  if (const char* forced = std::getenv("MD_CPU_ISA"); forced != nullptr && *forced != '\0')
    return dotTableNamed(forced);
  // Accelerate, as llama.cpp's Mac build; OpenBLAS only when named (a
  // Linux test build has it to run this code, not to be faster).
  if (const DotTable* t = blasDotTable(); t != nullptr && std::strcmp(t->isa, "accelerate") == 0) return *t;
  return fastestVectorTable();
}

}  // namespace md
