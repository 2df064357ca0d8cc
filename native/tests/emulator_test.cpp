// emulator_test.cpp: the emulated device catches the kernel bugs a GPU
// would turn into hangs or wrong answers, names where they are, and keeps
// the first asynchronous error for the next wait.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "emulated_device.h"
#include "exact_arithmetic.h"
#include "simd_layout_probe.h"
#include "float16.h"

namespace md::emu::testing {
extern const EmulatedKernel kFaultKernels[];
extern const size_t kFaultKernelCount;
extern const EmulatedKernel kSimdgroupMatrixKernel;
}  // namespace md::emu::testing

namespace {

using md::emu::EmulatedDevice;
using md::emu::testing::kFaultKernelCount;
using md::emu::testing::kFaultKernels;

const char* const kOrders[] = {"forward", "reverse", "shuffled"};

// Sets an environment variable for its lifetime, and puts back what it
// was however the scope ends (a device's construction may throw).
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    const char* before = std::getenv(name);
    had_ = before != nullptr;
    if (had_) saved_ = before;
    setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (had_)
      setenv(name_, saved_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string saved_;
};

// A device with the fault kernels (or `kernels`) and a given fiber order.
std::unique_ptr<EmulatedDevice> deviceWithOrder(const char* order, unsigned workers = 0,
                                                const md::emu::EmulatedKernel* kernels = kFaultKernels,
                                                size_t kernelCount = kFaultKernelCount) {
  ScopedEnvironment fiberOrder("MD_EMU_FIBER_ORDER", order);
  return std::make_unique<EmulatedDevice>(kernels, kernelCount, workers);
}

// Runs kernel `name` with one output buffer of `words` uints; returns the
// output, or throws the device's error.
std::vector<uint32_t> run(md::Device& device, const char* name, uint32_t groups, uint32_t threads, size_t words) {
  auto out = device.newBuffer(words * 4);
  std::fill_n(static_cast<uint32_t*>(out->contents()), words, 0u);
  auto cb = device.newCommandBuffer();
  cb->setPipeline(device.pipeline(name));
  cb->setBuffer(0, *out, 0);
  cb->dispatch(groups, threads);
  cb->commit();
  cb->wait();
  const auto* p = static_cast<const uint32_t*>(out->contents());
  return std::vector<uint32_t>(p, p + words);
}

std::string errorOf(md::Device& device, const char* name, uint32_t threads = 1024) {
  try {
    run(device, name, 1, threads, threads * 6);
  } catch (const md::DeviceError& e) {
    return e.what();
  }
  return "";
}

// "faults.metal:N" for the n-th line (0-based) containing `text` after the
// line that declares `kernelName`.
std::string siteOf(const char* kernelName, const char* text, int n = 0) {
  std::ifstream file(MD_TEST_KERNELS_DIR "/faults.metal");
  std::string line;
  bool inKernel = false;
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.find(std::string("kernel void ") + kernelName + "(") != std::string::npos) inKernel = true;
    if (inKernel && line.find(text) != std::string::npos && n-- == 0) return "faults.metal:" + std::to_string(number);
  }
  ADD_FAILURE() << "no '" << text << "' in " << kernelName;
  return "?";
}

TEST(Emulator, APublishedValueBehindABarrierIsSeenInEveryOrder) {
  for (const char* order : kOrders) {
    auto device = deviceWithOrder(order, 2);
    auto out = run(*device, "md_test_published", 16, 1024, 16 * 1024);  // 16 threadgroups on 2 OS threads
    EXPECT_EQ(std::count(out.begin(), out.end(), 42u), long(out.size())) << order;
  }
}

TEST(Emulator, AMissingBarrierGivesAWrongResultInSomeFiberOrder) {
  int wrongOrders = 0;
  for (const char* order : kOrders) {
    auto device = deviceWithOrder(order);
    auto out = run(*device, "md_test_missing_barrier", 1, 1024, 1024);
    wrongOrders += std::count(out.begin(), out.end(), 42u) != long(out.size());
  }
  EXPECT_GE(wrongOrders, 1);
}

TEST(Emulator, DivergentBarriersAreReportedWithTheirLines) {
  auto device = deviceWithOrder("forward");
  std::string error = errorOf(*device, "md_test_divergent_barrier");
  EXPECT_NE(error.find("md_test_divergent_barrier: threadgroup 0: divergent synchronisation"), std::string::npos)
      << error;
  EXPECT_NE(error.find(siteOf("md_test_divergent_barrier", "threadgroup_barrier", 0) + " (512 threads: 0-511)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find(siteOf("md_test_divergent_barrier", "threadgroup_barrier", 1) + " (512 threads: 512-1023)"),
            std::string::npos)
      << error;
}

// simd_sum in lane order and in a butterfly, on lanes where the orders
// round differently: 1e8 then 31 ones. In lane order each + 1 is lost
// (float's step at 1e8 is 8); the butterfly adds the ones among
// themselves first (2, 4, 8, 16) and keeps 24 of them.
TEST(Emulator, SimdSumAddsInLaneOrderOrInAButterflyAsMdEmuSimdSumSays) {
  auto sumWith = [](const char* order) {
    ScopedEnvironment sumOrder("MD_EMU_SIMD_SUM", order);
    auto device = std::make_unique<EmulatedDevice>(kFaultKernels, kFaultKernelCount, 1);
    auto in = device->newBuffer(32 * 4);
    auto out = device->newBuffer(32 * 4);
    auto* values = static_cast<float*>(in->contents());
    values[0] = 1e8f;
    for (int l = 1; l < 32; ++l) values[l] = 1.0f;
    auto cb = device->newCommandBuffer();
    cb->setPipeline(device->pipeline("md_test_simd_float_sum"));
    cb->setBuffer(0, *in, 0);
    cb->setBuffer(1, *out, 0);
    cb->dispatch(1, 32);
    cb->commit();
    cb->wait();
    const auto* sums = static_cast<const float*>(out->contents());
    for (int l = 1; l < 32; ++l) EXPECT_EQ(sums[l], sums[0]) << order << " lane " << l;
    return std::make_pair(sums[0], device->name());
  };
  const auto [inLaneOrder, laneName] = sumWith("lane-order");
  const auto [inButterfly, butterflyName] = sumWith("butterfly");
  EXPECT_EQ(inLaneOrder, 1e8f);
  EXPECT_EQ(inButterfly, 100000024.0f);
  EXPECT_EQ(butterflyName.find(", butterfly sums)") != std::string::npos, true) << butterflyName;
  EXPECT_EQ(laneName.find("butterfly"), std::string::npos) << laneName;
  try {
    sumWith("random");
    ADD_FAILURE() << "accepted";
  } catch (const md::DeviceError& e) {
    EXPECT_STREQ(e.what(), "MD_EMU_SIMD_SUM must be lane-order or butterfly, not 'random'");
  }
}

// A fault names the dispatch's label (a table command's, a sampling
// launch's) with the kernel; the label is for that dispatch only.
TEST(Emulator, AFaultNamesTheLabelOfTheDispatchThatFailed) {
  auto device = deviceWithOrder("forward");
  auto out = device->newBuffer(1024 * 6 * 4);
  auto errorWithLabel = [&](const char* label) -> std::string {
    auto cb = device->newCommandBuffer();
    cb->setPipeline(device->pipeline("md_test_published"));
    cb->setBuffer(0, *out, 0);
    cb->labelNextDispatch("blk.0.fine");
    cb->dispatch(1, 1024);
    cb->setPipeline(device->pipeline("md_test_divergent_barrier"));
    if (label) cb->labelNextDispatch(label);
    cb->dispatch(1, 1024);
    cb->commit();
    try {
      cb->wait();
    } catch (const md::DeviceError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(errorWithLabel("blk.3.attention")
                .rfind("blk.3.attention (md_test_divergent_barrier): threadgroup 0: divergent synchronisation", 0),
            0u);
  EXPECT_EQ(errorWithLabel(nullptr).rfind("md_test_divergent_barrier: threadgroup 0: divergent synchronisation", 0),
            0u);
}

TEST(Emulator, AnEarlyReturnBeforeABarrierIsADeadlockNotAHang) {
  for (const char* order : kOrders) {
    auto device = deviceWithOrder(order);
    std::string error = errorOf(*device, "md_test_early_return");
    EXPECT_NE(error.find("deadlock (a GPU would hang): threadgroup_barrier at " +
                         siteOf("md_test_early_return", "threadgroup_barrier") +
                         " was reached by 1023 of 1024 threads; 1 had already returned"),
              std::string::npos)
        << error;
  }
}

TEST(Emulator, DivergentSimdgroupOperationsAreReported) {
  auto device = deviceWithOrder("reverse");
  std::string error = errorOf(*device, "md_test_divergent_simd");
  EXPECT_NE(error.find("simdgroup 0 diverged"), std::string::npos) << error;
  EXPECT_NE(error.find("simd_sum at " + siteOf("md_test_divergent_simd", "simd_sum") + " (16 threads: 0-15)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("simd_max at"), std::string::npos) << error;
}

// Runs md_test_simdgroup_matrix (simdgroup_matrix.metal) with 64 threads
// (two SIMD groups; the second returns); `scattered` plants the bug. The
// product, or the error.
std::string simdgroupMatrix(md::Device& device, uint32_t scattered, std::vector<float>& product) {
  auto out = device.newBuffer(64 * 4);
  auto cb = device.newCommandBuffer();
  cb->setPipeline(device.pipeline("md_test_simdgroup_matrix"));
  cb->setBuffer(0, *out, 0);
  cb->setBytes(1, &scattered, 4);
  cb->dispatch(1, 64);
  cb->commit();
  try {
    cb->wait();
  } catch (const md::DeviceError& e) {
    return e.what();
  }
  const auto* p = static_cast<const float*>(out->contents());
  product.assign(p, p + 64);
  return "";
}

TEST(Emulator, SimdgroupMatricesMultiplyAndNonUniformArgumentsAreReported) {
  for (const char* order : kOrders) {
    auto device = deviceWithOrder(order, 0, &md::emu::testing::kSimdgroupMatrixKernel, 1);
    std::vector<float> product;
    ASSERT_EQ(simdgroupMatrix(*device, 0, product), "") << order;
    for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(product[i], 2.0f * float(i / 8 + 1)) << order << " element " << i;
    const std::string error = simdgroupMatrix(*device, 1, product);
    EXPECT_NE(error.find("simdgroup_load: the 32 lanes of a SIMD group must all call it, with the same pointer and "
                         "stride (Metal's rule)"),
              std::string::npos)
        << order << ": " << error;
  }
}

TEST(Emulator, ThreadgroupMemoryBeyondTheGpuLimitIsReported) {
  auto device = deviceWithOrder("forward");
  std::string error = errorOf(*device, "md_test_too_much_threadgroup_memory");
  EXPECT_NE(error.find("threadgroup memory exceeds 32768 bytes at " +
                       siteOf("md_test_too_much_threadgroup_memory", "MD_THREADGROUP_ARRAY") + " (36000 bytes"),
            std::string::npos)
      << error;
}

TEST(Emulator, SimdgroupOperationsFollowTheirDefinitions) {
  for (const char* order : kOrders) {
    auto device = deviceWithOrder(order);
    const uint32_t threads = 64;
    auto out = run(*device, "md_test_simd_ops", 1, threads, threads * 6);
    for (uint32_t tid = 0; tid < threads; ++tid) {
      uint32_t lane = tid % 32, simd = tid / 32;
      const uint32_t* o = &out[tid * 6];
      EXPECT_EQ(o[0], 496u);                                         // 0 + 1 + ... + 31
      EXPECT_EQ(o[1], 31u);                                          // max of lane * 7 % 32
      EXPECT_EQ(o[2], lane + 3 < 32 ? (lane + 3) * 10 : lane * 10);  // out of range: own value
      EXPECT_EQ(o[3], lane ^ 5u);
      EXPECT_EQ(o[4], lane * (lane - 1) / 2);
      EXPECT_EQ(o[5], 7 + simd * 100);
    }
  }
}

TEST(Emulator, TheFirstAsynchronousErrorIsRaisedAtTheNextWaitThenCleared) {
  auto device = deviceWithOrder("forward");
  auto out = device->newBuffer(1024 * 4);
  auto failing = device->newCommandBuffer();
  failing->setPipeline(device->pipeline("md_test_early_return"));
  failing->setBuffer(0, *out, 0);
  failing->dispatch(1, 1024);
  failing->commit();  // not waited for
  // The error surfaces at the next synchronisation: making the next command
  // buffer if the failing one has finished by then, else waiting for it.
  try {
    auto second = device->newCommandBuffer();
    second->setPipeline(device->pipeline("md_test_published"));
    second->setBuffer(0, *out, 0);
    second->dispatch(1, 1024);
    second->commit();
    second->wait();
    ADD_FAILURE() << "the first command buffer's error was lost";
  } catch (const md::DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("md_test_early_return"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(run(*device, "md_test_published", 1, 1024, 1024));  // reported once
}

TEST(Emulator, EncodingMistakesAreErrorsAtOnce) {
  auto device = deviceWithOrder("forward");
  EXPECT_THROW(
      {
        try {
          device->pipeline("md_no_such_kernel");
        } catch (const md::DeviceError& e) {
          EXPECT_STREQ(e.what(), "no kernel named 'md_no_such_kernel' (emulated device)");
          throw;
        }
      },
      md::DeviceError);
  auto cb = device->newCommandBuffer();
  cb->setPipeline(device->pipeline("md_test_out_of_bounds"));
  try {
    cb->dispatch(1, 64);
    ADD_FAILURE() << "unbound buffers were accepted";
  } catch (const md::DeviceError& e) {
    EXPECT_STREQ(e.what(), "md_test_out_of_bounds: takes 3 buffers, but 0 were bound");
  }
  EXPECT_THROW(cb->dispatch(1, 100), md::DeviceError);  // not a multiple of 32
  // Metal's threadgroup memory lengths: multiples of 16, at most 32 KB.
  EXPECT_NO_THROW(cb->setThreadgroupMemory(0, 48));
  // Threadgroup memory never stands in for a buffer the kernel reads.
  try {
    cb->dispatch(1, 64);
    ADD_FAILURE() << "threadgroup memory for a kernel without threadgroup parameters was accepted";
  } catch (const md::DeviceError& e) {
    EXPECT_STREQ(e.what(), "md_test_out_of_bounds: takes 0 threadgroup memory arguments, but 1 were set");
  }
  for (size_t bad : {size_t(24), size_t(32784)}) {
    try {
      cb->setThreadgroupMemory(0, bad);
      ADD_FAILURE() << bad << " bytes of threadgroup memory were accepted";
    } catch (const md::DeviceError& e) {
      EXPECT_EQ(std::string(e.what()), "setThreadgroupMemory(0): threadgroup memory of " + std::to_string(bad) +
                                           " bytes: Metal takes a multiple of 16 bytes, at most 32768");
    }
  }
}

TEST(Emulator, AnInvalidFiberOrderIsAnErrorNamingTheVariable) {
  try {
    deviceWithOrder("sideways");
    ADD_FAILURE() << "accepted";
  } catch (const md::DeviceError& e) {
    EXPECT_STREQ(e.what(), "MD_EMU_FIBER_ORDER must be forward, reverse or shuffled, not 'sideways'");
  }
}

}  // namespace

namespace {

// The start-up probe passes on the emulator's own kernels, which are built
// with contraction on and FMA instructions: md_exact_float.h keeps them
// unfused. A probe kernel that fuses (the planted mistake) is refused.
TEST(ExactArithmetic, TheEmulatedKernelsRoundEveryOperationAndAFusingDeviceIsRefused) {
  EmulatedDevice exact;
  EXPECT_NO_THROW(md::requireExactArithmetic(exact));

  auto fusing = deviceWithOrder("forward");
  try {
    md::requireExactArithmetic(*fusing);
    FAIL() << "a device that fuses a * b + c was accepted";
  } catch (const md::DeviceError& e) {
    EXPECT_EQ(std::string(e.what()),
              fusing->name() +
                  " computes a * b + c with one rounding (a fused multiply-add) although the kernels ask for two "
                  "(#pragma fp contract(off), metal/md_exact_float.h): the probe gave 0x33800000, the CPU 0x00000000. "
                  "Its noise and sampling would differ from the CPU's in the last bit, so it is not used");
  }
}

// The emulator numbers threads as Metal documents (simd_index * 32 + lane
// == tid); a device that interleaves them (the planted probe) is refused,
// naming the first thread that differs.
TEST(SimdLayout, TheEmulatorNumbersThreadsAsTheKernelsAssumeAndAnInterleavingDeviceIsRefused) {
  EmulatedDevice plain;
  EXPECT_NO_THROW(md::requireSimdLayout(plain));

  auto interleaving = deviceWithOrder("forward");
  try {
    md::requireSimdLayout(*interleaving);
    FAIL() << "a device that interleaves its SIMD groups was accepted";
  } catch (const md::DeviceError& e) {
    EXPECT_EQ(std::string(e.what()),
              interleaving->name() +
                  " numbers its SIMD groups otherwise than the kernels assume: thread 1 of 1024 is lane 0 of SIMD "
                  "group 1 (expected lane 1 of SIMD group 0), so its reductions would mix threads up; it is not used");
  }
}

}  // namespace

namespace {

// What Metal gives for half arithmetic, computed here from the definition
// (round to half after each operation) with float16.h's exact conversions.
TEST(Emulator, HalfArithmeticRoundsToHalfAfterEveryOperationAsMetalDoes) {
  auto device = deviceWithOrder("forward");
  auto toHalf = [](float f) { return md::halfFromFloat(f); };
  auto round = [](float f) { return md::halfToFloat(md::halfFromFloat(f)); };
  const uint16_t in[4] = {toHalf(1024.0f), toHalf(0.5f), toHalf(3.0f), toHalf(0.1f)};
  auto input = device->newBuffer(sizeof in);
  std::memcpy(input->contents(), in, sizeof in);
  auto output = device->newBuffer(7 * 4);
  auto cb = device->newCommandBuffer();
  cb->setPipeline(device->pipeline("md_test_half_arithmetic"));
  cb->setBuffer(0, *input, 0);
  cb->setBuffer(1, *output, 0);
  cb->dispatch(1, 32);
  cb->commit();
  cb->wait();
  const auto* out = static_cast<const float*>(output->contents());
  const float tenth = md::halfToFloat(in[3]);
  EXPECT_EQ(out[0], 1024.0f) << "1024 + 0.5 + 0.5 in half rounds twice (float once would give 1025)";
  EXPECT_EQ(out[1], 1024.25f) << "half + float is float";
  EXPECT_EQ(out[2], round(tenth * 3.0f));
  EXPECT_EQ(out[3], round(3.0f / tenth));
  EXPECT_EQ(out[4], 1022.0f);
  EXPECT_EQ(out[5], -tenth);
  EXPECT_EQ(out[6], round(tenth * 3.0f));
  EXPECT_NE(round(tenth * 3.0f), tenth * 3.0f) << "the case distinguishes half from float";
}

}  // namespace
