#include "service/metrics.h"

#include <chrono>

#include <fmt/format.h>

#include "record/record.h"

namespace kbv::service {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void Metrics::evaluation_finished(const nlohmann::json& record_json, double now, bool count_cached_build) {
  RecordRead read = record_from_json(record_json);
  std::lock_guard lock(mutex_);
  finished_at_.push_back(now);
  ++by_verdict_[read.ok() ? verdict_name(read.record.verdict) : "unreadable"];
  if (!read.ok()) return;
  const Record& r = read.record;
  if (r.build && (count_cached_build || !r.build->cached)) ++(r.build->cached ? build_hits_ : build_misses_);
  if (r.phase_seconds)
    for (const auto& [phase, seconds] : *r.phase_seconds) {
      phase_seconds_[phase] += seconds;
      ++phase_count_[phase];
    }
}

void Metrics::build_made(bool cached, double seconds) {
  std::lock_guard lock(mutex_);
  ++build_stages_;
  build_stage_seconds_ += seconds;
  ++(cached ? build_hits_ : build_misses_);
}

void Metrics::job_failed() {
  std::lock_guard lock(mutex_);
  ++failed_;
}

void Metrics::submitted(bool already_done) {
  std::lock_guard lock(mutex_);
  ++submissions_;
  submissions_done_ += already_done;
}

void Metrics::answered(int http_status) {
  std::lock_guard lock(mutex_);
  ++http_[http_status];
}

std::string Metrics::render(const std::optional<queue::Counts>& counts, double now) {
  std::lock_guard lock(mutex_);
  while (!finished_at_.empty() && finished_at_.front() < now - 60) finished_at_.pop_front();
  std::string out;
  auto head = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  head("kbv_queue_up", "gauge", "1 when the queue's database answered this scrape, else 0.");
  out += fmt::format("kbv_queue_up {}\n", counts ? 1 : 0);
  if (counts) {
    head("kbv_queue_depth", "gauge", "Jobs waiting for a worker (state queued).");
    out += fmt::format("kbv_queue_depth {}\n", counts->queued);
    head("kbv_jobs", "gauge", "Jobs in the queue by state.");
    out += fmt::format("kbv_jobs{{state=\"queued\"}} {}\n", counts->queued);
    out += fmt::format("kbv_jobs{{state=\"running\"}} {}\n", counts->running);
    out += fmt::format("kbv_jobs{{state=\"done\"}} {}\n", counts->done);
    out += fmt::format("kbv_jobs{{state=\"failed\"}} {}\n", counts->failed);
  }
  head("kbv_evaluations_per_minute", "gauge", "Evaluations this server's workers finished in the last 60 seconds.");
  out += fmt::format("kbv_evaluations_per_minute {}\n", finished_at_.size());
  head("kbv_evaluations_total", "counter", "Evaluations this server's workers finished, by verdict.");
  for (const auto& [verdict, n] : by_verdict_) out += fmt::format("kbv_evaluations_total{{verdict=\"{}\"}} {}\n", verdict, n);
  head("kbv_jobs_failed_total", "counter", "Jobs this server's workers could not evaluate (no record).");
  out += fmt::format("kbv_jobs_failed_total {}\n", failed_);
  head("kbv_build_cache_hits_total", "counter", "Candidates whose build came from the build cache.");
  out += fmt::format("kbv_build_cache_hits_total {}\n", build_hits_);
  head("kbv_build_cache_misses_total", "counter", "Candidates compiled (not in the build cache).");
  out += fmt::format("kbv_build_cache_misses_total {}\n", build_misses_);
  head("kbv_build_stages_total", "counter", "Build stages this server's builders finished ahead of evaluation (--build-jobs).");
  out += fmt::format("kbv_build_stages_total {}\n", build_stages_);
  head("kbv_build_stage_seconds", "summary",
       "Seconds of the builders' build stages (--build-jobs; the evaluations behind them find the build cached).");
  out += fmt::format("kbv_build_stage_seconds_sum {:.6f}\nkbv_build_stage_seconds_count {}\n", build_stage_seconds_,
                     build_stages_);
  head("kbv_build_cache_hit_ratio", "gauge", "Build cache hits over builds (0 before the first build).");
  long long builds = build_hits_ + build_misses_;
  out += fmt::format("kbv_build_cache_hit_ratio {:g}\n", builds ? static_cast<double>(build_hits_) / builds : 0.0);
  head("kbv_phase_seconds", "summary", "Seconds spent per phase of an evaluation (the record's phase_seconds).");
  for (const auto& [phase, seconds] : phase_seconds_) {
    out += fmt::format("kbv_phase_seconds_sum{{phase=\"{}\"}} {:.6f}\n", phase, seconds);
    out += fmt::format("kbv_phase_seconds_count{{phase=\"{}\"}} {}\n", phase, phase_count_[phase]);
  }
  head("kbv_submissions_total", "counter", "Evaluations submitted through the API.");
  out += fmt::format("kbv_submissions_total {}\n", submissions_);
  head("kbv_submissions_answered_from_store_total", "counter",
       "Submissions whose (problem, solution, options) was already done: answered without running.");
  out += fmt::format("kbv_submissions_answered_from_store_total {}\n", submissions_done_);
  head("kbv_http_responses_total", "counter", "HTTP responses by status code.");
  for (const auto& [code, n] : http_) out += fmt::format("kbv_http_responses_total{{code=\"{}\"}} {}\n", code, n);
  return out;
}

}  // namespace kbv::service
