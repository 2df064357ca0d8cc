// threadgroup_runner.h: runs one threadgroup of a kernel as cooperative
// fibers, one per GPU thread, and finds the synchronisation bugs a GPU
// would turn into hangs or wrong answers.
//
// Fibers switch only at synchronisation points (threadgroup_barrier and
// simdgroup operations), so the fiber order decides which thread's writes
// another sees when a barrier is missing. Tests run every kernel forward,
// reversed and shuffled (MD_EMU_FIBER_ORDER); a missing barrier then shows
// up as a wrong result in at least one order.
#pragma once
#include "../core/device.h"
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fiber.h"

namespace md::emu {

// A kernel bug the emulator caught: barrier divergence, a deadlock, too
// much threadgroup memory. The message names the barrier's file and line.
class KernelFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class FiberOrder { Forward, Reverse, Shuffled };

// MD_EMU_FIBER_ORDER: forward (default), reverse or shuffled.
// Throws std::invalid_argument naming the variable for any other value.
FiberOrder fiberOrderFromEnvironment();
const char* fiberOrderName(FiberOrder order);

// The order simd_sum adds its 32 lanes in. Metal leaves it to the
// hardware; the kernels' exact results must not depend on it (they build
// the sums that must be bit-exact from shuffles in a fixed order), so the
// tests run under both: lane order (0, 1, 2, ...) and a butterfly (lanes
// 16 apart, then 8, 4, 2, 1: the shape of a hardware reduction tree).
// MD_EMU_SIMD_SUM: lane-order (default) or butterfly; std::invalid_argument
// naming the variable for any other value.
enum class SimdSumOrder { LaneOrder, Butterfly };
SimdSumOrder simdSumOrderFromEnvironment();
const char* simdSumOrderName(SimdSumOrder order);

// The Metal thread-position attributes every kernel receives (see
// MD_THREAD_IDS in metal/md_kernel.h), in the same order.
struct ThreadIds {
  uint32_t tid;      // thread_position_in_threadgroup
  uint32_t group;    // threadgroup_position_in_grid
  uint32_t threads;  // threads_per_threadgroup
  uint32_t lane;     // thread_index_in_simdgroup
  uint32_t simd;     // simdgroup_index_in_threadgroup
  uint32_t groups;   // threadgroups_per_grid
};

constexpr uint32_t kSimdWidth = 32;
constexpr size_t kThreadgroupMemoryLimit = ::md::kMaxThreadgroupMemory;  // Apple GPUs' limit

// A simdgroup operation: every active lane's input (its bits in a uint64)
// and argument in, every lane's result out. `active` has bit l set when
// lane l takes part (lanes that returned early do not).
using SimdOp = void (*)(const uint64_t* in, const uint32_t* args, uint32_t active, uint64_t* out);

// One invocation of the kernel for the thread `ids` (the emulated device
// binds buffers into `context`).
using LaneFunction = void (*)(const void* context, const ThreadIds& ids);

class ThreadgroupRunner {
 public:
  explicit ThreadgroupRunner(FiberOrder order, uint64_t shuffleSeed = 1);
  ~ThreadgroupRunner();

  // Runs threadgroup `group` with `threads` threads (a multiple of 32, at
  // most 1024). Throws KernelFault when the kernel misuses barriers.
  void run(LaneFunction fn, const void* context, uint32_t group, uint32_t groups, uint32_t threads);

  // The runner of the fiber calling this (only valid inside a kernel).
  static ThreadgroupRunner& current();
  // The same, or nullptr outside a kernel (the access counters ask).
  static ThreadgroupRunner* currentOrNull();
  // Inside a kernel: the thread running (its tid) and its threadgroup.
  uint32_t runningThread() const { return running_; }
  uint32_t runningGroup() const { return group_; }
  // Whether `p` is in one of this run's threadgroup arrays.
  bool holdsThreadgroupMemory(const void* p) const;

  // How simd_sum adds (set per dispatch: runners are pooled between devices).
  void setSimdSumOrder(SimdSumOrder order) { sumOrder_ = order; }
  SimdSumOrder simdSumOrder() const { return sumOrder_; }

  // Called by the compat header from inside a kernel.
  void barrier(const char* file, int line);
  uint64_t simd(uint64_t value, uint32_t arg, SimdOp op, const char* what, const char* file, int line);
  void* threadgroupArray(const void* tag, size_t bytes, const char* file, int line);
  // A simdgroup matrix operation (`what`) whose lanes did not all call it
  // with the same arguments: the run fails with a KernelFault naming it.
  // A C string, not a std::string: the faulted fiber's stack is never
  // unwound, so nothing on it may own memory.
  [[noreturn]] void nonUniformSimdgroupCall(const char* what);

 private:
  enum class State : uint8_t { Runnable, AtBarrier, AtSimd, Done, Faulted };
  struct Site {
    const char* what = nullptr;  // "threadgroup_barrier", "simd_sum", ...
    const char* file = nullptr;
    int line = 0;
    bool operator==(const Site& o) const { return line == o.line && what == o.what && file == o.file; }
  };
  struct Lane {
    ThreadgroupRunner* runner = nullptr;
    uint32_t index = 0;
    std::unique_ptr<Fiber> fiber;
    State state = State::Runnable;
    Site site;
    bool abandoned = false;  // left mid-kernel by a fault
  };
  struct SimdSlots {
    uint64_t in[kSimdWidth];
    uint64_t out[kSimdWidth];
    uint32_t args[kSimdWidth];
    SimdOp op;
  };
  struct TgArray {
    const void* tag;
    std::unique_ptr<unsigned char[]> bytes;
    size_t size;
  };

  static void laneMain(void* self);
  void prepare(uint32_t threads);
  void runRound();
  bool resolveSimdgroups();
  void releaseBarrierOrFault();
  std::string describe(const std::vector<uint32_t>& lanes) const;
  [[noreturn]] void fault(const std::string& what);
  [[noreturn]] void parkFaultedFiber();

  FiberOrder order_;
  SimdSumOrder sumOrder_ = SimdSumOrder::LaneOrder;
  uint64_t rng_;
  std::vector<Lane> lanes_;
  std::vector<uint32_t> schedule_;
  std::vector<SimdSlots> simdSlots_;
  std::vector<TgArray> tgArrays_;
  size_t tgBytesThisRun_ = 0;
  std::string pendingFault_;
  uint32_t threads_ = 0;
  uint32_t group_ = 0;
  uint32_t groups_ = 1;
  uint32_t running_ = 0;  // lane whose fiber is executing
  LaneFunction fn_ = nullptr;
  const void* context_ = nullptr;
};

}  // namespace md::emu
