// thread_pool.h: a fixed set of threads that run one task together and
// return when every thread has finished it. A forward pass issues a few
// hundred such tasks per token, so a finished worker spins briefly for the
// next one before it sleeps.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace md {

class ThreadPool {
 public:
  // threads >= 1; the calling thread of run() is thread 0.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Runs task(thread) for thread = 0 .. size() - 1, one per thread, and
  // returns when all are done. Tasks must not throw. One run at a time.
  void run(const std::function<void(int)>& task);

  // [begin, end) of `count` items for `thread` of `threads`, in contiguous
  // nearly equal parts.
  static void split(int64_t count, int thread, int threads, int64_t* begin, int64_t* end) {
    *begin = count * thread / threads;
    *end = count * (thread + 1) / threads;
  }

 private:
  void workerLoop(int thread);

  std::vector<std::thread> workers_;
  const std::function<void(int)>* task_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace md
