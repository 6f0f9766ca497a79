// `kbv serve`'s own workers: threads that each run the queue's worker loop (queue/worker_loop.h:
// lease, heartbeat, complete or fail) with the evaluation `kbv worker` runs
// (supervisor/queue_job.h), the job's options applied to the server's EvalOptions (options.h).
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "queue/queue.h"
#include "supervisor/run.h"
#include "service/metrics.h"
#include "util/outcome.h"

namespace kbv::service {

struct PoolConfig {
  int workers = 1;
  std::vector<int> gpus;          // one worker per GPU when given (CUDA_VISIBLE_DEVICES of its evaluations)
  // Builders: threads that take queued jobs' build stage (compile into the shared cache, as
  // `kbv worker --role build` without publishing), so that the evaluating workers, which then
  // take only built jobs, never wait for a compile while others are queued. 0: each evaluating
  // worker compiles its own job, as `kbv eval` does.
  int builders = 0;
  double lease_s = 60;            // heartbeated every lease_s / 3 while a job runs
  double idle_s = 0.05;           // between polls of an empty queue: a new job waits at most this long
  EvalOptions base;                 // the server's: cache, Python, sandbox, timeouts, device
  std::vector<std::filesystem::path> problems;  // a job that names a problem without its source
  std::filesystem::path scratch;  // the jobs' problem and solution files
  // The evaluating workers: one per GPU when given, else `workers`.
  int evaluators() const { return gpus.empty() ? workers : static_cast<int>(gpus.size()); }
};

class WorkerPool {
 public:
  // `finished` is called after each of the loop's events (a job done, failed, released), so that
  // long-polls answer at once; the loop's lines go to `notify`.
  WorkerPool(queue::Queue& queue, PoolConfig config, Metrics& metrics, std::function<void()> finished, Notify notify);
  ~WorkerPool();  // stop() and join
  void start();
  void stop();  // no new leases; a job in flight ends (interrupted ones go back to the queue)

 private:
  void loop(int index, bool builder);
  queue::Queue& queue_;
  PoolConfig config_;
  Metrics& metrics_;
  std::function<void()> finished_;
  Notify notify_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace kbv::service
