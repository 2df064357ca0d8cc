// access_recorder.cpp: grouping lanes' accesses into SIMD-group
// instructions, and counting lines, bytes and bank passes.
#include "access_recorder.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "threadgroup_runner.h"

namespace md::counters {
namespace {

struct Watched {
  uintptr_t begin, end;
  std::vector<uint8_t> read;  // one flag per byte
  BufferCounts counts;
};

// One lane's k-th execution of a site, as the instruction it belongs to.
struct InstructionKey {
  const void* site;
  uint32_t simdgroup;
  uint32_t execution;
  bool write;
  bool threadgroup;
  bool operator==(const InstructionKey& o) const {
    return site == o.site && simdgroup == o.simdgroup && execution == o.execution && write == o.write &&
           threadgroup == o.threadgroup;
  }
};
struct InstructionHash {
  size_t operator()(const InstructionKey& k) const {
    size_t h = std::hash<const void*>()(k.site);
    h = h * 1000003u ^ k.simdgroup;
    h = h * 1000003u ^ k.execution;
    return h * 4u + (k.write ? 2u : 0u) + (k.threadgroup ? 1u : 0u);
  }
};
struct LaneSiteKey {
  const void* site;
  uint32_t thread;
  bool write;
  bool operator==(const LaneSiteKey& o) const { return site == o.site && thread == o.thread && write == o.write; }
};
struct LaneSiteHash {
  size_t operator()(const LaneSiteKey& k) const {
    return (std::hash<const void*>()(k.site) * 1000003u ^ k.thread) * 2u + (k.write ? 1u : 0u);
  }
};

struct Recorder {
  bool counting = false;
  std::vector<Watched> watched;
  AccessCounts counts;
  uint32_t group = ~0u;
  std::unordered_map<LaneSiteKey, uint32_t, LaneSiteHash> executions;
  std::unordered_map<InstructionKey, std::vector<std::pair<uintptr_t, uint32_t>>, InstructionHash> instructions;

  Watched* deviceRange(uintptr_t a) {
    for (Watched& w : watched)
      if (a >= w.begin && a < w.end) return &w;
    return nullptr;
  }

  // Folds one threadgroup's instructions into the counts.
  void fold() {
    for (auto& [key, accesses] : instructions) {
      if (key.threadgroup) {
        // Per bank, the distinct words: a bank serves one word per pass.
        std::vector<uintptr_t> words;
        for (auto [address, bytes] : accesses)
          for (uintptr_t w = address / kBankBytes; w <= (address + bytes - 1) / kBankBytes; ++w) words.push_back(w);
        std::sort(words.begin(), words.end());
        words.erase(std::unique(words.begin(), words.end()), words.end());
        uint32_t perBank[kBanks] = {};
        uint32_t passes = 1;
        for (uintptr_t w : words) passes = std::max(passes, ++perBank[w % kBanks]);
        counts.threadgroupInstructions += 1;
        counts.threadgroupWavefronts += passes;
        continue;
      }
      std::vector<uintptr_t> lines, bytes;
      for (auto [address, size] : accesses) {
        for (uintptr_t l = address / kLineBytes; l <= (address + size - 1) / kLineBytes; ++l) lines.push_back(l);
        for (uintptr_t b = address; b < address + size; ++b) bytes.push_back(b);
      }
      std::sort(lines.begin(), lines.end());
      const uint64_t distinctLines = uint64_t(std::unique(lines.begin(), lines.end()) - lines.begin());
      std::sort(bytes.begin(), bytes.end());
      bytes.erase(std::unique(bytes.begin(), bytes.end()), bytes.end());
      const uint64_t distinctBytes = bytes.size();
      if (!key.write)
        for (uintptr_t b : bytes)
          if (Watched* w = deviceRange(b)) w->counts.bytesFetched += 1;
      if (key.write) {
        counts.storeInstructions += 1;
        counts.linesStored += distinctLines;
        counts.bytesUsedStoring += distinctBytes;
      } else {
        counts.loadInstructions += 1;
        counts.linesLoaded += distinctLines;
        counts.bytesUsedLoading += distinctBytes;
        if (Watched* w = deviceRange(accesses.front().first)) {
          w->counts.loadInstructions += 1;
          w->counts.linesLoaded += distinctLines;
        }
      }
    }
    instructions.clear();
    executions.clear();
  }
};

Recorder& recorder() {
  static Recorder* r = new Recorder;  // never destroyed: hooks may run during exit
  return *r;
}

}  // namespace

size_t watchDeviceMemory(const void* begin, size_t bytes) {
  const auto b = reinterpret_cast<uintptr_t>(begin);
  recorder().watched.push_back({b, b + bytes, std::vector<uint8_t>(bytes, 0), {}});
  return recorder().watched.size() - 1;
}

void forgetDeviceMemory() { recorder().watched.clear(); }

void startCounting() {
  Recorder& r = recorder();
  r.counts = AccessCounts{};
  r.instructions.clear();
  r.executions.clear();
  r.group = ~0u;
  for (Watched& w : r.watched) {
    std::fill(w.read.begin(), w.read.end(), 0);
    w.counts = BufferCounts{};
  }
  r.counting = true;
}

AccessCounts stopCounting() {
  Recorder& r = recorder();
  r.fold();
  r.counting = false;
  for (Watched& w : r.watched) {
    w.counts.distinctBytesRead = uint64_t(std::count(w.read.begin(), w.read.end(), uint8_t(1)));
    r.counts.distinctDeviceBytesRead += w.counts.distinctBytesRead;
    r.counts.buffers.push_back(w.counts);
  }
  return r.counts;
}

void recordAccess(const void* address, size_t bytes, bool write, const void* site) {
  Recorder& r = recorder();
  if (!r.counting || bytes == 0) return;
  emu::ThreadgroupRunner* runner = emu::ThreadgroupRunner::currentOrNull();
  if (!runner) return;  // host code, not a kernel
  const auto a = reinterpret_cast<uintptr_t>(address);
  Watched* device = r.deviceRange(a);
  const bool threadgroup = !device && runner->holdsThreadgroupMemory(address);
  if (!device && !threadgroup) return;  // a lane's own memory
  if (runner->runningGroup() != r.group) {
    r.fold();  // threadgroups run one after another: one at a time in memory
    r.group = runner->runningGroup();
  }
  const uint32_t thread = runner->runningThread();
  const uint32_t execution = r.executions[LaneSiteKey{site, thread, write}]++;
  r.instructions[InstructionKey{site, thread / 32, execution, write, threadgroup}].push_back({a, uint32_t(bytes)});
  if (!device) return;
  if (write) {
    r.counts.deviceBytesWritten += bytes;
    device->counts.bytesWritten += bytes;
  } else {
    r.counts.deviceBytesRead += bytes;
    device->counts.bytesRead += bytes;
    const uintptr_t end = std::min<uintptr_t>(a + bytes, device->end);
    std::fill(device->read.begin() + (a - device->begin), device->read.begin() + (end - device->begin), uint8_t(1));
  }
}

}  // namespace md::counters
