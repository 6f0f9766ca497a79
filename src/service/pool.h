// `kbv serve`'s own workers: threads that lease jobs from the queue, evaluate them in this
// process (Executor) and complete them with the record, heartbeating the lease meanwhile.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "queue/queue.h"
#include "service/executor.h"
#include "service/metrics.h"

namespace kbv::service {

struct PoolConfig {
  int workers = 1;
  std::vector<int> gpus;          // one worker per GPU when given (CUDA_VISIBLE_DEVICES of its evaluations)
  double lease_s = 60;            // renewed every lease_s / 3 while a job runs
  std::string name = "serve";     // workers are "<name>/<host>/<pid>/<index>"
  EvalOptions base;
  std::filesystem::path scratch;  // job files (Executor)
};

class WorkerPool {
 public:
  // `finished` is called after each job ends (long-polls wake up); `log` gets one line per event a
  // user should see (a job that failed, a queue that does not answer).
  WorkerPool(queue::Queue& queue, PoolConfig config, Metrics& metrics, std::function<void()> finished,
             std::function<void(const std::string&)> log);
  ~WorkerPool();  // stop() and join
  void start();
  void wake();  // a job was submitted
  void stop();  // no new leases; the jobs in flight end (interrupted ones go back to the queue)

 private:
  void loop(int index);
  queue::Queue& queue_;
  PoolConfig config_;
  Metrics& metrics_;
  std::function<void()> finished_;
  std::function<void(const std::string&)> log_;
  std::mutex mutex_;
  std::condition_variable cv_;
  unsigned long long wakes_ = 0;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace kbv::service
