// Leaderboard metrics (docs/METRICS.md).
#include "report/metrics.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace kbv {

double fast_p(std::span<const Scored> slots, double p) {
  if (slots.empty()) return 0;
  size_t count = 0;
  for (const auto& s : slots)
    if (s.correct && s.speedup && *s.speedup > p) ++count;
  return static_cast<double>(count) / static_cast<double>(slots.size());
}

const char* fast_p_mode_name(FastPMode mode) { return mode == FastPMode::point ? "point" : "interval"; }

std::optional<FastPMode> parse_fast_p_mode(const std::string& name) {
  if (name == "interval") return FastPMode::interval;
  if (name == "point") return FastPMode::point;
  return std::nullopt;
}

double fast_p(std::span<const Scored> slots, double p, FastPMode mode) {
  if (mode == FastPMode::point) return fast_p(slots, p);
  if (slots.empty()) return 0;
  size_t count = 0;
  for (const auto& s : slots)
    if (s.correct && s.speedup && (s.ci ? s.ci->first : *s.speedup) > p) ++count;
  return static_cast<double>(count) / static_cast<double>(slots.size());
}

int fast_p_uncertain(std::span<const Scored> slots, double p) {
  int count = 0;
  for (const auto& s : slots)
    if (s.correct && s.speedup && s.ci && s.ci->first <= p && s.ci->second > p) ++count;
  return count;
}

std::optional<Interval> geomean_interval(std::span<const Estimate> values, uint64_t seed, int replicates) {
  if (values.empty() || replicates < 1) return std::nullopt;
  // Per entry: log of the value, and the log-normal's sigma below and above it.
  struct Log {
    double mu, below, above;
  };
  std::vector<Log> logs;
  for (const auto& e : values) {
    if (!(e.value > 0) || !std::isfinite(e.value)) return std::nullopt;
    Log l{std::log(e.value), 0, 0};
    if (e.ci && e.ci->first > 0 && std::isfinite(e.ci->first) && std::isfinite(e.ci->second)) {
      l.below = std::abs(l.mu - std::log(e.ci->first)) / 1.96;
      l.above = std::abs(std::log(e.ci->second) - l.mu) / 1.96;
    }
    logs.push_back(l);
  }
  // mt19937_64 and the draws below are fully specified: the same on every platform.
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };  // (0, 1)
  auto normal = [&] {
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * 3.14159265358979323846 * uniform());
  };
  const uint64_t n = logs.size();
  std::vector<double> means;
  means.reserve(static_cast<size_t>(replicates));
  for (int r = 0; r < replicates; ++r) {
    double sum = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const Log& l = logs[static_cast<size_t>(rng() % n)];
      double draw = l.mu;
      if (l.below > 0 || l.above > 0) {
        const double z = normal();
        draw += z * (z < 0 ? l.below : l.above);
      }
      sum += draw;
    }
    means.push_back(sum / static_cast<double>(n));
  }
  std::sort(means.begin(), means.end());
  auto quantile = [&](double q) {  // linear between the order statistics
    const double at = q * static_cast<double>(means.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(at));
    const size_t hi = std::min(lo + 1, means.size() - 1);
    return means[lo] + (at - static_cast<double>(lo)) * (means[hi] - means[lo]);
  };
  return Interval{std::exp(quantile(0.025)), std::exp(quantile(0.975))};
}

std::optional<double> geomean(std::span<const double> values) {
  if (values.empty()) return std::nullopt;
  double log_sum = 0;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

namespace {

std::vector<double> correct_speedups(std::span<const Scored> slots, bool faster_only) {
  std::vector<double> out;
  for (const auto& s : slots)
    if (s.correct && s.speedup && (!faster_only || *s.speedup > 1.0)) out.push_back(*s.speedup);
  return out;
}

}  // namespace

std::optional<double> geomean_speedup_correct(std::span<const Scored> slots) {
  return geomean(correct_speedups(slots, false));
}

std::optional<double> geomean_speedup_correct_and_faster(std::span<const Scored> slots) {
  return geomean(correct_speedups(slots, true));
}

std::optional<double> pass_at_k(int n, int c, int k) {
  if (n < 1 || c < 0 || c > n || k < 1 || k > n) return std::nullopt;
  if (n - c < k) return 1.0;
  // C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i)
  double miss = 1.0;
  for (int i = n - c + 1; i <= n; ++i) miss *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  return 1.0 - miss;
}

std::optional<size_t> best_of_n(std::span<const Scored> samples) {
  std::optional<size_t> best;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Scored& s = samples[i];
    if (!s.correct) continue;
    if (!best) {
      best = i;
      continue;
    }
    const Scored& b = samples[*best];
    if (s.speedup && (!b.speedup || *s.speedup > *b.speedup)) best = i;
  }
  return best;
}

SpeedMetrics speed_metrics(std::span<const Scored> slots, FastPMode mode) {
  SpeedMetrics m;
  m.mode = mode;
  m.slots = static_cast<int>(slots.size());
  std::vector<Estimate> correct, faster;
  for (const auto& s : slots) {
    if (!s.correct) continue;
    ++m.correct;
    if (!s.speedup) continue;
    ++m.timed;
    if (!s.ci) ++m.timed_without_interval;
    correct.push_back({*s.speedup, s.ci});
    if (*s.speedup > 1.0) faster.push_back({*s.speedup, s.ci});
  }
  m.measured = m.correct == 0 || m.timed > 0;
  for (size_t i = 0; i < kFastPThresholds.size(); ++i) {
    m.fast_p[i] = fast_p(slots, kFastPThresholds[i], mode);
    m.fast_p_uncertain[i] = fast_p_uncertain(slots, kFastPThresholds[i]);
  }
  m.geomean_correct = geomean_speedup_correct(slots);
  m.geomean_correct_and_faster = geomean_speedup_correct_and_faster(slots);
  if (m.geomean_correct) m.geomean_correct_ci95 = geomean_interval(correct);
  if (m.geomean_correct_and_faster) m.geomean_correct_and_faster_ci95 = geomean_interval(faster);
  return m;
}

MemoryMetrics memory_metrics(std::span<const MemoryScored> slots) {
  MemoryMetrics m;
  m.slots = static_cast<int>(slots.size());
  std::vector<double> ratios;
  int efficient = 0, increased = 0;
  for (const auto& s : slots) {
    if (!s.correct) continue;
    ++m.correct;
    if (!s.ratio) continue;
    ++m.measured_correct;
    ratios.push_back(*s.ratio);
    if (*s.ratio > 1.0) ++efficient;
    if (*s.ratio < 1.0) ++increased;
  }
  m.measured = m.correct == 0 || m.measured_correct > 0;
  m.efficiency = geomean(ratios);
  m.efficient_share = slots.empty() ? 0 : static_cast<double>(efficient) / static_cast<double>(slots.size());
  if (m.measured_correct > 0)
    m.increased_share = static_cast<double>(increased) / static_cast<double>(m.measured_correct);
  return m;
}

}  // namespace kbv
