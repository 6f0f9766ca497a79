#include "service/pool.h"

#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

namespace kbv::service {

WorkerPool::WorkerPool(queue::Queue& queue, PoolConfig config, Metrics& metrics, std::function<void()> finished,
                       std::function<void(const std::string&)> log)
    : queue_(queue), config_(std::move(config)), metrics_(metrics), finished_(std::move(finished)), log_(std::move(log)) {}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::start() {
  int n = config_.gpus.empty() ? config_.workers : static_cast<int>(config_.gpus.size());
  for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { loop(i); });
}

void WorkerPool::wake() {
  {
    std::lock_guard lock(mutex_);
    ++wakes_;
  }
  cv_.notify_all();
}

void WorkerPool::stop() {
  stopping_ = true;
  wake();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

void WorkerPool::loop(int index) {
  char host[256] = "host";
  ::gethostname(host, sizeof host - 1);
  std::string me = fmt::format("{}/{}/{}/{}", config_.name, host, ::getpid(), index);
  EvalOptions base = config_.base;
  if (!config_.gpus.empty()) base.gpu = config_.gpus[index];
  Executor executor(base, config_.scratch);
  std::string last_error;
  while (!stopping_) {
    unsigned long long seen;
    {
      std::lock_guard lock(mutex_);
      seen = wakes_;
    }
    std::string error;
    std::optional<queue::Lease> lease;
    std::optional<queue::Job> job;
    lease = queue_.lease(me, config_.lease_s, error);
    if (lease) job = queue_.job_of(*lease, error);
    if (!error.empty() && error != last_error) log_(fmt::format("worker {}: the queue: {}", me, error));
    last_error = error;
    if (lease && !job) {  // leased but unreadable: give it back for another try
      std::string e;
      queue_.fail(*lease, "the job could not be read: " + error, true, e);
      continue;
    }
    if (!lease) {
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, std::chrono::milliseconds(error.empty() ? 200 : 2000),
                   [&] { return wakes_ != seen || stopping_; });
      continue;
    }
    // Heartbeats while the job runs; a lost lease (another worker took the job after ours
    // expired) only means our completion will be refused by the fencing token.
    std::atomic<bool> running{true};
    std::mutex hb_mutex;
    std::condition_variable hb_cv;
    std::thread heartbeat([&] {
      std::unique_lock lock(hb_mutex);
      while (!hb_cv.wait_for(lock, std::chrono::duration<double>(config_.lease_s / 3), [&] { return !running.load(); })) {
        std::string e;
          if (!queue_.heartbeat(*lease, config_.lease_s, e))
          log_(fmt::format("worker {}: job {}: the lease {}", me, lease->job_id, e.empty() ? "was lost" : "not renewed: " + e));
      }
    });
    Execution result = executor.run(*job);
    {
      std::lock_guard lock(hb_mutex);
      running = false;
    }
    hb_cv.notify_all();
    heartbeat.join();
    std::string e;
    bool stored;
    stored = result.ok ? queue_.complete(*lease, result.record, e) : queue_.fail(*lease, result.error, result.retry, e);
    if (result.ok) metrics_.evaluation_finished(result.record, unix_now());
    else {
      metrics_.job_failed();
      log_(fmt::format("worker {}: job {}: {}{}", me, lease->job_id, result.error, result.retry ? " (back to the queue)" : ""));
    }
    if (!stored)
      log_(fmt::format("worker {}: job {}: the queue did not store the outcome: {}", me, lease->job_id,
                       e.empty() ? "the lease was lost" : e));
    finished_();
  }
}

}  // namespace kbv::service
