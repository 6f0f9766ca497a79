// The per-call outside bound (measure/call_bound.h): samples against the supervisor's windows.
#include <vector>

#include <gtest/gtest.h>

#include "measure/call_bound.h"

namespace kbv {
namespace call_bound_test {

TEST(CallBound, HonestSamplesFitTheirWindows) {
  // Windows a round trip (0.03 ms) longer than the samples; pings of 0.02-0.04 ms.
  std::vector<double> samples, windows, pings;
  for (int i = 0; i < 100; ++i) {
    samples.push_back(0.1 + 0.001 * (i % 7));
    windows.push_back(samples.back() + 0.03);
    pings.push_back(0.02 + 0.0002 * i);
  }
  CallBound b = bound_calls(samples, windows, pings);
  EXPECT_TRUE(b.ok);
  EXPECT_EQ(b.checked, 100);
  EXPECT_EQ(b.short_calls, 0);
  EXPECT_NEAR(b.median_gap_ms, 0.03, 1e-9);
  EXPECT_GE(b.allowance_ms, kCallBoundFloorMs);
}

TEST(CallBound, ARewrittenClockIsCaughtCallByCall) {
  // The worker's clock runs slow while forward computes: every sample a tenth of its window.
  std::vector<double> samples, windows, pings(50, 0.03);
  for (int i = 0; i < 50; ++i) {
    windows.push_back(0.2);
    samples.push_back(0.02);
  }
  CallBound b = bound_calls(samples, windows, pings);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.short_calls, 50);
  EXPECT_EQ(b.worst_sample_ms, 0.02);
  EXPECT_EQ(b.worst_window_ms, 0.2);
}

TEST(CallBound, ABusyHostDelayingSomeWakeUpsIsNotAForgery) {
  // A fifth of the calls' end marks arrive milliseconds late (the worker was descheduled).
  std::vector<double> samples(100, 1.0), windows(100, 1.03), pings(100, 0.03);
  for (int i = 0; i < 100; i += 5) windows[static_cast<size_t>(i)] = 4.0;
  CallBound b = bound_calls(samples, windows, pings);
  EXPECT_EQ(b.short_calls, 20);
  EXPECT_TRUE(b.ok);
}

TEST(CallBound, ForgingMostCallsFailsEvenWhenAFewAreHonest) {
  std::vector<double> samples(40, 0.01), windows(40, 0.5), pings(40, 0.03);
  for (int i = 0; i < 10; ++i) samples[static_cast<size_t>(i)] = 0.49;
  CallBound b = bound_calls(samples, windows, pings);
  EXPECT_EQ(b.short_calls, 30);
  EXPECT_FALSE(b.ok);
}

TEST(CallBound, TheAllowanceFollowsTheRoundTripsMeanwhile) {
  // Slow round trips (a loaded host) widen the allowance: 3 x their 90th percentile.
  std::vector<double> samples(10, 1.0), windows(10, 1.5), pings(10, 0.2);
  CallBound b = bound_calls(samples, windows, pings);
  EXPECT_NEAR(b.allowance_ms, 0.6, 1e-9);
  EXPECT_TRUE(b.ok);
  // Without pings the floor stands.
  CallBound none = bound_calls(samples, windows, {});
  EXPECT_EQ(none.allowance_ms, kCallBoundFloorMs);
  EXPECT_FALSE(none.ok);
}

TEST(CallBound, TheGpuLaunchHoldIsInEveryWindowAndNoSample) {
  // 0.5 ms of hold before each call's start event: honest windows are 0.53 ms longer.
  std::vector<double> samples(20, 2.0), windows(20, 2.53), pings(20, 0.01);
  EXPECT_FALSE(bound_calls(samples, windows, pings).ok);
  CallBound b = bound_calls(samples, windows, pings, 0.55);
  EXPECT_TRUE(b.ok);
  EXPECT_NEAR(b.allowance_ms, kCallBoundFloorMs + 0.55, 1e-9);
}

TEST(CallBound, WaitsForACpuMakeAFailedBoundUnjudgedNeverHonest) {
  // An oversubscribed host: most windows hold milliseconds the worker spent waiting for a CPU,
  // outside its samples (the kernel's account of both threads' waits says how long).
  std::vector<double> samples(40, 0.1), windows(40, 0.13), pings(40, 0.03), waits(40, 0.0);
  for (size_t i = 0; i < 30; ++i) {
    windows[i] = 4.6;
    waits[i] = 4.5;
  }
  CallBound b = bound_calls(samples, windows, pings, 0, waits);
  EXPECT_EQ(b.short_calls, 30);
  EXPECT_EQ(b.waited_calls, 30);
  EXPECT_NEAR(b.waited_ms, 4.5, 1e-9);
  EXPECT_FALSE(b.ok) << "no speedup can be claimed from such windows";
  EXPECT_FALSE(b.judged) << "nor can a forgery be shown";
  // The attacker's version: a forged clock, its worker's main thread kept waiting by its own helper
  // thread that computes meanwhile. The kernel's account looks the same, so the waits earn it no
  // more than the honest run on a busy host: unjudged, never ok.
  std::vector<double> forged(40, 0.005), windows2(40, 0.2), waits2(40, 0.19);
  CallBound f = bound_calls(forged, windows2, pings, 0, waits2);
  EXPECT_FALSE(f.ok);
  EXPECT_FALSE(f.judged);
}

TEST(CallBound, WaitsThatDoNotCoverTheShortfallStillShowAForgery) {
  // A clock running slow during forward: each window 0.2 ms, each sample 0.02 ms; the host's
  // waits (0.01 ms) explain a sliver of it.
  std::vector<double> samples(50, 0.02), windows(50, 0.2), pings(50, 0.03), waits(50, 0.01);
  CallBound b = bound_calls(samples, windows, pings, 0, waits);
  EXPECT_EQ(b.short_calls, 50);
  EXPECT_EQ(b.waited_calls, 0);
  EXPECT_FALSE(b.ok);
  EXPECT_TRUE(b.judged) << "a forgery, shown";
  // Unknown waits (-1: the kernel's account could not be read) explain nothing.
  std::vector<double> unknown(50, -1.0);
  CallBound u = bound_calls(samples, windows, pings, 0, unknown);
  EXPECT_TRUE(u.judged);
  EXPECT_EQ(u.waited_ms, -1.0);
  EXPECT_FALSE(u.to_json().contains("waited_ms"));
  // Only the short calls the waits do not explain count towards a forgery.
  for (size_t i = 0; i < 20; ++i) waits[i] = 0.5;
  CallBound h = bound_calls(samples, windows, pings, 0, waits);
  EXPECT_EQ(h.waited_calls, 20);
  EXPECT_TRUE(h.judged) << "30 of 50 calls short beyond their waits: more than half";
  for (size_t i = 20; i < 26; ++i) waits[i] = 0.5;
  EXPECT_FALSE(bound_calls(samples, windows, pings, 0, waits).judged) << "24 of 50 unexplained: not more than half";
}

TEST(CallBound, CallsWithoutAWindowAreNotChecked) {
  std::vector<double> samples = {0.01, 0.01}, windows = {-1, 0.02}, pings = {0.01};
  CallBound b = bound_calls(samples, windows, pings);
  EXPECT_EQ(b.checked, 1);
  EXPECT_TRUE(b.ok);
}

TEST(CpuBound, HonestCallsUseNoMoreCpuThanTheirSamples) {
  // A single-threaded call: the process's CPU in the window is the sample plus the marks' handling
  // (a median of 0.02-0.045 ms on the CI machine); a few calls more (single calls up to 0.19 ms).
  std::vector<double> samples, cpu;
  for (int i = 0; i < 100; ++i) {
    samples.push_back(0.06 + 0.001 * (i % 5));
    cpu.push_back(samples.back() + (i % 10 == 0 ? 0.25 : 0.045));
  }
  CpuBound b = bound_cpu(samples, cpu, 1);
  EXPECT_TRUE(b.ok);
  EXPECT_EQ(b.checked, 100);
  EXPECT_EQ(b.over_calls, 10);
  EXPECT_NEAR(b.median_excess_ms, 0.045, 1e-9);
  EXPECT_NEAR(b.allowance_ms, kCpuBoundFloorMs + kCpuBoundSampleFraction * 0.062, 1e-9);
  EXPECT_EQ(b.worst_sample, 0);
  // A 24 ms call (the CrossEntropyLoss example): 0.08 ms beyond it is within its share.
  std::vector<double> long_samples(20, 24.0), long_cpu(20, 24.0 + 0.2);
  EXPECT_TRUE(bound_cpu(long_samples, long_cpu, 1).ok);
}

TEST(CpuBound, AClockThatLagsWhileTheCallComputesIsCaught) {
  // A clock rewritten to run behind by what each call computes: a call of 1 ms reported as 0.05
  // (examples/level1/23_Softmax/cpu_plt_clock.py). Waits for a CPU on a busy host are not CPU
  // time: the figures are the same there, where the wall-clock bound can no longer judge.
  std::vector<double> samples(60, 0.05), cpu(60, 0.05 + 0.95 + 0.03);
  CpuBound b = bound_cpu(samples, cpu, 1);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.over_calls, 60);
  EXPECT_EQ(b.worst_sample, 0);
  EXPECT_DOUBLE_EQ(b.worst_cpu_ms, 1.03);
  // The attacker's other way: compute on a helper thread while the main thread reports a short
  // call. The process CPU clock counts every thread.
  std::vector<double> helper(60, 0.05 + 0.95 + 0.95);
  EXPECT_FALSE(bound_cpu(samples, helper, 1).ok);
  // The bound's resolution: 0.06 ms hidden a call (cpu_plt_clock.py on the 64 x 64 matmul)
  // is inside the honest calls' spread on the CI machine and passes.
  std::vector<double> slight(60, 0.05 + 0.06 + 0.03);
  EXPECT_TRUE(bound_cpu(samples, slight, 1).ok);
}

TEST(CpuBound, ABudgetOfSeveralCpusAllowsThatManyTimesTheSample) {
  // ATen's pool on 4 CPUs: 4 x 1 ms of CPU in a 1 ms call is honest, and on 1 CPU it is not.
  std::vector<double> samples(20, 1.0), cpu(20, 4.0);
  EXPECT_TRUE(bound_cpu(samples, cpu, 4).ok);
  EXPECT_FALSE(bound_cpu(samples, cpu, 1).ok);
  EXPECT_EQ(bound_cpu(samples, cpu, 0).threads, 1) << "no budget counts as one CPU";
}

TEST(CpuBound, CallsWithoutACpuReadingAreNotCheckedAndHalfMayBeOver) {
  std::vector<double> samples(10, 0.1), cpu(10, -1.0);
  CpuBound none = bound_cpu(samples, cpu, 1);
  EXPECT_TRUE(none.ok);
  EXPECT_EQ(none.checked, 0);
  for (int i = 0; i < 10; ++i) cpu[i] = i < 5 ? 0.5 : 0.12;  // half over: within the rule's fraction
  EXPECT_TRUE(bound_cpu(samples, cpu, 1).ok);
  cpu[5] = 0.5;  // six of ten
  EXPECT_FALSE(bound_cpu(samples, cpu, 1).ok);
}

TEST(CpuBound, AHelperProcessComputingTheCallsIsCaughtBesideTheWorker) {
  // examples/level1/23_Softmax/cpu_plt_clock_helper.py: the worker's own CPU per call is the copies
  // (inside the per-call bound), the helper process's is the softmax, ~1 ms a call for a reported
  // 0.05 ms: 92 calls, 92 ms beside against an allowance of 5 + 10% x 4.6 ms.
  std::vector<double> samples(92, 0.05);
  BesideBound forged = bound_beside(92.0, samples, 1);
  EXPECT_FALSE(forged.ok);
  EXPECT_DOUBLE_EQ(forged.allowance_ms, kBesideFloorMs + kBesideFraction * 92 * 0.05);
  EXPECT_TRUE(bound_beside(0.0, samples, 1).ok) << "an honest worker's other processes use nothing";
  EXPECT_TRUE(bound_beside(4.0, samples, 1).ok) << "the floor: a few ms of the sandbox's own processes";
  // Long honest calls: a tenth of their CPU beside them is allowed, on every CPU of the budget.
  std::vector<double> long_calls(50, 2.0);  // 100 ms reported: 15 ms allowed beside on 1 CPU, 45 on 4
  EXPECT_TRUE(bound_beside(12.0, long_calls, 1).ok);
  EXPECT_FALSE(bound_beside(20.0, long_calls, 1).ok);
  EXPECT_TRUE(bound_beside(20.0, long_calls, 4).ok);
}

TEST(CallBound, SamplesBackInCallOrder) {
  std::vector<double> kept = {1, 2, 3}, discarded = {9, 8};
  std::vector<int> at = {1, 4};
  auto s = samples_in_order(kept, discarded, at);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, (std::vector<double>{1, 9, 2, 3, 8}));
  EXPECT_TRUE(samples_in_order(kept, {}, {}));
  EXPECT_FALSE(samples_in_order(kept, discarded, std::vector<int>{1}));     // counts differ
  EXPECT_FALSE(samples_in_order(kept, discarded, std::vector<int>{1, 1}));  // the same place twice
  EXPECT_FALSE(samples_in_order(kept, discarded, std::vector<int>{1, 5}));  // past the end
}

}  // namespace call_bound_test
}  // namespace kbv
