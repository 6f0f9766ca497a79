// What `GET /metrics` reports (Prometheus text format 0.0.4, docs/SERVICE.md "Metrics"): the
// queue's jobs by state, and what this process saw: its workers' evaluations (per minute, by
// verdict, build cache hits, seconds per phase) and its HTTP answers. Thread-safe.
#pragma once
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "queue/queue.h"

namespace kbv::service {

class Metrics {
 public:
  // A record this process's workers produced (`kbv eval --json`'s JSON), at unix time `now`.
  // `count_cached_build`: false behind builders, which counted the build they made (`build_made`):
  // the record's `build.cached` is then not a second hit (a build the evaluation made is a miss).
  void evaluation_finished(const nlohmann::json& record, double now, bool count_cached_build = true);
  // A builder's build stage (`kbv serve --build-jobs`): compiled, or found in the cache, in `seconds`.
  void build_made(bool cached, double seconds);
  void job_failed();
  void submitted(bool already_done);
  void answered(int http_status);
  // The text for /metrics; `counts` is nullopt when the queue could not be read (then
  // kbv_queue_up is 0 and the job gauges are left out).
  std::string render(const std::optional<queue::Counts>& counts, double now);

 private:
  std::mutex mutex_;
  std::deque<double> finished_at_;  // the last minute's completions
  std::map<std::string, long long> by_verdict_;
  long long build_hits_ = 0, build_misses_ = 0, build_stages_ = 0, failed_ = 0;
  double build_stage_seconds_ = 0;
  long long submissions_ = 0, submissions_done_ = 0;
  std::map<std::string, double> phase_seconds_;
  std::map<std::string, long long> phase_count_;
  std::map<int, long long> http_;
};

double unix_now();

}  // namespace kbv::service
