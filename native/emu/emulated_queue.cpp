// emulated_queue.cpp: the queue thread, and running one dispatch with its
// threadgroups spread over OS threads.
#include "emulated_queue.h"

#include <algorithm>
#include <atomic>

namespace md::emu {
namespace {

// A runner holds 1,024 fiber stacks, each a memory mapping with a guard
// page: thousands of mappings. Devices borrow runners from this process-wide
// pool and give them back when they go, so opening and disposing devices
// neither maps and unmaps them each time nor runs out of mappings. Never
// destroyed: a device's queue thread may return its runners at exit.
class RunnerPool {
 public:
  static RunnerPool& instance() {
    static RunnerPool* pool = new RunnerPool;
    return *pool;
  }

  std::unique_ptr<ThreadgroupRunner> take(FiberOrder order, uint64_t seed) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& idle = idle_[int(order)];
      if (!idle.empty()) {
        auto runner = std::move(idle.back());
        idle.pop_back();
        return runner;
      }
    }
    return std::make_unique<ThreadgroupRunner>(order, seed);
  }

  void give(FiberOrder order, std::vector<std::unique_ptr<ThreadgroupRunner>>& runners) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& idle = idle_[int(order)];
    for (auto& runner : runners)
      if (idle.size() < kMaxIdle) idle.push_back(std::move(runner));
    runners.clear();  // beyond kMaxIdle: unmapped here
  }

 private:
  static constexpr size_t kMaxIdle = 16;  // a few devices' worth, per fiber order
  std::mutex mutex_;
  std::vector<std::unique_ptr<ThreadgroupRunner>> idle_[3];  // by FiberOrder
};

}  // namespace

EmulatedDevice::Queue::~Queue() { RunnerPool::instance().give(order_, runners_); }

std::string EmulatedSubmission::waitUntilDone() {
  std::unique_lock<std::mutex> lock(mutex);
  finished.wait(lock, [this] { return done; });
  return error;
}

EmulatedDevice::Queue::Queue(FiberOrder order, SimdSumOrder sumOrder, unsigned workers)
    : order_(order), sumOrder_(sumOrder), workers_(workers) {}

void EmulatedDevice::Queue::start() {
  thread_ = std::thread([self = shared_from_this()] { self->loop(); });
}

void EmulatedDevice::Queue::submit(std::shared_ptr<EmulatedSubmission> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) throw DeviceError("commit: the emulated device was destroyed");
    pending_.push_back(std::move(work));
  }
  wake_.notify_one();
}

void EmulatedDevice::Queue::shutdown() {
  bool idle;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
    idle = pending_.empty() && !running_;
  }
  wake_.notify_one();
  // An idle thread ends at once: wait for it. With work in flight, the
  // thread finishes it on its own (it holds the queue), so a device is
  // dropped without blocking its caller; so is one dropped by a completion
  // on the queue thread itself.
  if (idle && std::this_thread::get_id() != thread_.get_id())
    thread_.join();
  else
    thread_.detach();
}

void EmulatedDevice::Queue::loop() {
  for (;;) {
    std::shared_ptr<EmulatedSubmission> work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return closing_ || !pending_.empty(); });
      if (pending_.empty()) return;  // closing, and nothing left
      work = std::move(pending_.front());
      pending_.pop_front();
      running_ = true;
    }
    std::string error;
    try {
      for (const auto& d : work->dispatches) run(d);
    } catch (const std::exception& e) {
      error = e.what();
    }
    work->report->complete(error, work->onCompleted);
    // Then the buffers are released, as Metal releases a command buffer's
    // after its completion handlers ran.
    work->onCompleted = nullptr;
    work->dispatches.clear();
    {
      std::lock_guard<std::mutex> lock(work->mutex);
      work->error = error;
      work->done = true;
    }
    work->finished.notify_all();
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }
}

void EmulatedDevice::Queue::run(const EmulatedDispatch& d) {
  using Slot = EmulatedDispatch::Slot;
  const unsigned workers = std::max(1u, std::min<unsigned>(workers_, d.groups));
  while (runners_.size() < workers)
    runners_.push_back(RunnerPool::instance().take(order_, 0x9E3779B9u * (runners_.size() + 1)));

  std::atomic<uint32_t> next{0};
  std::atomic<bool> failed{false};
  std::string failure;
  std::mutex failureMutex;
  auto work = [&](unsigned w) {
    // Each worker binds its own threadgroup memory.
    BoundArguments bound{};
    std::vector<std::unique_ptr<unsigned char[]>> threadgroupMemory;
    for (size_t i = 0; i < d.slots.size() && i < kMaxKernelArguments; ++i) {
      const Slot& s = d.slots[i];
      if (s.kind == Slot::BufferSlot) bound.slots[i] = static_cast<unsigned char*>(s.buffer->contents()) + s.offset;
      if (s.kind == Slot::Bytes) bound.slots[i] = const_cast<unsigned char*>(s.bytes.data());
      if (s.kind == Slot::ThreadgroupMemory) {
        threadgroupMemory.emplace_back(new unsigned char[s.threadgroupLength ? s.threadgroupLength : 1]);
        bound.slots[i] = threadgroupMemory.back().get();
      }
    }
    for (uint32_t g; !failed && (g = next.fetch_add(1)) < d.groups;) {
      try {
        runners_[w]->setSimdSumOrder(sumOrder_);
        runners_[w]->run(d.kernel->invoke, &bound, g, d.groups, d.threads);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(failureMutex);
        if (!failed.exchange(true))
          failure = (d.label.empty() ? std::string() : d.label + " (") + d.kernel->name +
                    (d.label.empty() ? ": " : "): ") + e.what();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned w = 1; w < workers; ++w) helpers.emplace_back(work, w);
  work(0);
  for (auto& t : helpers) t.join();
  if (failed) throw KernelFault(failure);
}

}  // namespace md::emu
