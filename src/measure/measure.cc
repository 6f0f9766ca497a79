#include "measure/measure.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kbv {

nlohmann::json Stats::to_json() const {
  nlohmann::json j = {{"median_ms", median_ms}, {"mean_ms", mean_ms}, {"std_ms", std_ms},
                      {"min_ms", min_ms},       {"max_ms", max_ms},   {"iqr_ms", iqr_ms},
                      {"samples", samples},     {"discarded", discarded}, {"rse", rse},
                      {"overhead_ms", overhead_ms}};
  if (host_call_ms >= 0) j["host_call_ms"] = host_call_ms;
  return j;
}

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Stats summarize(std::span<const double> ms) {
  Stats s;
  s.samples = static_cast<int>(ms.size());
  if (ms.empty()) return s;
  std::vector<double> v(ms.begin(), ms.end());
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  s.min_ms = v.front();
  s.max_ms = v.back();
  s.median_ms = quantile_sorted(v, 0.5);
  s.iqr_ms = quantile_sorted(v, 0.75) - quantile_sorted(v, 0.25);
  s.mean_ms = std::accumulate(v.begin(), v.end(), 0.0) / n;
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean_ms) * (x - s.mean_ms);
    s.std_ms = std::sqrt(ss / (n - 1));
    s.rse = s.mean_ms > 0 ? s.std_ms / std::sqrt(n) / s.mean_ms : 0;
  }
  return s;
}

nlohmann::json StopRule::to_json() const {
  nlohmann::json j = {{"warmup", warmup},           {"min_samples", min_samples},
                      {"min_samples_at_cap", min_samples_at_cap}, {"max_samples", max_samples},
                      {"rse_target", rse_target},   {"time_cap_s", time_cap_s},
                      {"max_discards", max_discards}};
  if (calls > 0) j["calls"] = calls;
  return j;
}

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::none: return "none";
    case StopReason::rse: return "rse";
    case StopReason::time_cap: return "time_cap";
    case StopReason::max_samples: return "max_samples";
    case StopReason::calls: return "calls";
  }
  return "none";
}

StopReason should_stop(const StopRule& rule, std::span<const double> kept_ms, double elapsed_s) {
  const int n = static_cast<int>(kept_ms.size());
  if (rule.calls > 0) return n >= rule.calls ? StopReason::calls : StopReason::none;
  if (n >= rule.max_samples) return StopReason::max_samples;
  if (n >= std::max(rule.min_samples, 2) && summarize(kept_ms).rse <= rule.rse_target) return StopReason::rse;
  if (elapsed_s >= rule.time_cap_s && n >= std::max(rule.min_samples_at_cap, 1)) return StopReason::time_cap;
  return StopReason::none;
}

bool throttled(const ClockReading& before, const ClockReading& after, double expected_mhz, double tolerance) {
  for (const ClockReading* r : {&before, &after}) {
    if (!r->known) continue;
    if (r->reasons & kThrottleHwBits) return true;
    if (expected_mhz > 0 && r->sm_mhz < expected_mhz * (1.0 - tolerance)) return true;
  }
  return false;
}

double interval_slack_ms(double event_ms, double host_spread_ms) {
  return std::max({3.0 * host_spread_ms, 0.002, 0.02 * event_ms});
}

IntervalDecision decide_interval(double event_ms, double host_ms, double sync_overhead_ms, double slack_ms) {
  const double host_work = host_ms - sync_overhead_ms;
  if (host_work - event_ms > slack_ms) return {host_work, true};
  return {event_ms, false};
}

IntervalDecision decide_held_interval(double event_ms, double host_after_hold_ms, double host_from_call_ms,
                                      double sync_overhead_ms, double slack_ms) {
  IntervalDecision d = decide_interval(event_ms, host_after_hold_ms, sync_overhead_ms, slack_ms);
  if (d.disagreed) d.ms = std::max(d.ms, host_from_call_ms - sync_overhead_ms);
  return d;
}

StopRule block_rule(const StopRule& rule, int pairs, bool first) {
  if (pairs <= 1) return rule;
  auto share = [&](int n) { return (n + pairs - 1) / pairs; };
  StopRule b = rule;
  b.warmup = first ? rule.warmup : std::min(rule.warmup, 1);
  b.min_samples = std::max(share(rule.min_samples), 5);
  b.min_samples_at_cap = std::max(share(rule.min_samples_at_cap), 1);
  b.max_samples = std::max(share(rule.max_samples), b.min_samples);
  b.max_discards = share(rule.max_discards);
  b.rse_target = rule.rse_target * std::sqrt(static_cast<double>(pairs));
  b.time_cap_s = rule.time_cap_s / pairs;
  if (rule.calls > 0) b.calls = share(rule.calls);
  return b;
}

double floor_ms(uint64_t bytes, double bandwidth_bytes_per_s) {
  if (bandwidth_bytes_per_s <= 0) return 0;
  return static_cast<double>(bytes) / bandwidth_bytes_per_s * 1000.0;
}

}  // namespace kbv

namespace kbv {

nlohmann::json TimingProtocol::to_json() const {
  nlohmann::json j = {{"enabled", enabled},
                      {"rule", rule.to_json()},
                      {"baselines", baselines},
                      {"inputs", fresh ? "fresh" : "sets"},
                      {"sets", sets},
                      {"max_set_bytes", max_set_bytes},
                      {"flush_bytes", flush_bytes},
                      {"spot_per_output", spot_per_output},
                      {"spot_max_calls", spot_max_calls},
                      {"spot_draws", spot_draws},
                      {"launch_hold_us", launch_hold_us},
                      {"pairs", pairs},
                      {"cpu_threads", cpu_threads}};
  const TimingProtocol kbv;
  if (statistic != kbv.statistic) j["statistic"] = statistic;
  if (l2_flush != kbv.l2_flush) j["l2_flush"] = l2_flush;
  if (loop != kbv.loop) j["loop"] = loop;
  if (baseline_worker != kbv.baseline_worker) j["baseline_worker"] = baseline_worker;
  return j;
}

}  // namespace kbv
