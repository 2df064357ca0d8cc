// random_weights.h: random weight matrices in every GGUF type the kernels
// read, for the kernel tests (transformer kernels, FlashSampling).
#pragma once
#include <cstdint>
#include <random>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "float16.h"
#include "md_blocks.h"
#include "quant/convert_rows.h"
#include "quant/tensor_types.h"

// Random rows of `type`: random quants, scales of a trained model's size.
inline std::vector<uint8_t> randomRows(md::TensorType type, uint32_t rows, uint32_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::uniform_int_distribution<int> byte(0, 255);
  const uint32_t blocks = rows * (cols / md::tensorTypeInfo(type).blockValues);  // a float "block" is one value
  std::vector<uint8_t> out;
  auto append = [&](const void* p, size_t n) { out.insert(out.end(), (const uint8_t*)p, (const uint8_t*)p + n); };
  // A K block: random bytes, then sane float16 scales where its d and dmin are.
  auto kBlock = [&](auto block) {
    auto* bytes = reinterpret_cast<uint8_t*>(&block);
    for (size_t i = 0; i < sizeof block; ++i) bytes[i] = uint8_t(byte(rng));
    block.d = md::halfFromFloat(std::fabs(normal(rng)) / 16);
    if constexpr (std::is_same_v<decltype(block), md_block_q2_k> || std::is_same_v<decltype(block), md_block_q4_k> ||
                  std::is_same_v<decltype(block), md_block_q5_k>)
      block.dmin = md::halfFromFloat(std::fabs(normal(rng)) / 16);
    append(&block, sizeof block);
  };
  for (uint32_t b = 0; b < blocks; ++b) {
    switch (type) {
      case md::TensorType::BF16: {
        const uint16_t v = md::bf16FromFloat(normal(rng));
        append(&v, 2);
      } break;
      case md::TensorType::Q4_1: {
        md_block_q4_1 q;
        q.d = md::halfFromFloat(std::fabs(normal(rng)) / 4);
        q.m = md::halfFromFloat(normal(rng));
        for (auto& v : q.qs) v = uint8_t(byte(rng));
        append(&q, sizeof q);
        break;
      }
      case md::TensorType::Q5_0: {
        md_block_q5_0 q;
        q.d = md::halfFromFloat(std::fabs(normal(rng)) / 8);
        for (auto& v : q.qh) v = uint8_t(byte(rng));
        for (auto& v : q.qs) v = uint8_t(byte(rng));
        append(&q, sizeof q);
        break;
      }
      case md::TensorType::Q5_1: {
        md_block_q5_1 q;
        q.d = md::halfFromFloat(std::fabs(normal(rng)) / 8);
        q.m = md::halfFromFloat(normal(rng));
        for (auto& v : q.qh) v = uint8_t(byte(rng));
        for (auto& v : q.qs) v = uint8_t(byte(rng));
        append(&q, sizeof q);
        break;
      }
      case md::TensorType::IQ4_NL: {
        md_block_iq4_nl q;
        q.d = md::halfFromFloat(std::fabs(normal(rng)) / 64);
        for (auto& v : q.qs) v = uint8_t(byte(rng));
        append(&q, sizeof q);
        break;
      }
      case md::TensorType::Q2_K: kBlock(md_block_q2_k{}); break;
      case md::TensorType::Q3_K: kBlock(md_block_q3_k{}); break;
      case md::TensorType::IQ4_XS: kBlock(md_block_iq4_xs{}); break;
      case md::TensorType::Q4_K: kBlock(md_block_q4_k{}); break;
      case md::TensorType::Q5_K: kBlock(md_block_q5_k{}); break;
      case md::TensorType::Q6_K: kBlock(md_block_q6_k{}); break;
      case md::TensorType::F32: {
        const float v = normal(rng);
        append(&v, 4);
      } break;
      case md::TensorType::F16: {
        const uint16_t v = md::halfFromFloat(normal(rng));
        append(&v, 2);
      } break;
      case md::TensorType::Q8_0: {
        md_block_q8_0 q;
        q.d = md::halfFromFloat(std::fabs(normal(rng)) / 64);
        for (auto& v : q.qs) v = int8_t(byte(rng) - 128);
        append(&q, sizeof q);
        break;
      }
      case md::TensorType::Q4_0: {
        md_block_q4_0 q;
        q.d = md::halfFromFloat(std::fabs(normal(rng)) / 4);
        for (auto& v : q.qs) v = uint8_t(byte(rng));
        append(&q, sizeof q);
        break;
      }
      default: throw std::logic_error("randomRows: no random blocks for this type");
    }
  }
  return out;
}

// Whether rows of `cols` values are possible in `type`: a whole number of
// blocks (float rows: any length).
inline bool rowsFit(md::TensorType type, uint32_t cols) { return cols % md::tensorTypeInfo(type).blockValues == 0; }

// Every weight type and its kernel suffix (md_matvec_*, md_embed_rows_*), from the list in md_blocks.h.
struct TypeCase {
  md::TensorType type;
  const char* suffix;
};
#define MD_TEST_TYPE_CASE(NAME, suffix, id, values, bytes) {md::TensorType::NAME, #suffix},
inline const TypeCase kWeightTypes[] = {MD_WEIGHT_TYPES(MD_TEST_TYPE_CASE)};
#undef MD_TEST_TYPE_CASE
