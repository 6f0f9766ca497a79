#include "measure/interval.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace kbv {
namespace {

// An index in [0, n): the generator's value reduced, the same on every standard library (the
// distributions of <random> are not specified bit for bit). n is small against 2^64: no bias worth one.
size_t draw_index(std::mt19937_64& rng, size_t n) { return static_cast<size_t>(rng() % n); }

void resample_into(std::span<const double> from, std::mt19937_64& rng, std::vector<double>& into) {
  for (size_t i = 0; i < from.size(); ++i) into.push_back(from[draw_index(rng, from.size())]);
}

// Student's t, 97.5th percentile, for 1..30 degrees of freedom (beyond: 1.96 + 2.4/df, within
// 0.002 of the true value from 30 on).
double t975(int df) {
  static constexpr double kT[] = {12.706, 4.303, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
                                  2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                                  2.074,  2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042, 2.040};
  if (df < 1) df = 1;
  return df <= 30 ? kT[df - 1] : 1.96 + 2.4 / df;
}

// The tail of the expanded percentile interval (Hesterberg, "What teachers should know about the
// bootstrap", 2015): a percentile bootstrap over n blocks is too narrow for small n (it misses the
// n/(n-1) of the variance and the t's heavier tails); the percentiles taken are those of the normal
// quantile sqrt(n/(n-1)) * t(0.975, n-1). Six paired rounds take the 0.24th and 99.76th
// percentiles, not the 2.5th and 97.5th. n large: 2.5%.
double expanded_tail(size_t n) {
  if (n < 2) return 0.025;
  const double nn = static_cast<double>(n);
  const double z = std::sqrt(nn / (nn - 1)) * t975(static_cast<int>(n) - 1);
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

std::optional<SpeedupInterval> interval_of(double speedup, std::vector<double>& boot, double tail = 0.025) {
  if (boot.empty() || !(speedup > 0) || !std::isfinite(speedup)) return std::nullopt;
  std::sort(boot.begin(), boot.end());
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(boot.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, boot.size() - 1);
    return boot[lo] + (boot[hi] - boot[lo]) * (pos - static_cast<double>(lo));
  };
  return SpeedupInterval{speedup, at(tail), at(1.0 - tail)};
}

double ratio(std::vector<double>& baseline, std::vector<double>& candidate);

// `resamples` bootstrap speedups: each time `fill(rng, b, c)` draws a resample of the baseline and
// candidate samples into the emptied b and c, and their ratio of medians is one value.
template <class Fill>
std::vector<double> bootstrap(int resamples, uint64_t seed, Fill fill) {
  std::mt19937_64 rng(seed);
  std::vector<double> boot, b, c;
  boot.reserve(static_cast<size_t>(std::max(resamples, 0)));
  for (int i = 0; i < resamples; ++i) {
    b.clear();
    c.clear();
    fill(rng, b, c);
    if (const double x = ratio(b, c); x > 0) boot.push_back(x);
  }
  return boot;
}

double ratio(std::vector<double>& baseline, std::vector<double>& candidate) {
  const double c = median_in_place(candidate);
  const double b = median_in_place(baseline);
  return c > 0 && b > 0 ? b / c : 0.0;
}

}  // namespace

double median_in_place(std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

std::optional<SpeedupInterval> paired_speedup_interval(std::span<const PairedRound> rounds, int resamples,
                                                       uint64_t seed) {
  std::vector<const PairedRound*> usable;
  for (const PairedRound& r : rounds)
    if (!r.baseline_ms.empty() && !r.candidate_ms.empty()) usable.push_back(&r);
  if (usable.empty()) return std::nullopt;
  std::vector<double> b, c;
  for (const PairedRound* r : usable) {
    b.insert(b.end(), r->baseline_ms.begin(), r->baseline_ms.end());
    c.insert(c.end(), r->candidate_ms.begin(), r->candidate_ms.end());
  }
  const double speedup = ratio(b, c);
  if (!(speedup > 0)) return std::nullopt;
  std::vector<double> boot = bootstrap(resamples, seed, [&](std::mt19937_64& rng, auto& rb, auto& rc) {
    for (size_t k = 0; k < usable.size(); ++k) {
      const PairedRound* r = usable[draw_index(rng, usable.size())];
      resample_into(r->baseline_ms, rng, rb);
      resample_into(r->candidate_ms, rng, rc);
    }
  });
  return interval_of(speedup, boot, expanded_tail(usable.size()));
}

std::optional<SpeedupInterval> unpaired_speedup_interval(std::span<const double> baseline_ms,
                                                         std::span<const double> candidate_ms, int resamples,
                                                         uint64_t seed) {
  if (baseline_ms.empty() || candidate_ms.empty()) return std::nullopt;
  std::vector<double> b(baseline_ms.begin(), baseline_ms.end()), c(candidate_ms.begin(), candidate_ms.end());
  const double speedup = ratio(b, c);
  if (!(speedup > 0)) return std::nullopt;
  std::vector<double> boot = bootstrap(resamples, seed, [&](std::mt19937_64& rng, auto& rb, auto& rc) {
    resample_into(baseline_ms, rng, rb);
    resample_into(candidate_ms, rng, rc);
  });
  return interval_of(speedup, boot);
}

}  // namespace kbv
