#include "shardplan/search/parallel_for.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace shardplan {

namespace {

// Runs one job's indices until none are left; the first exception stops the hand-out and is kept.
struct Job {
  const std::function<void(int)>* fn = nullptr;
  int n = 0;
  std::atomic<int> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;

  void work() {
    for (int i = next++; i < n; i = next++) {
      try {
        (*fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = n;  // stop handing out work
      }
    }
  }
};

// Worker threads kept for the process's life. A search calls parallel_for thousands of times for a few
// milliseconds of work each (a refinement round, a beam step); starting and joining threads for each
// call cost more than the work on small tasks. One job at a time: a call that finds the pool busy
// (another thread's job, or a call from inside a job) starts threads of its own as before.
class WorkerPool {
 public:
  static WorkerPool& instance() {
    static WorkerPool pool;
    return pool;
  }

  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // False when busy; otherwise runs the job on the caller and `helpers` workers and returns when done.
  bool try_run(Job& job, int helpers) {
    if (inside_job_) return false;  // a worker's or the caller's nested call: busy_ may be its own
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    while (static_cast<int>(threads_.size()) < helpers) {
      const int index = static_cast<int>(threads_.size());
      threads_.emplace_back([this, index] { serve(index); });
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      helpers_ = helpers;
      finished_ = 0;
      ++generation_;
    }
    wake_.notify_all();
    inside_job_ = true;
    job.work();
    inside_job_ = false;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return finished_ == helpers_; });
    job_ = nullptr;
    return true;
  }

 private:
  void serve(int index) {
    inside_job_ = true;  // for good: a worker's own parallel_for calls must not wait for the pool
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= helpers_) continue;
      Job* job = job_;
      lock.unlock();
      job->work();
      lock.lock();
      if (++finished_ == helpers_) done_.notify_one();
    }
  }

  std::mutex busy_;  // held by the caller for a whole job
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> threads_;
  Job* job_ = nullptr;
  int helpers_ = 0;
  int finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  static thread_local bool inside_job_;  // this thread is running a pool job's indices
};

thread_local bool WorkerPool::inside_job_ = false;

void run_on_new_threads(Job& job, int helpers) {
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(helpers));
  for (int w = 0; w < helpers; ++w) pool.emplace_back([&job] { job.work(); });
  job.work();
  for (auto& thread : pool) thread.join();
}

}  // namespace

int resolve_threads(int threads) {
  if (threads > 0) return threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void parallel_for(int n, int threads, const std::function<void(int)>& fn) {
  const int workers = std::min(resolve_threads(threads), n);
  if (workers <= 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  if (!WorkerPool::instance().try_run(job, workers - 1)) run_on_new_threads(job, workers - 1);
  if (job.failure) std::rethrow_exception(job.failure);
}

}  // namespace shardplan
