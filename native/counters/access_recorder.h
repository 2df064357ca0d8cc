// access_recorder.h: what a kernel does to memory, counted on the emulator.
// No Apple GPU runs here, so the design of a kernel (coalesced loads, every
// weight byte read once, no bank conflicts) is shown by counting: the
// kernels are compiled once more with the compiler's thread-sanitizer
// instrumentation, which calls a hook before every load and store
// (tsan_hooks.cpp), and this recorder groups those accesses the way a GPU
// issues them.
//
// A GPU runs one instruction for the 32 lanes of a SIMD group at once. The
// emulator runs each lane on its own, so the k-th execution of one load (one
// code address) by each lane of a SIMD group is taken as one SIMD-group
// instruction: exact for the kernels' uniform control flow, which the
// emulator already checks at every barrier and simd_* call.
//
// Per instruction on device memory: the distinct 128-byte lines it touches
// (a line is what an Apple GPU's memory system moves) and the distinct
// bytes it uses; their ratio is the coalescing efficiency. Per instruction
// on threadgroup memory: the most distinct 4-byte words that fall into one
// of 32 banks (1 for a conflict-free access). The model of the hardware
// (128-byte lines, 32 banks of 4 bytes) is stated here, not measured.
//
// Single-threaded: the counting device runs one threadgroup at a time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace md::counters {

constexpr uint32_t kLineBytes = 128;
constexpr uint32_t kBanks = 32;
constexpr uint32_t kBankBytes = 4;

// One watched buffer's share of the counts.
struct BufferCounts {
  uint64_t bytesRead = 0;          // bytes lanes loaded from it (a word 32 lanes load counts 32 times)
  uint64_t bytesFetched = 0;       // distinct bytes per SIMD-group load, summed: what memory delivered
  uint64_t distinctBytesRead = 0;  // its bytes read at least once
  uint64_t bytesWritten = 0;
  uint64_t loadInstructions = 0;  // SIMD-group loads whose first lane reads it
  uint64_t linesLoaded = 0;       // their distinct 128-byte lines, summed

  // Fetched / distinct: 1 when no byte is fetched by two load instructions.
  double refetches() const { return distinctBytesRead ? double(bytesFetched) / double(distinctBytesRead) : 0; }
};

struct AccessCounts {
  uint64_t deviceBytesRead = 0;  // bytes device loads moved (a lane's 4-byte load: 4)
  uint64_t deviceBytesWritten = 0;
  uint64_t distinctDeviceBytesRead = 0;  // of the watched memory, bytes read at least once
  uint64_t loadInstructions = 0;         // SIMD-group loads from device memory
  uint64_t storeInstructions = 0;
  uint64_t linesLoaded = 0;  // distinct 128-byte lines, summed over the loads
  uint64_t linesStored = 0;
  uint64_t bytesUsedLoading = 0;  // distinct bytes, summed over the loads
  uint64_t bytesUsedStoring = 0;
  uint64_t threadgroupInstructions = 0;  // SIMD-group accesses to threadgroup memory
  uint64_t threadgroupWavefronts = 0;    // their bank passes: equal to the instructions when conflict-free
  std::vector<BufferCounts> buffers;     // per watched buffer, in the order they were watched

  // The share of the lines' bytes the loads used (1: fully coalesced).
  double loadEfficiency() const {
    return linesLoaded ? double(bytesUsedLoading) / (double(linesLoaded) * kLineBytes) : 1;
  }
  double storeEfficiency() const {
    return linesStored ? double(bytesUsedStoring) / (double(linesStored) * kLineBytes) : 1;
  }
  // How many times each watched byte read was read, on average (1: once).
  double rereads() const {
    return distinctDeviceBytesRead ? double(deviceBytesRead) / double(distinctDeviceBytesRead) : 0;
  }
};

// Device memory to count (the buffers a counted dispatch binds). Accesses
// elsewhere (the host's, a fiber's stack) are not device memory.
// Returns the buffer's index in AccessCounts::buffers.
size_t watchDeviceMemory(const void* begin, size_t bytes);
void forgetDeviceMemory();

// Counts the accesses between start() and stop().
void startCounting();
AccessCounts stopCounting();

// Called by the instrumentation hooks: one lane's access from code address `site`.
void recordAccess(const void* address, size_t bytes, bool write, const void* site);

}  // namespace md::counters
