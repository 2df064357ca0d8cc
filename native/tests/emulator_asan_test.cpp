// emulator_asan_test.cpp: a kernel that reads past the end of a buffer is
// reported by AddressSanitizer with the kernel's source line. Built with
// -fsanitize=address in every configuration (see CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstring>

#include "emulated_device.h"
#include "md_sampling.h"

namespace md::emu::testing {
extern const EmulatedKernel kFaultKernels[];
extern const size_t kFaultKernelCount;
}  // namespace md::emu::testing

namespace {

void readPastTheEnd() {
  md::emu::EmulatedDevice device(md::emu::testing::kFaultKernels, md::emu::testing::kFaultKernelCount, 1);
  const uint32_t vocab = 1024;
  auto in = device.newBuffer(vocab * 4);
  auto out = device.newBuffer(vocab * 4);
  std::memset(in->contents(), 0, vocab * 4);
  md_argmax_params params{};
  params.vocab_size = vocab;
  auto cb = device.newCommandBuffer();
  cb->setPipeline(device.pipeline("md_test_out_of_bounds"));
  cb->setBuffer(0, *in, 0);
  cb->setBytes(1, &params, sizeof params);
  cb->setBuffer(2, *out, 0);
  cb->dispatch(1, 1024);
  cb->commit();
  cb->wait();
}

TEST(EmulatorUnderAsan, AnOutOfBoundsReadIsReportedAtTheKernelLine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(readPastTheEnd(), "heap-buffer-overflow(.|\n)*faults.metal");
}

}  // namespace
