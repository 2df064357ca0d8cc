// job_thread.h: one thread that runs jobs in the order they were posted.
// Each model has one, so a forward pass never runs on the JavaScript
// thread and two sequences of a model never use its thread pool at once.
#pragma once
#include <functional>
#include <memory>

namespace md::addon {

class JobThread {
 public:
  JobThread();
  // Never waits: the thread runs the jobs already posted, then ends by
  // itself (so the last owner may even be one of its own jobs).
  ~JobThread();
  JobThread(const JobThread&) = delete;
  JobThread& operator=(const JobThread&) = delete;

  // A job must not throw (it reports its outcome itself).
  void post(std::function<void()> job);

  struct Queue;

 private:
  std::shared_ptr<Queue> queue_;
};

}  // namespace md::addon
