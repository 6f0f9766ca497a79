// Metric functions against hand-computed examples (docs/METRICS.md).
#include "report/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kbv {
namespace {

Scored ok(double speedup) { return {true, speedup}; }
Scored ok_untimed() { return {true, std::nullopt}; }
Scored bad(double speedup = 0) { return {false, speedup > 0 ? std::optional<double>(speedup) : std::nullopt}; }

TEST(FastP, CountsCorrectAndStrictlyFasterOverAllSlots) {
  // 5 slots: speedups 2.0, 1.0 (a tie at p = 1), 0.5 correct; a wrong one at 3.0; one missing.
  std::vector<Scored> slots = {ok(2.0), ok(1.0), ok(0.5), bad(3.0), Scored{}};
  EXPECT_DOUBLE_EQ(fast_p(slots, 0.0), 3.0 / 5);
  EXPECT_DOUBLE_EQ(fast_p(slots, 0.5), 2.0 / 5) << "0.5 is not > 0.5";
  EXPECT_DOUBLE_EQ(fast_p(slots, 0.8), 2.0 / 5);
  EXPECT_DOUBLE_EQ(fast_p(slots, 1.0), 1.0 / 5) << "a tie at p does not count, as upstream's speed_up > p";
  EXPECT_DOUBLE_EQ(fast_p(slots, 1.5), 1.0 / 5);
  EXPECT_DOUBLE_EQ(fast_p(slots, 2.0), 0.0) << "2.0 is not > 2.0";
}

TEST(FastP, MissingSamplesAreFailuresAndUntimedNeverCounts) {
  // Upstream patches a missing problem with correctness false: it stays in the denominator.
  std::vector<Scored> slots = {ok(1.2), Scored{}, Scored{}, ok_untimed()};
  EXPECT_DOUBLE_EQ(fast_p(slots, 1.0), 0.25);
  EXPECT_DOUBLE_EQ(fast_p(slots, 0.0), 0.25) << "a correct sample with no time is not fast at any p";
}

TEST(FastP, ZeroCorrectAndNoSlots) {
  std::vector<Scored> slots = {bad(5.0), bad(), Scored{}};
  for (double p : kFastPThresholds) EXPECT_DOUBLE_EQ(fast_p(slots, p), 0.0);
  EXPECT_DOUBLE_EQ(fast_p({}, 1.0), 0.0);
}

TEST(Geomean, HandComputed) {
  std::vector<double> v = {2.0, 8.0};
  EXPECT_DOUBLE_EQ(*geomean(v), 4.0);
  std::vector<double> w = {0.5, 2.0, 1.0};
  EXPECT_NEAR(*geomean(w), 1.0, 1e-12);
  EXPECT_FALSE(geomean(std::vector<double>{}).has_value());
  EXPECT_FALSE(geomean(std::vector<double>{1.0, 0.0}).has_value());
  EXPECT_FALSE(geomean(std::vector<double>{1.0, NAN}).has_value());
}

TEST(GeomeanSpeedup, CorrectOnlyAndCorrectAndFaster) {
  std::vector<Scored> slots = {ok(4.0), ok(0.25), ok(1.0), bad(100.0), ok_untimed(), Scored{}};
  // Correct with a time: 4, 0.25, 1 -> (4 * 0.25 * 1)^(1/3) = 1.
  EXPECT_NEAR(*geomean_speedup_correct(slots), 1.0, 1e-12);
  // Correct and faster (> 1): only 4.
  EXPECT_NEAR(*geomean_speedup_correct_and_faster(slots), 4.0, 1e-12);
  std::vector<Scored> none = {bad(2.0), Scored{}};
  EXPECT_FALSE(geomean_speedup_correct(none).has_value()) << "upstream returns 0; kbv says none";
  std::vector<Scored> slow = {ok(0.9), ok(1.0)};
  EXPECT_FALSE(geomean_speedup_correct_and_faster(slow).has_value()) << "1.0 is not faster";
}

TEST(PassAtK, UnbiasedEstimator) {
  // n = 5, c = 2: pass@1 = c/n; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10.
  EXPECT_NEAR(*pass_at_k(5, 2, 1), 0.4, 1e-12);
  EXPECT_NEAR(*pass_at_k(5, 2, 2), 0.7, 1e-12);
  // n = 10, c = 3, k = 5: 1 - C(7,5)/C(10,5) = 1 - 21/252.
  EXPECT_NEAR(*pass_at_k(10, 3, 5), 1.0 - 21.0 / 252.0, 1e-12);
  EXPECT_DOUBLE_EQ(*pass_at_k(5, 0, 3), 0.0) << "zero correct";
  EXPECT_DOUBLE_EQ(*pass_at_k(5, 4, 2), 1.0) << "n - c < k: every draw of k holds a correct one";
  EXPECT_DOUBLE_EQ(*pass_at_k(5, 5, 5), 1.0);
  EXPECT_FALSE(pass_at_k(5, 2, 6).has_value()) << "k > n";
  EXPECT_FALSE(pass_at_k(5, 6, 1).has_value()) << "c > n";
  EXPECT_FALSE(pass_at_k(0, 0, 1).has_value());
  // Large n stays exact (no factorial overflow): n = 200, c = 1, k = 1 -> 1/200.
  EXPECT_NEAR(*pass_at_k(200, 1, 1), 0.005, 1e-12);
}

TEST(BestOfN, FastestCorrectWinsUntimedOnlyAsFallback) {
  std::vector<Scored> samples = {bad(9.0), ok(1.5), ok_untimed(), ok(2.5), ok(2.5)};
  EXPECT_EQ(best_of_n(samples), 3u) << "the first of two equal best speedups";
  std::vector<Scored> untimed = {bad(), ok_untimed(), ok_untimed()};
  EXPECT_EQ(best_of_n(untimed), 1u);
  std::vector<Scored> timed_after = {ok_untimed(), ok(0.5)};
  EXPECT_EQ(best_of_n(timed_after), 1u) << "a timed correct sample beats an untimed one";
  std::vector<Scored> none = {bad(3.0), Scored{}};
  EXPECT_FALSE(best_of_n(none).has_value());
}

TEST(SpeedMetrics, NotMeasuredOnlyWhenCorrectSamplesLackTimes) {
  std::vector<Scored> untimed = {ok_untimed(), ok_untimed(), bad()};
  SpeedMetrics m = speed_metrics(untimed);
  EXPECT_FALSE(m.measured);
  EXPECT_EQ(m.correct, 2);
  EXPECT_EQ(m.timed, 0);
  EXPECT_FALSE(m.geomean_correct.has_value());

  std::vector<Scored> zero = {bad(2.0), Scored{}};
  SpeedMetrics z = speed_metrics(zero);
  EXPECT_TRUE(z.measured) << "zero correct: fast_p is a true 0, not 'not measured'";
  EXPECT_DOUBLE_EQ(z.fast_p[kFast1], 0.0);

  std::vector<Scored> mixed = {ok(2.0), ok_untimed(), Scored{}, bad(4.0)};
  SpeedMetrics x = speed_metrics(mixed);
  EXPECT_TRUE(x.measured);
  EXPECT_EQ(x.correct, 2);
  EXPECT_EQ(x.timed, 1);
  EXPECT_DOUBLE_EQ(x.fast_p[kFast1], 0.25);
  EXPECT_DOUBLE_EQ(*x.geomean_correct, 2.0);
}

TEST(MemoryMetrics, EfficiencyOverCorrectShareOverAll) {
  // Ratios baseline/candidate: 2 (correct), 0.5 (correct), 1.0 (correct, not strictly less
  // memory), 4 (wrong: ignored), one correct without a measurement, one empty slot.
  std::vector<MemoryScored> slots = {{true, 2.0}, {true, 0.5}, {true, 1.0}, {false, 4.0}, {true, std::nullopt}, {}};
  MemoryMetrics m = memory_metrics(slots);
  EXPECT_TRUE(m.measured);
  EXPECT_EQ(m.correct, 4);
  EXPECT_EQ(m.measured_correct, 3);
  EXPECT_NEAR(*m.efficiency, 1.0, 1e-12);        // (2 * 0.5 * 1)^(1/3)
  EXPECT_DOUBLE_EQ(m.efficient_share, 1.0 / 6);  // only the ratio-2 sample, over all 6 slots
  ASSERT_TRUE(m.increased_share.has_value());
  EXPECT_DOUBLE_EQ(*m.increased_share, 1.0 / 3);  // the ratio-0.5 sample, over the 3 measured correct ones

  std::vector<MemoryScored> unmeasured = {{true, std::nullopt}};
  EXPECT_FALSE(memory_metrics(unmeasured).measured);
  EXPECT_FALSE(memory_metrics(unmeasured).increased_share.has_value());
  std::vector<MemoryScored> zero = {{false, 2.0}};
  MemoryMetrics z = memory_metrics(zero);
  EXPECT_TRUE(z.measured);
  EXPECT_FALSE(z.efficiency.has_value());
  EXPECT_DOUBLE_EQ(z.efficient_share, 0.0);
}

}  // namespace
}  // namespace kbv
