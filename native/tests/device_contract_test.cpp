// device_contract_test.cpp: what device.h promises about completions,
// errors and lifetimes, on the emulated device (which keeps Metal's
// contract, so the addon's use of it is tested here), and chains split into
// command buffers of a bounded size.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dispatch_table.h"
#include "emulated_device.h"

namespace md::emu::testing {
extern const EmulatedKernel kFaultKernels[];
extern const size_t kFaultKernelCount;
extern const EmulatedKernel kChainProbeKernel;
}  // namespace md::emu::testing

namespace {

using md::emu::EmulatedDevice;

// Waits for one completion, from any thread.
class Outcome {
 public:
  md::Completion callback() {
    return [this](const std::string& error) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = error;
      ++calls_;
      cv_.notify_all();
    };
  }
  std::string wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return calls_ > 0; });
    return error_;
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string error_;
  int calls_ = 0;
};

std::unique_ptr<EmulatedDevice> faultDevice() {
  return std::make_unique<EmulatedDevice>(md::emu::testing::kFaultKernels, md::emu::testing::kFaultKernelCount);
}

// Commits `kernel` over one 1024-thread group writing `out`.
std::unique_ptr<md::CommandBuffer> commitKernel(md::Device& device, const char* kernel, md::Buffer& out,
                                                md::Completion onCompleted = {}) {
  auto commands = device.newCommandBuffer();
  commands->setPipeline(device.pipeline(kernel));
  commands->setBuffer(0, out, 0);
  commands->dispatch(1, 1024);
  commands->commit(std::move(onCompleted));
  return commands;
}

TEST(DeviceContract, ACompletionHearsSuccessAndErrorsAndTheDeviceDoesNotKeepThem) {
  auto device = faultDevice();
  auto out = device->newBuffer(1024 * 4 * 6);
  Outcome ok, failed;
  commitKernel(*device, "md_test_published", *out, ok.callback());
  commitKernel(*device, "md_test_early_return", *out, failed.callback());
  EXPECT_EQ(ok.wait(), "");
  EXPECT_NE(failed.wait().find("md_test_early_return"), std::string::npos) << failed.wait();
  // Reported to its completion: nothing is left for the next command buffer.
  EXPECT_NO_THROW(commitKernel(*device, "md_test_published", *out)->wait());
  EXPECT_EQ(ok.calls() + failed.calls(), 2);
}

TEST(DeviceContract, WaitThrowsTheCommandBuffersOwnErrorOnceAndTheNextCommandBufferIsClean) {
  auto device = faultDevice();
  auto out = device->newBuffer(1024 * 4 * 6);
  auto failing = commitKernel(*device, "md_test_early_return", *out);
  try {
    failing->wait();
    ADD_FAILURE() << "wait() returned for a failed command buffer";
  } catch (const md::DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("md_test_early_return"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(device->newCommandBuffer());  // not reported a second time
  EXPECT_NO_THROW(commitKernel(*device, "md_test_published", *out)->wait());
}

TEST(DeviceContract, DroppingTheDeviceTheCommandBufferAndTheBuffersWithWorkInFlightIsSafe) {
  // md_test_published writes 1024 words; the only references to the device,
  // the command buffer and the buffer are dropped while it is in flight
  // (its completion waits for the gate, so it is in flight for sure).
  Outcome outcome;
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  std::vector<uint32_t> seen;
  std::weak_ptr<md::Buffer> watch;
  {
    auto device = faultDevice();
    auto out = device->newBuffer(1024 * 4);
    std::memset(out->contents(), 0, 1024 * 4);
    watch = out;
    auto commands = device->newCommandBuffer();
    commands->setPipeline(device->pipeline("md_test_published"));
    commands->setBuffer(0, *out, 0);
    commands->dispatch(1, 1024);
    commands->commit([&, opened, out = out.get()](const std::string& error) {
      opened.wait();
      // The buffer is still alive here: the command buffer holds it.
      const auto* words = static_cast<const uint32_t*>(out->contents());
      seen.assign(words, words + 1024);
      outcome.callback()(error);
    });
    commands.reset();
    out.reset();
    device.reset();  // returns at once: the queue thread finishes the work
    EXPECT_FALSE(watch.expired()) << "the command buffer in flight must keep its buffer";
  }
  gate.set_value();
  EXPECT_EQ(outcome.wait(), "");
  ASSERT_EQ(seen.size(), 1024u);
  EXPECT_NE(std::count(seen.begin(), seen.end(), 0u), 1024) << "the kernel ran";
  for (int i = 0; i < 1000 && !watch.expired(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(watch.expired()) << "the buffer is released once the work completed";
}

TEST(DeviceContract, ACompletionMayDropTheLastReferenceToTheDevice) {
  Outcome outcome;
  auto* device = faultDevice().release();
  auto out = device->newBuffer(1024 * 4);
  auto commands = device->newCommandBuffer();
  commands->setPipeline(device->pipeline("md_test_published"));
  commands->setBuffer(0, *out, 0);
  commands->dispatch(1, 1024);
  commands->commit([&, device](const std::string& error) {
    delete device;  // on the queue thread itself
    outcome.callback()(error);
  });
  EXPECT_EQ(outcome.wait(), "");
}

TEST(DeviceContract, CommittingAfterTheDeviceIsGoneIsAnError) {
  auto device = faultDevice();
  auto out = device->newBuffer(1024 * 4);
  auto commands = device->newCommandBuffer();
  commands->setPipeline(device->pipeline("md_test_published"));
  commands->setBuffer(0, *out, 0);
  commands->dispatch(1, 1024);
  device.reset();
  try {
    commands->commit();
    ADD_FAILURE() << "a command buffer of a destroyed device was committed";
  } catch (const md::DeviceError& e) {
    EXPECT_STREQ(e.what(), "commit: the emulated device was destroyed");
  }
}

// Memory wrapped without a copy: page-aligned only (Metal's rule, kept here
// so a misaligned range fails on Linux too), and its owner lives exactly
// as long as the buffer.
TEST(DeviceContract, WrappedMemoryMustBePageAlignedAndKeepsItsOwnerUntilFreed) {
  md::emu::EmulatedDevice device;
  const size_t page = md::osPageSize();
  auto memory = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(std::aligned_alloc(page, 2 * page)), std::free);
  std::weak_ptr<uint8_t> watch = memory;
  try {
    device.wrapMemory(memory.get() + 32, 64, memory);
    ADD_FAILURE() << "misaligned memory was wrapped";
  } catch (const md::DeviceError& e) {
    EXPECT_EQ(std::string(e.what()), "wrapMemory: the memory is not aligned to the " + std::to_string(page) +
                                         "-byte page (Metal's newBufferWithBytesNoCopy needs it)");
  }
  memory.get()[5] = 42;
  auto buffer = device.wrapMemory(memory.get(), page + 10, memory);
  EXPECT_EQ(buffer->length(), page + 10);
  EXPECT_EQ(static_cast<uint8_t*>(buffer->contents())[5], 42);  // the memory itself, not a copy
  memory.reset();
  EXPECT_FALSE(watch.expired());
  buffer.reset();
  EXPECT_TRUE(watch.expired());
}

// ---- chains over several command buffers ------------------------------------

TEST(ChainSplit, StepsPerCommandBufferKeepEachUnderTheDispatchBound) {
  md::DispatchTable table;
  EXPECT_EQ(md::chainStepsPerCommandBuffer(table), md::kMaxChainDispatches);
  auto device = faultDevice();
  auto word = device->newBuffer(4);
  md::DispatchCmd cmd;
  cmd.pipeline = &device->pipeline("md_test_published");
  cmd.buffers[0] = md::BufferBinding{word.get(), 0, 0};
  cmd.bufferCount = 1;
  table.retain(word);
  for (int i = 0; i < 3; ++i) table.add(cmd, "c" + std::to_string(i));
  EXPECT_EQ(md::chainStepsPerCommandBuffer(table), md::kMaxChainDispatches / 3);
  md::DispatchTable huge;
  for (uint32_t i = 0; i < md::kMaxChainDispatches + 5; ++i) huge.add(cmd, "c");
  EXPECT_EQ(md::chainStepsPerCommandBuffer(huge), 1u);  // a step is never cut
}

// A probe command (chain_probe.metal: output[0] = input[0] + 1, logged).
md::DispatchCmd probeCommand(md::Device& device, md::Buffer& input, md::Buffer& output, md::Buffer& log,
                             md::Patch patch) {
  md::DispatchCmd cmd;
  cmd.pipeline = &device.pipeline("md_test_chain_probe");
  cmd.buffers[0] = md::BufferBinding{&input, 0, 0};
  cmd.buffers[1] = md::BufferBinding{&output, 0, 2};
  cmd.buffers[2] = md::BufferBinding{&log, 0, 3};
  cmd.bufferCount = 3;
  cmd.paramsSize = 8;
  cmd.paramsIndex = 1;
  cmd.patch = patch;
  return cmd;
}

TEST(ChainSplit, AChainOverSeveralCommandBuffersRunsEveryStepInOrder) {
  // Two commands a step: scratch = seq[p] + 1 (token offset), then
  // seq[p + 1] = scratch + 1 (argmax output). 2,048 steps fit in a command
  // buffer, so 5,000 steps take three, each reading what the one before
  // wrote.
  std::vector<md::emu::EmulatedKernel> kernels = {md::emu::testing::kChainProbeKernel};
  EmulatedDevice device(kernels.data(), kernels.size());
  const uint32_t steps = 5000;
  auto seq = device.newBuffer((steps + 1) * 4);
  auto scratch = device.newBuffer(4);
  auto log = device.newBuffer(4 * (1 + 3 * 2 * steps));
  std::memset(seq->contents(), 0, seq->length());
  std::memset(log->contents(), 0, log->length());
  static_cast<uint32_t*>(seq->contents())[0] = 40;
  md::DispatchTable table;
  table.add(probeCommand(device, *seq, *scratch, *log, {md::PatchRule::TokenOffset, 0, {md::kNoField, md::kNoField}}),
            "read");
  table.add(probeCommand(device, *scratch, *seq, *log, {md::PatchRule::ArgmaxOutput, 2, {md::kNoField, md::kNoField}}),
            "write");
  ASSERT_EQ(md::chainStepsPerCommandBuffer(table), 2048u);
  Outcome outcome;
  md::commitChain(device, table, 0, steps, outcome.callback());
  EXPECT_EQ(outcome.wait(), "");
  EXPECT_EQ(outcome.calls(), 1) << "one completion for the whole chain";
  const auto* s = static_cast<const uint32_t*>(seq->contents());
  for (uint32_t p = 0; p <= steps; ++p) ASSERT_EQ(s[p], 40 + 2 * p) << "token " << p;
  EXPECT_EQ(static_cast<const uint32_t*>(log->contents())[0], 2 * steps) << "every command of every step ran once";
}

TEST(ChainSplit, NothingCommittedWhenTheChainDoesNotFitAndTheCompletionIsNotCalled) {
  std::vector<md::emu::EmulatedKernel> kernels = {md::emu::testing::kChainProbeKernel};
  EmulatedDevice device(kernels.data(), kernels.size());
  auto seq = device.newBuffer(8 * 4);
  auto log = device.newBuffer(4 * 64);
  md::DispatchTable table;
  table.add(probeCommand(device, *seq, *seq, *log, {md::PatchRule::ArgmaxOutput, 2, {md::kNoField, md::kNoField}}),
            "probe");
  Outcome outcome;
  EXPECT_THROW(md::commitChain(device, table, 0, 8, outcome.callback()), md::ChainError);  // token 8 is past the end
  EXPECT_EQ(outcome.calls(), 0);
}

}  // namespace

namespace {

// Hundreds of thousands of command buffers on one device keep nothing alive
// after they ran, and destroying the device after them is immediate (each
// used to hold the one before it: memory grew per step, and the teardown
// recursed once per buffer until the stack overflowed).
TEST(DeviceContract, ThreeHundredThousandCommandBuffersLeaveNothingBehind) {
  auto device = faultDevice();
  auto out = device->newBuffer(32 * 4);
  std::weak_ptr<md::Buffer> watch = out;
  for (int i = 0; i < 300000; ++i) {
    auto commands = device->newCommandBuffer();
    if (i % 150 == 0) {  // 2,000 of them run a kernel and hold the buffer until it ran
      commands->setPipeline(device->pipeline("md_test_published"));
      commands->setBuffer(0, *out, 0);
      commands->dispatch(1, 32);
    }
    commands->commit();
    if (i % 50000 == 49999) commands->wait();
  }
  auto last = device->newCommandBuffer();
  last->commit();
  last->wait();
  out.reset();
  EXPECT_TRUE(watch.expired()) << "a command buffer that ran still holds its buffer";
  device.reset();
}

}  // namespace
