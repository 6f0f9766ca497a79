// Leaderboard metrics: pure functions over per-slot outcomes. docs/METRICS.md gives each formula
// and the upstream definition it matches (KernelBench's src/score.py, KernelBench-Verified's
// leaderboard) or where it differs.
//
// A "slot" is one (problem, sample index) pair of the denominator: the problems of the dataset
// (or of the run) times the sample indices of the run. A slot without a record is a failure.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace kbv {

// KernelBench's thresholds for fast_p.
inline constexpr std::array<double, 6> kFastPThresholds = {0.0, 0.5, 0.8, 1.0, 1.5, 2.0};
inline constexpr size_t kFast1 = 3;  // the index of fast_1, the headline threshold
static_assert(kFastPThresholds[kFast1] == 1.0);

// A 95% interval [low, high] (docs/METRICS.md).
using Interval = std::pair<double, double>;

// One slot as a speed metric sees it: correct or not, and the speedup when it was measured.
struct Scored {
  bool correct = false;
  std::optional<double> speedup;  // baseline time / candidate time; absent: not timed
  std::optional<Interval> ci = std::nullopt;  // the speedup's 95% interval; absent: older and imported records
};

// How fast_p decides that a slot clears the threshold p (docs/METRICS.md).
//   interval (kbv's default): the lower bound of the speedup's 95% interval is > p; a slot
//            without an interval is judged on its point estimate (and counted as such).
//   point:   KernelBench's definition, the point estimate > p (for comparison with published numbers).
enum class FastPMode { interval, point };
const char* fast_p_mode_name(FastPMode mode);  // "interval" | "point"
std::optional<FastPMode> parse_fast_p_mode(const std::string& name);

// KernelBench's fast_p: the share of all slots that are correct with speedup > p (strictly).
// A correct slot without a measured speedup does not count. 0 for no slots.
double fast_p(std::span<const Scored> slots, double p);
// fast_p under `mode` (point: the same as above).
double fast_p(std::span<const Scored> slots, double p, FastPMode mode);
// Correct slots whose interval straddles p (low <= p < high): the interval mode counts them as
// not clearing p, though they may.
int fast_p_uncertain(std::span<const Scored> slots, double p);

// A value and its 95% interval, when it has one.
struct Estimate {
  double value = 0;
  std::optional<Interval> ci = std::nullopt;
};
// The bootstrap's fixed seed and replicate count: the same records give the same interval.
inline constexpr uint64_t kGeomeanBootstrapSeed = 0x6b62762d63693935ULL;  // "kbv-ci95"
inline constexpr int kBootstrapReplicates = 2000;
// The 95% interval of the geometric mean of `values`, by bootstrap: each replicate draws
// values.size() entries with replacement, and each drawn entry's value within its own interval
// (log-normal around the value, the interval's ends at 1.96 sigma on either side; without an
// interval, the value itself); the 2.5th and 97.5th percentiles of the replicates' geomeans.
// Deterministic for a seed. None for an empty list, a value <= 0, or replicates < 1.
std::optional<Interval> geomean_interval(std::span<const Estimate> values, uint64_t seed = kGeomeanBootstrapSeed,
                                         int replicates = kBootstrapReplicates);

// Geometric mean of positive values; none for an empty list (or any value <= 0).
std::optional<double> geomean(std::span<const double> values);

// Geometric mean of the speedups of the correct slots that have one; none when there are none.
std::optional<double> geomean_speedup_correct(std::span<const Scored> slots);
// The same over correct slots with speedup > 1.
std::optional<double> geomean_speedup_correct_and_faster(std::span<const Scored> slots);

// Unbiased pass@k for one problem with n samples of which c are correct (Chen et al. 2021):
// 1 - C(n-c, k) / C(n, k), computed as a product to stay exact for large n. Requires
// 0 <= c <= n and 1 <= k <= n; returns none otherwise.
std::optional<double> pass_at_k(int n, int c, int k);

// Best-of-n for one problem (KernelBench-Verified): the correct sample with the highest
// measured speedup; a correct sample without timing only when no correct sample was timed.
// Returns the index into `samples` of the chosen sample, or none when no sample is correct.
std::optional<size_t> best_of_n(std::span<const Scored> samples);

// Speed metrics against one baseline under one correctness gate.
struct SpeedMetrics {
  int slots = 0;
  int correct = 0;
  int timed = 0;          // correct slots with a speedup
  bool measured = false;  // false: some slot is correct but none was timed -> "not measured"
  std::array<double, kFastPThresholds.size()> fast_p{};
  std::optional<double> geomean_correct;
  std::optional<double> geomean_correct_and_faster;
  // How far these can be trusted (docs/METRICS.md).
  FastPMode mode = FastPMode::interval;  // the definition fast_p above follows
  std::array<int, kFastPThresholds.size()> fast_p_uncertain{};  // correct slots whose interval straddles p
  int timed_without_interval = 0;  // timed correct slots judged on their point estimate alone
  std::optional<Interval> geomean_correct_ci95;
  std::optional<Interval> geomean_correct_and_faster_ci95;
};
SpeedMetrics speed_metrics(std::span<const Scored> slots, FastPMode mode = FastPMode::interval);

// One slot as the memory metrics see it.
struct MemoryScored {
  bool correct = false;
  std::optional<double> ratio;  // baseline peak bytes / candidate peak bytes; absent: not measured
};

// KernelBench-Verified's memory metrics over `slots`:
//   efficiency: geometric mean of the ratio over correct slots with a ratio ("Correct Mem Efficiency")
//   efficient_share: correct slots with ratio > 1, over all slots ("Mem Efficient %")
struct MemoryMetrics {
  int slots = 0;
  int correct = 0;
  int measured_correct = 0;
  bool measured = false;  // false: some slot is correct but none has a memory ratio
  std::optional<double> efficiency;
  double efficient_share = 0;
  // Measured correct slots with ratio < 1 (more peak memory than the baseline), over the measured
  // correct slots; none when no correct slot was measured.
  std::optional<double> increased_share;
};
MemoryMetrics memory_metrics(std::span<const MemoryScored> slots);

}  // namespace kbv
