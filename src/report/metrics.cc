// Leaderboard metrics (docs/METRICS.md).
#include "report/metrics.h"

#include <cmath>

namespace kbv {

double fast_p(std::span<const Scored> slots, double p) {
  if (slots.empty()) return 0;
  size_t count = 0;
  for (const auto& s : slots)
    if (s.correct && s.speedup && *s.speedup > p) ++count;
  return static_cast<double>(count) / static_cast<double>(slots.size());
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

SpeedMetrics speed_metrics(std::span<const Scored> slots) {
  SpeedMetrics m;
  m.slots = static_cast<int>(slots.size());
  for (const auto& s : slots) {
    if (!s.correct) continue;
    ++m.correct;
    if (s.speedup) ++m.timed;
  }
  m.measured = m.correct == 0 || m.timed > 0;
  for (size_t i = 0; i < kFastPThresholds.size(); ++i) m.fast_p[i] = fast_p(slots, kFastPThresholds[i]);
  m.geomean_correct = geomean_speedup_correct(slots);
  m.geomean_correct_and_faster = geomean_speedup_correct_and_faster(slots);
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
