// exact_arithmetic.cpp: the start-up probe of a device's float arithmetic.
#include "exact_arithmetic.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "md_sampling.h"

namespace md {
namespace {

std::string bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", bits);
  return text;
}

}  // namespace

void requireExactArithmetic(Device& device) {
  // a = b = 1 + 2^-12: a * b = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 (a tie,
  // to even), and adding c = -(1 + 2^-11) gives 0. Fused, nothing is
  // rounded before the addition, and the result is 2^-24.
  const float a = 1.0f + 0x1p-12f;
  const float in[3] = {a, a, -(1.0f + 0x1p-11f)};
  const float expected = md_mul_add_rounded_twice(in[0], in[1], in[2]);
  auto inputs = device.newBuffer(sizeof in);
  auto output = device.newBuffer(sizeof(float));
  std::memcpy(inputs->contents(), in, sizeof in);
  std::memset(output->contents(), 0xFF, sizeof(float));  // NaN until the kernel writes
  auto commands = device.newCommandBuffer();
  commands->setPipeline(device.pipeline("md_fp_contract_probe"));
  commands->setBuffer(0, *inputs, 0);
  commands->setBuffer(1, *output, 0);
  commands->dispatch(1, 32);
  commands->commit();
  commands->wait();
  float got;
  std::memcpy(&got, output->contents(), sizeof got);
  if (std::memcmp(&got, &expected, sizeof got) != 0) {
    throw DeviceError(
        device.name() +
        " computes a * b + c with one rounding (a fused multiply-add) although the kernels ask for two (" +
        "#pragma fp contract(off), metal/md_exact_float.h): the probe gave " + bitsOf(got) + ", the CPU " +
        bitsOf(expected) + ". Its noise and sampling would differ from the CPU's in the last bit, so it is not used");
  }
}

}  // namespace md
