#include "measure/call_bound.h"

#include <algorithm>

#include "measure/measure.h"

namespace kbv {

nlohmann::json CallBound::to_json() const {
  nlohmann::json j = {{"checked", checked},
                      {"short_calls", short_calls},
                      {"allowance_ms", allowance_ms},
                      {"ping_ms", ping_ms},
                      {"median_gap_ms", median_gap_ms},
                      {"waited_calls", waited_calls},
                      {"ok", ok},
                      {"judged", judged}};
  if (waited_ms >= 0) j["waited_ms"] = waited_ms;
  if (worst_sample >= 0)
    j["worst"] = {{"sample", worst_sample}, {"sample_ms", worst_sample_ms}, {"window_ms", worst_window_ms}};
  return j;
}

namespace {

double quantile_of(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, q);
}

}  // namespace

CallBound bound_calls(std::span<const double> samples_ms, std::span<const double> windows_ms,
                      std::span<const double> pings_ms, double held_ms, std::span<const double> waits_ms) {
  CallBound b;
  b.ping_ms = quantile_of({pings_ms.begin(), pings_ms.end()}, 0.5);
  b.allowance_ms =
      std::max(kCallBoundFloorMs, kCallBoundPingFactor * quantile_of({pings_ms.begin(), pings_ms.end()}, 0.9)) +
      std::max(held_ms, 0.0);
  std::vector<double> gaps, short_waits;
  bool waits_known = true;
  double worst = -1e300;
  const size_t n = std::min(samples_ms.size(), windows_ms.size());
  for (size_t s = 0; s < n; ++s) {
    if (windows_ms[s] < 0) continue;
    const double gap = windows_ms[s] - samples_ms[s];
    gaps.push_back(gap);
    ++b.checked;
    if (gap > b.allowance_ms) {
      ++b.short_calls;
      const double wait = s < waits_ms.size() ? waits_ms[s] : -1.0;
      waits_known = waits_known && wait >= 0;
      if (wait >= 0) short_waits.push_back(wait);
      if (wait >= 0 && gap <= b.allowance_ms + wait) ++b.waited_calls;
    }
    if (gap > worst) {
      worst = gap;
      b.worst_sample = static_cast<int>(s);
      b.worst_sample_ms = samples_ms[s];
      b.worst_window_ms = windows_ms[s];
    }
  }
  b.median_gap_ms = quantile_of(gaps, 0.5);
  b.waited_ms = waits_known ? quantile_of(short_waits, 0.5) : -1.0;
  b.ok = b.short_calls <= kCallBoundShortFraction * b.checked;
  b.judged = b.ok || b.short_calls - b.waited_calls > kCallBoundShortFraction * b.checked;
  return b;
}

nlohmann::json CpuBound::to_json() const {
  nlohmann::json j = {{"checked", checked},
                      {"over_calls", over_calls},
                      {"threads", threads},
                      {"allowance_ms", allowance_ms},
                      {"median_excess_ms", median_excess_ms},
                      {"ok", ok}};
  if (worst_sample >= 0)
    j["worst"] = {{"sample", worst_sample}, {"sample_ms", worst_sample_ms}, {"cpu_ms", worst_cpu_ms}};
  return j;
}

BesideBound bound_beside(double used_ms, std::span<const double> samples_ms, int threads) {
  double sum = 0;
  for (double x : samples_ms) sum += std::max(x, 0.0);
  BesideBound b;
  b.used_ms = used_ms;
  b.allowance_ms = kBesideFloorMs + kBesideFraction * std::max(threads, 1) * sum;
  b.ok = used_ms <= b.allowance_ms;
  return b;
}

CpuBound bound_cpu(std::span<const double> samples_ms, std::span<const double> cpu_ms, int threads) {
  CpuBound b;
  b.threads = std::max(threads, 1);
  auto allowance = [&](double sample) { return kCpuBoundFloorMs + kCpuBoundSampleFraction * b.threads * sample; };
  std::vector<double> excess, kept;
  double worst = -1e300;
  const size_t n = std::min(samples_ms.size(), cpu_ms.size());
  for (size_t s = 0; s < n; ++s) {
    if (cpu_ms[s] < 0 || samples_ms[s] < 0) continue;
    const double e = cpu_ms[s] - b.threads * samples_ms[s];
    excess.push_back(e);
    kept.push_back(samples_ms[s]);
    ++b.checked;
    if (e > allowance(samples_ms[s])) ++b.over_calls;
    if (e > worst) {
      worst = e;
      b.worst_sample = static_cast<int>(s);
      b.worst_sample_ms = samples_ms[s];
      b.worst_cpu_ms = cpu_ms[s];
    }
  }
  b.median_excess_ms = quantile_of(excess, 0.5);
  b.allowance_ms = allowance(quantile_of(kept, 0.5));
  b.ok = b.over_calls <= kCallBoundShortFraction * b.checked;
  return b;
}

std::optional<std::vector<double>> samples_in_order(std::span<const double> kept_ms,
                                                    std::span<const double> discarded_ms,
                                                    std::span<const int> discarded_at) {
  if (discarded_at.size() != discarded_ms.size()) return std::nullopt;
  const size_t total = kept_ms.size() + discarded_ms.size();
  std::vector<double> out(total, -1);
  std::vector<bool> taken(total, false);
  for (size_t d = 0; d < discarded_at.size(); ++d) {
    const int at = discarded_at[d];
    if (at < 0 || static_cast<size_t>(at) >= total || taken[static_cast<size_t>(at)]) return std::nullopt;
    taken[static_cast<size_t>(at)] = true;
    out[static_cast<size_t>(at)] = discarded_ms[d];
  }
  size_t k = 0;
  for (size_t s = 0; s < total; ++s)
    if (!taken[s]) out[s] = kept_ms[k++];
  return out;
}

}  // namespace kbv
