// Metric functions against hand-computed examples (docs/METRICS.md).
#include "report/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kbv {
namespace metrics_test {

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

Scored ok_ci(double speedup, double low, double high) { return {true, speedup, Interval{low, high}}; }

TEST(FastPInterval, CountsOnlyWhenTheLowerBoundClearsTheThreshold) {
  // 1.5 [1.2, 1.8] clears 1; 1.3 [0.9, 1.7] straddles 1 (uncertain); 0.9 [0.8, 1.05] straddles 1;
  // 1.1 without an interval (an older record): its point estimate; a wrong one at [3, 4]; a missing slot.
  std::vector<Scored> slots = {ok_ci(1.5, 1.2, 1.8), ok_ci(1.3, 0.9, 1.7), ok_ci(0.9, 0.8, 1.05), ok(1.1),
                               Scored{false, 3.5, Interval{3.0, 4.0}}, Scored{}};
  EXPECT_DOUBLE_EQ(fast_p(slots, 1.0, FastPMode::interval), 2.0 / 6) << "1.5 [1.2, 1.8] and the point 1.1";
  EXPECT_DOUBLE_EQ(fast_p(slots, 1.0, FastPMode::point), 3.0 / 6) << "the old definition: 1.5, 1.3, 1.1";
  EXPECT_DOUBLE_EQ(fast_p(slots, 1.0, FastPMode::point), fast_p(slots, 1.0));
  EXPECT_EQ(fast_p_uncertain(slots, 1.0), 2) << "1.3 [0.9, 1.7] and 0.9 [0.8, 1.05]; never the wrong one";
  EXPECT_DOUBLE_EQ(fast_p(slots, 0.85, FastPMode::interval), 3.0 / 6);  // 1.2 and 0.9 clear 0.85, 0.8 does not
  EXPECT_EQ(fast_p_uncertain(slots, 0.85), 1);
  EXPECT_EQ(fast_p_uncertain(slots, 2.0), 0) << "no interval reaches above 2 among the correct ones";
  // A lower bound equal to p does not clear it, as a point estimate equal to p does not.
  std::vector<Scored> tie = {ok_ci(1.2, 1.0, 1.4)};
  EXPECT_DOUBLE_EQ(fast_p(tie, 1.0, FastPMode::interval), 0.0);
  EXPECT_EQ(fast_p_uncertain(tie, 1.0), 1);
}

TEST(FastPInterval, ModeNames) {
  EXPECT_EQ(parse_fast_p_mode("interval"), FastPMode::interval);
  EXPECT_EQ(parse_fast_p_mode("point"), FastPMode::point);
  EXPECT_FALSE(parse_fast_p_mode("median").has_value());
  EXPECT_STREQ(fast_p_mode_name(FastPMode::point), "point");
  EXPECT_STREQ(fast_p_mode_name(FastPMode::interval), "interval");
}

TEST(GeomeanInterval, WithoutIntervalsAndOneValueItIsThePoint) {
  std::vector<Estimate> one = {{2.0, std::nullopt}};
  auto ci = geomean_interval(one);
  ASSERT_TRUE(ci.has_value());
  EXPECT_NEAR(ci->first, 2.0, 1e-12);
  EXPECT_NEAR(ci->second, 2.0, 1e-12);
  std::vector<Estimate> same = {{3.0, std::nullopt}, {3.0, std::nullopt}, {3.0, std::nullopt}};
  EXPECT_NEAR(geomean_interval(same)->first, 3.0, 1e-12);
  EXPECT_NEAR(geomean_interval(same)->second, 3.0, 1e-12);
  std::vector<Estimate> none;
  EXPECT_FALSE(geomean_interval(none).has_value());
  std::vector<Estimate> zero = {{0.0, std::nullopt}};
  EXPECT_FALSE(geomean_interval(zero).has_value());
  EXPECT_FALSE(geomean_interval(one, kGeomeanBootstrapSeed, 0).has_value());
}

TEST(GeomeanInterval, ContainsThePointWidensWithTheRecordsIntervalsAndIsDeterministic) {
  // Speedups 1, 2, 4 (geomean 2): resampling the records alone spreads the geomean.
  std::vector<Estimate> points = {{1.0, std::nullopt}, {2.0, std::nullopt}, {4.0, std::nullopt}};
  auto p = geomean_interval(points);
  ASSERT_TRUE(p.has_value());
  EXPECT_LT(p->first, 2.0);
  EXPECT_GT(p->second, 2.0);
  EXPECT_GE(p->first, 1.0 - 1e-12) << "no replicate is below the smallest value";
  EXPECT_LE(p->second, 4.0 + 1e-12) << "no replicate is above the largest value";
  // The same records with wide intervals of their own: a wider interval.
  std::vector<Estimate> wide = {{1.0, Interval{0.5, 2.0}}, {2.0, Interval{1.0, 4.0}}, {4.0, Interval{2.0, 8.0}}};
  auto w = geomean_interval(wide);
  ASSERT_TRUE(w.has_value());
  EXPECT_LT(w->first, p->first);
  EXPECT_GT(w->second, p->second);
  // Deterministic: the same seed gives the same interval; another seed another (close) one.
  auto again = geomean_interval(wide);
  EXPECT_EQ(w->first, again->first);
  EXPECT_EQ(w->second, again->second);
  auto other = geomean_interval(wide, kGeomeanBootstrapSeed + 1);
  EXPECT_NE(w->first, other->first);
  EXPECT_NEAR(w->first, other->first, 0.1 * w->first);
}

TEST(GeomeanInterval, OneRecordsIntervalIsRecoveredFromItsDraws) {
  // A single record: the replicates are its draws, log-normal with the interval at 1.96 sigma, so
  // the 95% interval of the geomean is the record's own (up to the bootstrap's noise).
  std::vector<Estimate> one = {{1.5, Interval{1.2, 1.8}}};
  auto ci = geomean_interval(one, kGeomeanBootstrapSeed, 20000);
  ASSERT_TRUE(ci.has_value());
  EXPECT_NEAR(ci->first, 1.2, 0.02);
  EXPECT_NEAR(ci->second, 1.8, 0.03);
}

TEST(SpeedMetrics, IntervalsUncertainMembersAndPointFallbacksAreCounted) {
  std::vector<Scored> slots = {ok_ci(1.5, 1.2, 1.8), ok_ci(1.3, 0.9, 1.7), ok(1.1), ok_untimed(), bad(2.0)};
  SpeedMetrics m = speed_metrics(slots);
  EXPECT_EQ(m.mode, FastPMode::interval) << "the default";
  EXPECT_DOUBLE_EQ(m.fast_p[kFast1], 2.0 / 5);
  EXPECT_EQ(m.fast_p_uncertain[kFast1], 1);
  EXPECT_EQ(m.timed_without_interval, 1);
  ASSERT_TRUE(m.geomean_correct && m.geomean_correct_ci95);
  EXPECT_LE(m.geomean_correct_ci95->first, *m.geomean_correct);
  EXPECT_GE(m.geomean_correct_ci95->second, *m.geomean_correct);
  ASSERT_TRUE(m.geomean_correct_and_faster_ci95.has_value());
  SpeedMetrics point = speed_metrics(slots, FastPMode::point);
  EXPECT_EQ(point.mode, FastPMode::point);
  EXPECT_DOUBLE_EQ(point.fast_p[kFast1], 3.0 / 5);
  EXPECT_EQ(*point.geomean_correct, *m.geomean_correct) << "the geomean does not depend on fast_p's definition";
  // Nothing timed: no interval either.
  std::vector<Scored> untimed = {ok_untimed()};
  EXPECT_FALSE(speed_metrics(untimed).geomean_correct_ci95.has_value());
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

}  // namespace metrics_test
}  // namespace kbv
