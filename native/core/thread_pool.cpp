// thread_pool.cpp
#include "thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define MD_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define MD_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define MD_CPU_RELAX() ((void)0)
#endif

namespace md {
namespace {
// About a millisecond of spinning before a worker sleeps: long enough to
// cover the gap between two tasks of one token, short enough not to burn a
// core between calls.
constexpr int kSpinsBeforeSleep = 20000;
}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) threads = 1;
  workers_.reserve(size_t(threads - 1));
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { workerLoop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::run(const std::function<void(int)>& task) {
  if (workers_.empty()) {
    task(0);
    return;
  }
  task_ = &task;
  pending_.store(int(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  task(0);
  while (pending_.load(std::memory_order_acquire) != 0) MD_CPU_RELAX();
}

void ThreadPool::workerLoop(int thread) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinsBeforeSleep) {
      MD_CPU_RELAX();
      ++spins;
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stopping_.load()) return;
    (*task_)(thread);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace md
