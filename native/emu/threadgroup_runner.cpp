// threadgroup_runner.cpp: the fiber scheduler behind the kernel emulator.
#include "threadgroup_runner.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

namespace md::emu {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStackBytes = 256 * 1024;  // ASan's redzones grow frames
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr size_t kStackBytes = 256 * 1024;
#else
constexpr size_t kStackBytes = 64 * 1024;
#endif
#else
constexpr size_t kStackBytes = 64 * 1024;
#endif

thread_local ThreadgroupRunner* currentRunner = nullptr;

const char* baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

FiberOrder fiberOrderFromEnvironment() {
  const char* value = std::getenv("MD_EMU_FIBER_ORDER");
  if (!value || !*value || std::strcmp(value, "forward") == 0) return FiberOrder::Forward;
  if (std::strcmp(value, "reverse") == 0) return FiberOrder::Reverse;
  if (std::strcmp(value, "shuffled") == 0) return FiberOrder::Shuffled;
  throw std::invalid_argument(std::string("MD_EMU_FIBER_ORDER must be forward, reverse or shuffled, not '") + value +
                              "'");
}

const char* fiberOrderName(FiberOrder order) {
  switch (order) {
    case FiberOrder::Forward: return "forward";
    case FiberOrder::Reverse: return "reverse";
    case FiberOrder::Shuffled: return "shuffled";
  }
  return "?";
}

SimdSumOrder simdSumOrderFromEnvironment() {
  const char* value = std::getenv("MD_EMU_SIMD_SUM");
  if (!value || !*value || std::strcmp(value, "lane-order") == 0) return SimdSumOrder::LaneOrder;
  if (std::strcmp(value, "butterfly") == 0) return SimdSumOrder::Butterfly;
  throw std::invalid_argument(std::string("MD_EMU_SIMD_SUM must be lane-order or butterfly, not '") + value + "'");
}

const char* simdSumOrderName(SimdSumOrder order) {
  return order == SimdSumOrder::Butterfly ? "butterfly" : "lane-order";
}

ThreadgroupRunner::ThreadgroupRunner(FiberOrder order, uint64_t shuffleSeed) : order_(order), rng_(shuffleSeed) {}

ThreadgroupRunner::~ThreadgroupRunner() = default;

ThreadgroupRunner& ThreadgroupRunner::current() { return *currentRunner; }

ThreadgroupRunner* ThreadgroupRunner::currentOrNull() { return currentRunner; }

bool ThreadgroupRunner::holdsThreadgroupMemory(const void* p) const {
  const auto* byte = static_cast<const unsigned char*>(p);
  for (const TgArray& a : tgArrays_)
    if (byte >= a.bytes.get() && byte < a.bytes.get() + a.size) return true;
  return false;
}

void ThreadgroupRunner::prepare(uint32_t threads) {
  if (threads == 0 || threads % kSimdWidth != 0 || threads > 1024)
    throw std::invalid_argument("threads per threadgroup must be a multiple of 32 from 32 to 1024, not " +
                                std::to_string(threads));
  while (lanes_.size() < threads) {
    lanes_.emplace_back();
    lanes_.back().fiber = std::make_unique<Fiber>(kStackBytes);
  }
  for (uint32_t i = 0; i < threads; ++i) {
    Lane& lane = lanes_[i];
    lane.runner = this;
    lane.index = i;
    lane.state = State::Runnable;
    lane.fiber->start(&laneMain, &lane, lane.abandoned);
    lane.abandoned = false;
  }
  simdSlots_.resize(threads / kSimdWidth);
  schedule_.resize(threads);
  for (uint32_t i = 0; i < threads; ++i) schedule_[i] = order_ == FiberOrder::Reverse ? threads - 1 - i : i;
  // Threadgroup memory starts as garbage on a GPU: a kernel that reads
  // before writing sees a pattern, not a convenient zero.
  for (TgArray& a : tgArrays_) std::memset(a.bytes.get(), 0xA5, a.size);
  tgBytesThisRun_ = 0;
}

void ThreadgroupRunner::laneMain(void* arg) {
  Lane& lane = *static_cast<Lane*>(arg);
  ThreadgroupRunner& r = *lane.runner;
  const uint32_t i = lane.index;
  r.fn_(r.context_, ThreadIds{i, r.group_, r.threads_, i % kSimdWidth, i / kSimdWidth, r.groups_});
  lane.state = State::Done;
}

void ThreadgroupRunner::run(LaneFunction fn, const void* context, uint32_t group, uint32_t groups, uint32_t threads) {
  prepare(threads);
  fn_ = fn;
  context_ = context;
  group_ = group;
  groups_ = groups;
  threads_ = threads;
  ThreadgroupRunner* outer = currentRunner;
  currentRunner = this;
  struct Restore {
    ThreadgroupRunner* outer;
    ~Restore() { currentRunner = outer; }
  } restore{outer};
  for (;;) {
    runRound();
    if (resolveSimdgroups()) continue;
    bool anyLive = false;
    for (uint32_t i = 0; i < threads_; ++i) anyLive |= lanes_[i].state != State::Done;
    if (!anyLive) return;
    releaseBarrierOrFault();
  }
}

void ThreadgroupRunner::runRound() {
  if (order_ == FiberOrder::Shuffled) {
    for (uint32_t i = threads_ - 1; i > 0; --i) std::swap(schedule_[i], schedule_[splitmix(rng_) % (i + 1)]);
  }
  for (uint32_t i : schedule_) {
    Lane& lane = lanes_[i];
    if (lane.state != State::Runnable) continue;
    running_ = i;
    lane.fiber->resume();
    if (!pendingFault_.empty()) {
      std::string what;
      what.swap(pendingFault_);
      fault(what);
    }
  }
}

bool ThreadgroupRunner::resolveSimdgroups() {
  bool resolved = false;
  for (uint32_t g = 0; g < threads_ / kSimdWidth; ++g) {
    Lane* lanes = &lanes_[g * kSimdWidth];
    uint32_t active = 0, waiting = 0;
    const Site* site = nullptr;
    for (uint32_t l = 0; l < kSimdWidth; ++l) {
      if (lanes[l].state == State::Done) continue;
      active |= 1u << l;
      if (lanes[l].state != State::AtSimd) continue;
      waiting |= 1u << l;
      if (!site) site = &lanes[l].site;
      if (!(lanes[l].site == *site)) {
        std::vector<uint32_t> all;
        for (uint32_t k = 0; k < kSimdWidth; ++k)
          if (lanes[k].state == State::AtSimd) all.push_back(g * kSimdWidth + k);
        fault("simdgroup " + std::to_string(g) +
              " diverged: its lanes wait at different simdgroup operations: " + describe(all));
      }
    }
    if (!waiting || waiting != active) continue;  // nobody waiting, or some lanes elsewhere
    SimdSlots& s = simdSlots_[g];
    s.op(s.in, s.args, active, s.out);
    for (uint32_t l = 0; l < kSimdWidth; ++l)
      if (active & (1u << l)) lanes[l].state = State::Runnable;
    resolved = true;
  }
  return resolved;
}

void ThreadgroupRunner::releaseBarrierOrFault() {
  std::vector<uint32_t> waiting;
  uint32_t done = 0;
  bool sameSite = true, anySimd = false;
  const Site* site = nullptr;
  for (uint32_t i = 0; i < threads_; ++i) {
    const Lane& lane = lanes_[i];
    if (lane.state == State::Done) {
      ++done;
      continue;
    }
    waiting.push_back(i);
    anySimd |= lane.state == State::AtSimd;
    if (!site) site = &lane.site;
    sameSite &= lane.site == *site;
  }
  if (anySimd || !sameSite)
    fault("divergent synchronisation (a GPU would hang): threads wait at different places: " + describe(waiting));
  if (done > 0)
    fault("deadlock (a GPU would hang): " + std::string(site->what) + " at " + baseName(site->file) + ":" +
          std::to_string(site->line) + " was reached by " + std::to_string(waiting.size()) + " of " +
          std::to_string(threads_) + " threads; " + std::to_string(done) + " had already returned");
  for (uint32_t i : waiting) lanes_[i].state = State::Runnable;
}

// "threadgroup_barrier at sampling.metal:120 (threads 0-511), ...": each
// site with the threads waiting there, as ranges.
std::string ThreadgroupRunner::describe(const std::vector<uint32_t>& lanes) const {
  std::map<std::string, std::vector<uint32_t>> bySite;
  for (uint32_t i : lanes) {
    const Site& s = lanes_[i].site;
    bySite[std::string(s.what) + " at " + baseName(s.file) + ":" + std::to_string(s.line)].push_back(i);
  }
  std::ostringstream out;
  bool firstSite = true;
  for (const auto& [where, ids] : bySite) {
    out << (firstSite ? "" : "; ") << where << " (" << ids.size() << (ids.size() == 1 ? " thread: " : " threads: ");
    firstSite = false;
    for (size_t a = 0; a < ids.size();) {
      size_t b = a;
      while (b + 1 < ids.size() && ids[b + 1] == ids[b] + 1) ++b;
      out << (a ? "," : "") << ids[a];
      if (b > a) out << "-" << ids[b];
      a = b + 1;
    }
    out << ")";
  }
  return out.str();
}

void ThreadgroupRunner::fault(const std::string& what) {
  for (uint32_t i = 0; i < threads_; ++i)
    if (lanes_[i].state != State::Done) lanes_[i].abandoned = true;
  pendingFault_.clear();
  throw KernelFault("threadgroup " + std::to_string(group_) + ": " + what);
}

// Inside a fiber an exception cannot unwind to the scheduler: the fault
// waits in pendingFault_ and the scheduler throws it as soon as this fiber
// yields. The fiber is never resumed, so nothing that needs destroying may
// be alive on its stack here.
void ThreadgroupRunner::parkFaultedFiber() {
  Lane& lane = lanes_[running_];
  lane.state = State::Faulted;
  lane.fiber->yield();
  std::abort();  // never resumed
}

void ThreadgroupRunner::barrier(const char* file, int line) {
  Lane& lane = lanes_[running_];
  lane.state = State::AtBarrier;
  lane.site = {"threadgroup_barrier", file, line};
  lane.fiber->yield();
}

void ThreadgroupRunner::nonUniformSimdgroupCall(const char* what) {
  pendingFault_ = std::string(what) +
                  ": the 32 lanes of a SIMD group must all call it, with the same pointer and stride (Metal's rule)";
  parkFaultedFiber();
}

uint64_t ThreadgroupRunner::simd(uint64_t value, uint32_t arg, SimdOp op, const char* what, const char* file,
                                 int line) {
  const uint32_t i = running_;
  Lane& lane = lanes_[i];
  SimdSlots& s = simdSlots_[i / kSimdWidth];
  s.in[i % kSimdWidth] = value;
  s.args[i % kSimdWidth] = arg;
  s.op = op;
  lane.state = State::AtSimd;
  lane.site = {what, file, line};
  lane.fiber->yield();
  return s.out[i % kSimdWidth];
}

void* ThreadgroupRunner::threadgroupArray(const void* tag, size_t bytes, const char* file, int line) {
  auto it = std::find_if(tgArrays_.begin(), tgArrays_.end(), [&](const TgArray& a) { return a.tag == tag; });
  if (it == tgArrays_.end()) {
    tgArrays_.push_back({tag, std::make_unique<unsigned char[]>(bytes), bytes});
    std::memset(tgArrays_.back().bytes.get(), 0xA5, bytes);
    it = tgArrays_.end() - 1;
  }
  // Counted once per run, when thread 0 declares it.
  if (running_ == 0) {
    tgBytesThisRun_ += bytes;
    if (tgBytesThisRun_ > kThreadgroupMemoryLimit) {
      pendingFault_ = "threadgroup memory exceeds " + std::to_string(kThreadgroupMemoryLimit) + " bytes at " +
                      baseName(file) + ":" + std::to_string(line) + " (" + std::to_string(tgBytesThisRun_) +
                      " bytes declared)";
      parkFaultedFiber();
    }
  }
  return it->bytes.get();
}

}  // namespace md::emu
