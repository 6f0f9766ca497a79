// How far a record's speedups can be trusted (record/trust.h): which findings and timing fields
// are timing warnings, their short labels, and a speedup's text with its 95% interval.
#include "record/trust.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kbv {
namespace trust_test {

using nlohmann::json;

Record typed(const json& j) { return record_from_json(j).record; }

json finding(const std::string& rule, const std::string& severity, const std::string& evidence = "",
             const std::string& cheat = "") {
  return {{"rule", rule}, {"severity", severity}, {"message", "m"}, {"evidence", evidence},
          {"cheat", cheat.empty() ? json(nullptr) : json(cheat)}};
}

TEST(TimingWarnings, OnlyTimingWarningsNeverRejectsOrOtherPhases) {
  EXPECT_TRUE(is_timing_warning(Finding::from_json(finding("timing_host_busy", "warn"))));
  EXPECT_TRUE(is_timing_warning(Finding::from_json(finding("cache_entry_refused", "warn", "", "T20"))));
  EXPECT_TRUE(is_timing_warning(Finding::from_json(finding("reference_disturbed", "warn", "", "T21"))));
  EXPECT_TRUE(is_timing_warning(Finding::from_json(finding("process_left_running", "warn", "", "T17"))));
  // A timing check that rejects is a verdict, not a warning about the figures.
  EXPECT_FALSE(is_timing_warning(Finding::from_json(finding("timing_mismatch", "reject", "timing.wall_check", "T4"))));
  EXPECT_FALSE(is_timing_warning(Finding::from_json(finding("impossible_speed", "reject", "", "T15"))));
  // Warnings of other phases.
  EXPECT_FALSE(is_timing_warning(Finding::from_json(finding("memory_leak", "warn"))));
  EXPECT_FALSE(is_timing_warning(Finding::from_json(finding("audit_undecided", "warn"))));
  EXPECT_FALSE(is_timing_warning(Finding::from_json(finding("kernel_not_called", "reject", "", "T1"))));
}

TEST(TimingWarnings, DisagreeingClocksAndKernelBenchChecksHaveTheirOwnLabels) {
  EXPECT_EQ(timing_warning_label(Finding::from_json(finding("timing_mismatch", "warn", "cuda events vs host clock", "T1"))),
            "clocks disagreed");
  // Under --protocol kernelbench the channel checks only warn: a different thing from the clocks.
  EXPECT_EQ(timing_warning_label(Finding::from_json(finding("timing_mismatch", "warn", "timing.wall_check", "T4"))),
            "timing check failed");
  EXPECT_EQ(timing_warning_label(Finding::from_json(finding("impossible_speed", "warn", "timing.floor_ms", "T15"))),
            "below the physical floor");
  EXPECT_EQ(timing_warning_label(Finding::from_json(finding("memory_leak", "warn"))), "");
}

// Paired rounds' own warnings (docs/TIMING.md, "Speedup intervals"): each its label, in the order.
TEST(TimingWarnings, PairedRoundWarningsHaveTheirOwnLabels) {
  EXPECT_EQ(timing_warning_label(Finding::from_json(finding("timing_round_stalled", "warn"))), "round stalled");
  EXPECT_EQ(timing_warning_label(Finding::from_json(finding("timing_too_few_rounds", "warn"))), "too few rounds");
  EXPECT_EQ(timing_warning_label(Finding::from_json(finding("timing_rounds_disagree", "warn"))), "rounds disagree");
  EXPECT_EQ(timing_warning_label(Finding::from_json(finding("timing_rounds_drift", "warn"))), "ratio drifted");
  json r = {{"verdict", "correct"},
            {"findings", json::array({finding("timing_rounds_disagree", "warn"), finding("timing_round_stalled", "warn"),
                                      finding("timing_host_busy", "warn"), finding("timing_rounds_drift", "warn")})}};
  EXPECT_EQ(timing_warning_labels(typed(r)),
            (std::vector<std::string>{"host busy", "round stalled", "ratio drifted", "rounds disagree"}));
}

TEST(TimingWarnings, LabelsOfARecordOnceEachInAFixedOrderFromFindingsAndFields) {
  json r = {{"verdict", "correct"},
            {"findings", json::array({finding("cache_entry_refused", "warn"), finding("timing_host_busy", "warn"),
                                      finding("timing_host_busy", "warn"), finding("memory_leak", "warn"),
                                      finding("timing_mismatch", "warn", "cuda events vs host clock", "T1")})},
            {"timing",
             {{"speedup", {{"tf32", 2.0}}},
              {"launch_hold", {{"us", 50}, {"held_ms", 0.05}, {"late", 3}}},
              {"clock", {{"source", "nvml"}, {"throttled_kept", 2}}}}}};
  EXPECT_EQ(timing_warning_labels(typed(r)),
            (std::vector<std::string>{"host busy", "clocks disagreed", "late launches", "throttled",
                                      "cache entry refused"}));
  // No late launch, nothing throttled, no finding: no warning.
  json quiet = {{"verdict", "correct"},
                {"timing",
                 {{"speedup", {{"tf32", 2.0}}},
                  {"launch_hold", {{"us", 50}, {"late", 0}}},
                  {"clock", {{"throttled_kept", 0}}}}}};
  EXPECT_TRUE(timing_warning_labels(typed(quiet)).empty());
  EXPECT_TRUE(timing_warning_labels(typed(json{{"verdict", "wrong_output"}})).empty());
  // Every label is one the order knows.
  for (const auto& label : timing_warning_labels(typed(r)))
    EXPECT_NE(std::find(timing_warning_label_order().begin(), timing_warning_label_order().end(), label),
              timing_warning_label_order().end());
}

TEST(SpeedupText, WithItsIntervalWhenTheRecordHasOne) {
  Timing t = timing_from_json(
      json{{"speedup", {{"tf32", 1.42}, {"fp32", 1.01}, {"compile", 0.5}}},
           {"speedup_ci95", {{"tf32", {1.30, 1.55}}, {"fp32", {0.97, 1.05}}}}});
  EXPECT_EQ(speedup_text(t, "tf32"), "1.420x [1.300, 1.550]");
  EXPECT_EQ(speedup_text(t, "tf32", 2, "×"), "1.42× [1.30, 1.55]");
  EXPECT_EQ(speedup_text(t, "compile"), "0.500x") << "no interval: the point estimate alone";
  EXPECT_EQ(speedup_text(t, "none"), "");
  ASSERT_TRUE(speedup_interval(t, "fp32"));
  EXPECT_DOUBLE_EQ(speedup_interval(t, "fp32")->first, 0.97);
  EXPECT_FALSE(speedup_interval(t, "compile"));
  EXPECT_EQ(speedups_text(t),
            "0.500x vs compile, 1.010x [0.970, 1.050] vs fp32 (no measurable difference), "
            "1.420x [1.300, 1.550] vs tf32 (faster)");
}

TEST(SpeedupText, AMalformedIntervalIsNoInterval) {
  for (const json& ci : {json::array({1.5, 1.2}), json::array({0.0, 1.2}), json::array({1.0}), json::array({-1.0, 2.0})}) {
    Timing t = timing_from_json(json{{"speedup", {{"tf32", 1.3}}}, {"speedup_ci95", {{"tf32", ci}}}});
    EXPECT_FALSE(speedup_interval(t, "tf32")) << ci.dump();
    EXPECT_EQ(speedup_text(t, "tf32"), "1.300x") << ci.dump();
  }
}

TEST(SampleLine, SpeedupsWithIntervalsThenTimingWarnings) {
  json r = {{"verdict", "correct"},
            {"findings", json::array({finding("timing_host_busy", "warn")})},
            {"timing", {{"speedup", {{"tf32", 1.01}}}, {"speedup_ci95", {{"tf32", {0.97, 1.05}}}}}}};
  EXPECT_EQ(sample_line_suffix(typed(r)),
            " · speedup 1.010x [0.970, 1.050] vs tf32 (no measurable difference) · timing warnings: host busy");
  r.erase("findings");
  EXPECT_EQ(sample_line_suffix(typed(r)), " · speedup 1.010x [0.970, 1.050] vs tf32 (no measurable difference)");
  EXPECT_EQ(sample_line_suffix(typed(json{{"verdict", "wrong_output"}})), "") << "nothing timed, nothing said";
}

}  // namespace trust_test
}  // namespace kbv
