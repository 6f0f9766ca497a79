#include "measure/interval.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "measure/statistic.h"

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

// The least-squares line of the log ratios `y` over the round numbers `x` (3 rounds at least):
// its values at the first and the last round and its slope's t statistic (slope over its standard
// error; infinite for an exact line). None under 3 rounds or for a single round number.
struct Trend {
  double first = 0, last = 0, t = 0;
};
std::optional<Trend> trend_of(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t k = y.size();
  if (k < 3) return std::nullopt;
  double mx = 0, my = 0;
  for (size_t i = 0; i < k; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(k);
  my /= static_cast<double>(k);
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < k; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (!(sxx > 0)) return std::nullopt;
  const double slope = sxy / sxx;
  double rss = 0;
  for (size_t i = 0; i < k; ++i) {
    const double e = y[i] - (my + slope * (x[i] - mx));
    rss += e * e;
  }
  const double se = std::sqrt(rss / static_cast<double>(k - 2) / sxx);
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  const double t = se > 0 ? std::fabs(slope) / se : (slope != 0 ? INFINITY : 0.0);
  return Trend{my + slope * (*lo - mx), my + slope * (*hi - mx), t};
}

// The 2.5th and 97.5th percentiles of the bootstrap values `boot` (sorted here) around `speedup`.
std::optional<SpeedupInterval> interval_of(double speedup, std::vector<double>& boot) {
  constexpr double tail = 0.025;
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

double ratio(std::vector<double>& baseline, std::vector<double>& candidate, bool use_mean);

// `resamples` bootstrap speedups: each time `fill(rng, b, c)` draws a resample of the baseline and
// candidate samples into the emptied b and c, and their ratio of medians (of means, `use_mean`) is
// one value.
template <class Fill>
std::vector<double> bootstrap(int resamples, uint64_t seed, bool use_mean, Fill fill) {
  std::mt19937_64 rng(seed);
  std::vector<double> boot, b, c;
  boot.reserve(static_cast<size_t>(std::max(resamples, 0)));
  for (int i = 0; i < resamples; ++i) {
    b.clear();
    c.clear();
    fill(rng, b, c);
    if (const double x = ratio(b, c, use_mean); x > 0) boot.push_back(x);
  }
  return boot;
}

// The block statistic a speedup compares: the median (kbv), or the mean (upstream's protocols).
double statistic_in_place(std::vector<double>& v, bool use_mean) {
  if (!use_mean) return median_in_place(v);
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

double ratio(std::vector<double>& baseline, std::vector<double>& candidate, bool use_mean) {
  const double c = statistic_in_place(candidate, use_mean);
  const double b = statistic_in_place(baseline, use_mean);
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

PairedSpeedup paired_speedup(std::span<const PairedRound> rounds, const std::string& statistic) {
  PairedSpeedup out;
  const bool use_mean = statistic == kStatisticMean;
  auto block = [&](const std::vector<double>& ms) {
    std::vector<double> v(ms.begin(), ms.end());
    return statistic_in_place(v, use_mean);
  };
  for (size_t i = 0; i < rounds.size(); ++i) {
    const PairedRound& r = rounds[i];
    const double b = block(r.baseline_ms), c = block(r.candidate_ms);
    if (!(b > 0) || !(c > 0) || !std::isfinite(b) || !std::isfinite(c)) continue;
    out.rounds.push_back(r.round >= 0 ? r.round : static_cast<int>(i));
    out.baseline_ms.push_back(b);
    out.candidate_ms.push_back(c);
    out.ratios.push_back(b / c);
  }
  const size_t n = out.ratios.size();
  std::vector<double> logs;
  for (double x : out.ratios) logs.push_back(std::log(x));
  // Stalled rounds: far off the median log ratio by a robust yardstick (1.4826 MAD: the SD of a
  // normal), never more than a third of the rounds.
  std::vector<bool> aside(n, false);
  if (n >= 3) {
    std::vector<double> tmp = logs;
    const double mid = median_in_place(tmp);
    std::vector<double> dev;
    for (double l : logs) dev.push_back(std::fabs(l - mid));
    tmp = dev;
    const double sd = 1.4826 * median_in_place(tmp);
    const double line = std::max(std::log(kRoundRules.stall_factor), kRoundRules.stall_robust_sds * sd);
    std::vector<size_t> far;
    for (size_t i = 0; i < n; ++i)
      if (dev[i] >= line) far.push_back(i);
    if (!far.empty() && far.size() <= n / 3)
      for (size_t i : far) {
        aside[i] = true;
        out.stalled.push_back(out.rounds[i]);
      }
  }
  std::vector<double> kept, kept_rounds;
  for (size_t i = 0; i < n; ++i)
    if (!aside[i]) {
      kept.push_back(logs[i]);
      kept_rounds.push_back(out.rounds[i]);
    }
  const size_t k = kept.size();
  if (k < static_cast<size_t>(kRoundRules.min_claim_rounds)) return out;
  double mean = 0;
  for (double l : kept) mean += l;
  mean /= static_cast<double>(k);
  double ss = 0;
  for (double l : kept) ss += (l - mean) * (l - mean);
  const double sd = std::sqrt(ss / static_cast<double>(k - 1));
  const double half = t975(static_cast<int>(k) - 1) * sd / std::sqrt(static_cast<double>(k));
  out.spread = std::exp(sd) - 1;
  double lo = mean, hi = mean;
  if (const std::optional<Trend> trend = trend_of(kept_rounds, kept); trend && trend->t > kRoundRules.trend_span_t) {
    // The ratio may have moved with the run: the interval spans the fitted line from the first
    // kept round to the last, so it holds the ratio at every point of the run, not its average.
    lo = std::min(trend->first, trend->last);
    hi = std::max(trend->first, trend->last);
    if (trend->t > t975(static_cast<int>(k) - 2)) {
      out.drift = std::exp(trend->last - trend->first) - 1;
      out.drift_ends = {std::exp(trend->first), std::exp(trend->last)};
    }
  }
  out.interval = SpeedupInterval{std::exp(mean), std::exp(std::min(lo, mean) - half), std::exp(std::max(hi, mean) + half)};
  return out;
}

std::optional<SpeedupInterval> unpaired_speedup_interval(std::span<const double> baseline_ms,
                                                         std::span<const double> candidate_ms,
                                                         const std::string& statistic, int resamples,
                                                         uint64_t seed) {
  if (baseline_ms.empty() || candidate_ms.empty()) return std::nullopt;
  const bool use_mean = statistic == kStatisticMean;
  std::vector<double> b(baseline_ms.begin(), baseline_ms.end()), c(candidate_ms.begin(), candidate_ms.end());
  const double speedup = ratio(b, c, use_mean);
  if (!(speedup > 0)) return std::nullopt;
  std::vector<double> boot = bootstrap(resamples, seed, use_mean, [&](std::mt19937_64& rng, auto& rb, auto& rc) {
    resample_into(baseline_ms, rng, rb);
    resample_into(candidate_ms, rng, rc);
  });
  return interval_of(speedup, boot);
}

}  // namespace kbv
