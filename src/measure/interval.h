// Confidence intervals on a speedup (issue 28): pure functions over the samples the supervisor
// holds, no device. A speedup is median(baseline samples) / median(candidate samples); its 95%
// interval is a percentile bootstrap (docs/TIMING.md, "Speedup intervals"; docs/METRICS.md).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace kbv {

// Resamples per interval and the fixed seed: the same samples give the same interval, always.
inline constexpr int kBootstrapResamples = 2000;
inline constexpr uint64_t kBootstrapSeed = 0x6b62762d6369ULL;  // "kbv-ci"

// One paired round: a baseline block and a candidate block timed back to back (ABBA order).
struct PairedRound {
  std::vector<double> baseline_ms, candidate_ms;
};

struct SpeedupInterval {
  double speedup = 0;  // median of every baseline sample over median of every candidate sample
  double low = 0, high = 0;  // percentiles of the bootstrap speedups: 2.5th and 97.5th, paired expanded for few rounds
};

// Median with linear interpolation (as summarize()); reorders `v`. Empty: 0.
double median_in_place(std::vector<double>& v);

// Paired: a block bootstrap. Each resample draws as many rounds as there are, with replacement,
// and within each drawn round its baseline and candidate samples with replacement; the speedup of
// the pooled resample is one bootstrap value. Round-to-round drift (the load beside kbv, the clock)
// moves both sides of a round together, so it widens the interval only as far as it changes their
// ratio. The percentiles are those of the expanded percentile interval for the number of rounds
// (about the 0.24th and 99.76th for 6; a plain percentile bootstrap over few blocks runs narrow:
// on rounds whose two sides drift apart by 5% it covered 190 of 200 synthetic runs, the expanded
// one 197, SpeedupInterval.CoversOneWhen...). nullopt: no round with samples on both sides, or a
// non-positive median.
std::optional<SpeedupInterval> paired_speedup_interval(std::span<const PairedRound> rounds,
                                                       int resamples = kBootstrapResamples,
                                                       uint64_t seed = kBootstrapSeed);

// Unpaired (timing.pairs 0: the candidate timed once, the baseline before or after, or cached):
// the two sample sets resampled independently. Drift between the two moments is not in it.
std::optional<SpeedupInterval> unpaired_speedup_interval(std::span<const double> baseline_ms,
                                                         std::span<const double> candidate_ms,
                                                         int resamples = kBootstrapResamples,
                                                         uint64_t seed = kBootstrapSeed);

}  // namespace kbv
