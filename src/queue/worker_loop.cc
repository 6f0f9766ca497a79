// The worker loop (worker_loop.h): lease, execute with a heartbeat beside it, complete or fail.
#include "queue/worker_loop.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace kbv::queue {
namespace {

using Clock = std::chrono::steady_clock;

// Sleeps `seconds`, waking early when the loop is told to stop.
void nap(double seconds, const std::function<bool()>& stop) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    if (stop && stop()) return;
    const auto left = std::chrono::duration<double>(until - Clock::now());
    std::this_thread::sleep_for(std::min<std::chrono::duration<double>>(left, std::chrono::milliseconds(50)));
  }
}

// Heartbeats one lease every `period` seconds from its own thread until stopped; remembers
// whether the lease was lost (another worker owns the job now).
class Heartbeat {
 public:
  Heartbeat(Queue& queue, const Lease& lease, const LoopOptions& options, const Notify& notify)
      : thread_([this, &queue, lease, options, notify] {
          const auto period = std::chrono::duration<double>(
              std::clamp(options.heartbeat_seconds, 0.01, std::max(0.01, options.lease_seconds / 3)));
          std::unique_lock lock(mutex_);
          while (!cv_.wait_for(lock, period, [this] { return finished_; })) {
            lock.unlock();
            std::string error;
            const bool ok = queue.heartbeat(lease, options.lease_seconds, error);
            lock.lock();
            if (ok) continue;
            if (error.empty()) {
              lost_ = true;
              warn(notify, fmt::format("job {}: the lease was lost (expired and taken by another worker); "
                                       "its result will not be stored by this worker",
                                       lease.job_id));
              return;
            }
            ++db_errors_;
            warn(notify, fmt::format("job {}: heartbeat failed: {}", lease.job_id, error));
          }
        }) {}
  ~Heartbeat() { finish(); }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void finish() {
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  bool lost() const { return lost_; }
  long long db_errors() const { return db_errors_; }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool finished_ = false;
  bool lost_ = false;
  long long db_errors_ = 0;
  std::thread thread_;  // last: started once the members above exist
};

// Offers the outcome to the queue until it answers (true: stored; false: the lease was lost), or
// until `give_up_s` passed with the database unreachable (false).
template <typename Call>
bool settle(Call call, const Lease& lease, double give_up_s, LoopStats& stats, const Notify& notify,
            const char* what) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(give_up_s);
  double backoff = 0.1;
  while (true) {
    std::string error;
    if (call(error)) return true;
    if (error.empty()) {
      ++stats.lost;
      warn(notify, fmt::format("job {}: the lease was lost before it could be {}; another worker owns it now",
                               lease.job_id, what));
      return false;
    }
    ++stats.db_errors;
    if (Clock::now() > deadline) {
      warn(notify, fmt::format("job {}: could not be {} for {:.0f} s ({}); it goes back to the queue when its "
                               "lease expires",
                               lease.job_id, what, give_up_s, error));
      return false;
    }
    warn(notify, fmt::format("job {}: could not be {} ({}); trying again in {:.1f} s", lease.job_id, what, error,
                             backoff));
    nap(backoff, {});
    backoff = std::min(backoff * 2, 5.0);
  }
}

}  // namespace

std::string default_worker_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown-host");
  return fmt::format("{}:{}", host, ::getpid());
}

LoopStats run_worker_loop(Queue& queue, const Executor& executor, const LoopOptions& options,
                          const Notify& notify) {
  LoopStats stats;
  long long handled = 0;
  double backoff = 0.1;
  // A finished record is worth waiting for: the database gets at least a few minutes to return.
  const double settle_s = std::max(120.0, 4 * options.lease_seconds);
  auto stopping = [&] { return options.stop && options.stop(); };
  while (!stopping()) {
    if (options.max_jobs >= 0 && handled >= options.max_jobs) break;
    std::string error;
    auto lease = queue.lease_stage(options.worker, options.lease_seconds, options.stage, error);
    if (!lease) {
      if (!error.empty()) {
        ++stats.db_errors;
        warn(notify, fmt::format("{}; trying again in {:.1f} s", error, backoff));
        nap(backoff, options.stop);
        backoff = std::min(backoff * 2, 5.0);
        continue;
      }
      backoff = 0.1;
      if (options.until_empty) break;
      nap(options.idle_seconds, options.stop);
      continue;
    }
    backoff = 0.1;
    ++handled;
    Heartbeat beat(queue, *lease, options, notify);
    std::optional<Job> job;
    for (double wait = 0.1; !job; wait = std::min(wait * 2, 5.0)) {
      job = queue.job_of(*lease, error);
      if (job || error.empty() || stopping()) break;
      ++stats.db_errors;
      warn(notify, fmt::format("job {}: cannot read it: {}; trying again in {:.1f} s", lease->job_id, error, wait));
      nap(wait, options.stop);
    }
    if (!job) {
      beat.finish();
      if (error.empty()) {
        ++stats.lost;
      } else {  // stopping while the database is away: the lease expires and the job goes back
        ++stats.released;
      }
      continue;
    }
    progress(notify, fmt::format("job {}: {} (attempt {} of {})", job->id,
                                 job->spec.problem_name.empty() ? "problem from source" : job->spec.problem_name,
                                 job->attempts, job->max_attempts));
    ExecResult result;
    try {
      result = executor(*job);
    } catch (const std::exception& e) {
      result = {ExecResult::Kind::retry, {}, std::string("the executor failed: ") + e.what()};
    } catch (...) {
      result = {ExecResult::Kind::retry, {}, "the executor failed with an unknown exception"};
    }
    beat.finish();
    stats.db_errors += beat.db_errors();
    const Lease& held = *lease;
    switch (result.kind) {
      case ExecResult::Kind::done:
        if (settle([&](std::string& e) { return queue.complete(held, result.record, e); }, held, settle_s, stats,
                   notify, "completed")) {
          ++stats.done;
          progress(notify, fmt::format("job {}: done", held.job_id));
        }
        break;
      case ExecResult::Kind::built:
        if (settle([&](std::string& e) { return queue.to_eval(held, e); }, held, settle_s, stats, notify,
                   "handed to the eval stage")) {
          ++stats.built;
          progress(notify, fmt::format("job {}: built, queued for evaluation", held.job_id));
        }
        break;
      case ExecResult::Kind::failed:
      case ExecResult::Kind::retry: {
        const bool retry = result.kind == ExecResult::Kind::retry;
        warn(notify, fmt::format("job {}: {}{}", held.job_id, result.error, retry ? " (the job is retried)" : ""));
        if (settle([&](std::string& e) { return queue.fail(held, result.error, retry, e); }, held, settle_s, stats,
                   notify, "failed")) {
          ++stats.failed;
        }
        break;
      }
      case ExecResult::Kind::interrupted: {
        const std::string why = fmt::format("released by {}: the worker was stopped", options.worker);
        if (settle([&](std::string& e) { return queue.fail(held, why, true, e); }, held, settle_s, stats, notify,
                   "released")) {
          ++stats.released;
        }
        break;
      }
    }
  }
  return stats;
}

}  // namespace kbv::queue
