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

std::optional<SpeedupInterval> interval_of(double speedup, std::vector<double>& boot) {
  if (boot.empty() || !(speedup > 0) || !std::isfinite(speedup)) return std::nullopt;
  std::sort(boot.begin(), boot.end());
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(boot.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, boot.size() - 1);
    return boot[lo] + (boot[hi] - boot[lo]) * (pos - static_cast<double>(lo));
  };
  return SpeedupInterval{speedup, at(0.025), at(0.975)};
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
  std::mt19937_64 rng(seed);
  std::vector<double> boot;
  boot.reserve(static_cast<size_t>(std::max(resamples, 0)));
  for (int i = 0; i < resamples; ++i) {
    b.clear();
    c.clear();
    for (size_t k = 0; k < usable.size(); ++k) {
      const PairedRound* r = usable[draw_index(rng, usable.size())];
      resample_into(r->baseline_ms, rng, b);
      resample_into(r->candidate_ms, rng, c);
    }
    if (const double x = ratio(b, c); x > 0) boot.push_back(x);
  }
  return interval_of(speedup, boot);
}

std::optional<SpeedupInterval> unpaired_speedup_interval(std::span<const double> baseline_ms,
                                                         std::span<const double> candidate_ms, int resamples,
                                                         uint64_t seed) {
  if (baseline_ms.empty() || candidate_ms.empty()) return std::nullopt;
  std::vector<double> b(baseline_ms.begin(), baseline_ms.end()), c(candidate_ms.begin(), candidate_ms.end());
  const double speedup = ratio(b, c);
  if (!(speedup > 0)) return std::nullopt;
  std::mt19937_64 rng(seed);
  std::vector<double> boot;
  boot.reserve(static_cast<size_t>(std::max(resamples, 0)));
  for (int i = 0; i < resamples; ++i) {
    b.clear();
    c.clear();
    resample_into(baseline_ms, rng, b);
    resample_into(candidate_ms, rng, c);
    if (const double x = ratio(b, c); x > 0) boot.push_back(x);
  }
  return interval_of(speedup, boot);
}

}  // namespace kbv
