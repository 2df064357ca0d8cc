// job_thread.cpp
#include "job_thread.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace md::addon {

struct JobThread::Queue {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> jobs;
  bool stopping = false;
};

namespace {

void runJobs(std::shared_ptr<JobThread::Queue> q) {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(q->mutex);
      q->wake.wait(lock, [&] { return q->stopping || !q->jobs.empty(); });
      if (q->jobs.empty()) return;
      job = std::move(q->jobs.front());
      q->jobs.pop_front();
    }
    job();
  }
}

}  // namespace

JobThread::JobThread() : queue_(std::make_shared<Queue>()) { std::thread(runJobs, queue_).detach(); }

JobThread::~JobThread() {
  {
    std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->stopping = true;
  }
  queue_->wake.notify_one();
}

void JobThread::post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->jobs.push_back(std::move(job));
  }
  queue_->wake.notify_one();
}

}  // namespace md::addon
