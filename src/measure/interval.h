// Confidence intervals on a speedup (issue 28): pure functions over the samples the supervisor
// holds, no device. Paired rounds: an interval over the rounds' ratios; unpaired: a percentile
// bootstrap of the ratio of the protocol's statistic (median or mean) (docs/TIMING.md, "Speedup intervals";
// docs/METRICS.md).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace kbv {

// Resamples per unpaired interval and the fixed seed: the same samples give the same interval, always.
inline constexpr int kBootstrapResamples = 2000;
inline constexpr uint64_t kBootstrapSeed = 0x6b62762d6369ULL;  // "kbv-ci"

// One paired round: a baseline block and a candidate block timed back to back (ABBA order).
// `round`: its number in timing.rounds (-1: not given; the rounds' order then stands for it).
struct PairedRound {
  std::vector<double> baseline_ms, candidate_ms;
  int round = -1;
};

struct SpeedupInterval {
  double speedup = 0;  // paired: the geometric mean of the kept rounds' ratios; unpaired: the statistic's ratio
  double low = 0, high = 0;  // the 95% interval's ends
};

// Median with linear interpolation (as summarize()); reorders `v`. Empty: 0.
double median_in_place(std::vector<double>& v);

// The rules of the interval over paired rounds (docs/TIMING.md, "Speedup intervals").
struct RoundRules {
  // A round whose ratio is off the rounds' median ratio by `stall_factor` or more (either way),
  // and by `stall_robust_sds` robust standard deviations of the rounds' log ratios, is a stalled
  // round: one of its blocks met a host that took its cores (44x was seen), so it says nothing
  // about the kernels. At most a third of the rounds are set aside; more so far off is a noisy
  // host, not a stall.
  double stall_factor = 2.0, stall_robust_sds = 5.0;
  // A trend line's slope past this many of its standard errors widens the interval to span it (1:
  // spanning only a trend that passes 95% left a 3% one through the run unspanned in a quarter of
  // synthetic A/A runs, SpeedupDrift.ARatioThatTrendsThroughTheRunIsSpannedNotAveraged).
  double trend_span_t = 1.0;
  // Fewer kept rounds than this: no interval and no speedup claimed (one round cannot tell the
  // kernels from the load that changed between its two blocks).
  int min_claim_rounds = 2;
  // The kept rounds' ratios scattering more than this (geometric SD less 1): the record says the
  // rounds disagree (the load changed between a round's blocks; the interval is wide for it).
  double rounds_disagree = 0.10;
};
inline constexpr RoundRules kRoundRules{};

// What the paired rounds say about one speedup (docs/TIMING.md, "Speedup intervals").
struct PairedSpeedup {
  std::optional<SpeedupInterval> interval;  // none: fewer than kRoundRules.min_claim_rounds kept rounds
  // Every usable round (both sides timed, a positive statistic), in the given order: its number,
  // its blocks' statistic (median, or mean under statistic "mean") and their ratio.
  std::vector<int> rounds;
  std::vector<double> baseline_ms, candidate_ms, ratios;
  std::vector<int> stalled;  // numbers of the rounds set aside as stalled
  double spread = 0;         // the kept ratios' geometric SD less 1 (0.05: about 5%); 0 under 2 rounds
  // The kept ratios' trend over the run, when the rounds show one (a least-squares line over the
  // round numbers whose slope passes Student's t at 95%, 3 rounds at least): the line's change from
  // the first kept round to the last (0.05: the ratio grew 5%); 0 without one.
  double drift = 0;
  std::pair<double, double> drift_ends{0, 0};  // with a drift: the line's ratio at the first and the last kept round
  int kept() const { return static_cast<int>(rounds.size() - stalled.size()); }
};

// Paired: the interval is computed from the per-round ratios, so a drift that moves both blocks of
// a round cancels in its ratio. Stalled rounds (above) are set aside; over the k kept rounds the
// speedup is the geometric mean of their ratios and the interval Student's t on their logs
// (mean ± t(0.975, k-1) · sd / sqrt(k)): a paired t interval, valid from 2 rounds, whose width
// is what the rounds' ratios actually scatter, the blocks' sampling noise and any load that hit
// one side of a round included. When the ratios may trend through the run (3 kept rounds or
// more, a least-squares line over the round numbers whose slope is more than trend_span_t of its
// standard errors), the rounds are not draws of one ratio: the interval spans that line from the
// first kept round to the last, widened by the same t term. `statistic`: "median" (kbv) or "mean"
// (upstream) of each block.
PairedSpeedup paired_speedup(std::span<const PairedRound> rounds, const std::string& statistic = "median");

// Unpaired (timing.pairs 0: the candidate timed once, the baseline before or after, or cached):
// the two sample sets resampled independently. Drift between the two moments is not in it.
// `statistic`: the ratio of medians ("median", kbv) or of means ("mean", upstream's protocols),
// the same statistic as the record's speedup, so the interval is around it.
std::optional<SpeedupInterval> unpaired_speedup_interval(std::span<const double> baseline_ms,
                                                         std::span<const double> candidate_ms,
                                                         const std::string& statistic = "median",
                                                         int resamples = kBootstrapResamples,
                                                         uint64_t seed = kBootstrapSeed);

}  // namespace kbv
