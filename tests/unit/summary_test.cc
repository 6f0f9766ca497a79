// Records -> views -> per-level summaries, including records with and without the timing and
// memory fields (docs/RECORD.md; they are optional).
#include "report/summary.h"

#include <algorithm>

#include "report/render.h"

#include <gtest/gtest.h>

namespace kbv {
namespace summary_test {

using nlohmann::json;

// The fixtures are stored JSON records; the report reads them as typed records (record/record.h).
SampleView view_of(const json& j) { return kbv::view_of(record_from_json(j).record); }
std::vector<Record> typed(const std::vector<json>& records) {
  std::vector<Record> out;
  for (const auto& j : records) out.push_back(record_from_json(j).record);
  return out;
}
RunSummary summarize(const std::string& name, const std::vector<json>& records, const std::vector<ProblemSlot>& problems,
                     const std::string& baseline) {
  return kbv::summarize(name, typed(records), problems, baseline);
}

json protocol(const std::string& name = "kbv", int trials = 2) {
  json dists = name == "kernelbench" ? json::array({{{"name", "D1"}, {"scale", 1.0}}})
                                     : json::array({{{"name", "D1"}, {"scale", 1.0}},
                                                    {{"name", "D2"}, {"scale", 3.0}},
                                                    {{"name", "D3"}, {"scale", 0.01}},
                                                    {{"name", "D4"}, {"scale", -1.0}}});
  return {{"name", name}, {"trials", trials}, {"distributions", dists}, {"device_name", "NVIDIA H200"}};
}

// Distribution entries for `trials` trials; `fail` names a distribution that fails in every trial;
// `stop_after` cuts the list (a call failure stopped the evaluation there).
json dists(int trials, const std::string& fail = "", int stop_after = -1) {
  json out = json::array();
  for (int t = 0; t < trials; ++t)
    for (const char* d : {"D1", "D2", "D3", "D4"}) {
      if (stop_after >= 0 && static_cast<int>(out.size()) == stop_after) return out;
      out.push_back({{"trial", t}, {"distribution", d}, {"passed", fail != d}});
    }
  return out;
}

json record(int level, int problem, int sample, const std::string& verdict, json distributions = json::array()) {
  return {{"level", level},
          {"problem_id", problem},
          {"sample_id", sample},
          {"problem", "problems/level" + std::to_string(level) + "/" + std::to_string(problem) + "_P.py"},
          {"compiled", verdict != "compile_error"},
          {"correctness", verdict == "correct"},
          {"verdict", verdict},
          {"message", verdict == "correct" ? "passed 8 of 8 checks" : "it failed: " + verdict},
          {"findings", json::array()},
          {"distributions", distributions},
          {"runtime", -1.0},
          {"protocol", protocol()}};
}

json timed(json r, double tf32, double fp32, std::optional<double> memory_tf32 = std::nullopt) {
  r["runtime"] = 1.0;
  r["timing"] = {{"method", "cuda-events+host-sync"},
                 {"candidate", {{"median_ms", 1.0}}},
                 {"speedup", {{"tf32", tf32}, {"fp32", fp32}}},
                 {"speed_of_light", 0.42}};
  if (memory_tf32)
    r["memory"] = {{"measured", true}, {"ratio", {{"tf32", *memory_tf32}, {"fp32", *memory_tf32}}}};
  else
    r["memory"] = {{"measured", false}, {"reason", "CPU run"}};
  return r;
}

TEST(View, CorrectRecordPassesBothGates) {
  SampleView v = view_of(timed(record(1, 19, 0, "correct", dists(2)), 1.5, 3.0, 1.25));
  EXPECT_TRUE(v.present);
  EXPECT_EQ(v.problem, "19_P.py");
  EXPECT_EQ(v.standard, true);
  EXPECT_EQ(v.hidden, true);
  EXPECT_DOUBLE_EQ(v.speedup.at("tf32"), 1.5);
  EXPECT_DOUBLE_EQ(v.speedup.at("fp32"), 3.0);
  EXPECT_DOUBLE_EQ(v.memory_ratio.at("tf32"), 1.25);
  EXPECT_DOUBLE_EQ(*v.speed_of_light, 0.42);
  EXPECT_DOUBLE_EQ(*v.runtime_ms, 1.0);
  EXPECT_TRUE(v.reason.empty());
}

TEST(View, HiddenDistributionFailurePassesOnlyTheStandardCheck) {
  SampleView v = view_of(record(1, 19, 0, "wrong_output", dists(2, "D4")));
  EXPECT_EQ(v.standard, true) << "every D1 check of every trial passed";
  EXPECT_EQ(v.hidden, false);
  EXPECT_EQ(v.failed_distributions, std::vector<std::string>{"D4"});
  EXPECT_FALSE(v.standard_incomplete);
}

TEST(View, D1FailureFailsBothGates) {
  SampleView v = view_of(record(1, 19, 0, "wrong_output", dists(2, "D1")));
  EXPECT_EQ(v.standard, false);
  EXPECT_EQ(v.hidden, false);
}

TEST(View, CrashOnAHiddenDistributionLeavesTheStandardCheckIncomplete) {
  // Trial 0: D1 passed, then the call on D2 crashed: D1 of trial 1 never ran.
  SampleView v = view_of(record(1, 19, 0, "runtime_error", dists(2, "", 1)));
  EXPECT_EQ(v.standard, false);
  EXPECT_TRUE(v.standard_incomplete);
  // A crash on D1 itself (trial 1's first call) is a plain standard failure.
  SampleView w = view_of(record(1, 19, 0, "crashed", dists(2, "", 4)));
  EXPECT_EQ(w.standard, false);
  EXPECT_FALSE(w.standard_incomplete);
}

TEST(View, RejectedCheatNamesItsClass) {
  json r = record(1, 19, 0, "rejected", dists(2));
  r["findings"] = json::array({{{"rule", "input_mutation"}, {"severity", "reject"}, {"cheat", "T8"}},
                               {{"rule", "fp16_hint"}, {"severity", "warn"}, {"cheat", nullptr}}});
  SampleView v = view_of(r);
  EXPECT_EQ(v.cheats, std::vector<std::string>{"T8 input_mutation"});
  EXPECT_EQ(v.standard, false);
  EXPECT_EQ(v.hidden, false);
}

TEST(View, KernelBenchProtocolHasNoHiddenGate) {
  json r = record(1, 19, 0, "correct");
  r["protocol"] = protocol("kernelbench", 5);
  SampleView v = view_of(r);
  EXPECT_EQ(v.standard, true);
  EXPECT_FALSE(v.hidden.has_value());
}

TEST(View, RecordsWithoutTimingOrMemoryFieldsMeasureNothing) {
  SampleView v = view_of(record(1, 19, 0, "correct", dists(2)));  // written before timing landed
  EXPECT_TRUE(v.speedup.empty());
  EXPECT_TRUE(v.memory_ratio.empty());
  EXPECT_FALSE(v.speed_of_light.has_value());
  EXPECT_FALSE(v.runtime_ms.has_value()) << "runtime -1 means not timed";
}

TEST(Summarize, DenominatorFromTheDatasetCountsMissingProblems) {
  std::vector<json> records = {timed(record(1, 1, 0, "correct", dists(2)), 2.0, 4.0, 2.0),
                               timed(record(1, 2, 0, "wrong_output", dists(2, "D3")), 3.0, 6.0, 1.0),
                               record(1, 3, 0, "compile_error")};
  std::vector<ProblemSlot> problems = {
      {1, 1, "1_A.py"}, {1, 2, "2_B.py"}, {1, 3, "3_C.py"}, {1, 4, "4_D.py"}, {2, 1, "1_L2.py"}};
  RunSummary run = summarize("r", records, problems, "tf32");
  ASSERT_EQ(run.scopes.size(), 1u) << "level 2 has no record: the run does not cover it";
  const ScopeSummary& s = run.scopes[0];
  EXPECT_EQ(s.problems, 4);
  EXPECT_EQ(s.slots, 4);
  EXPECT_EQ(s.missing, 1);
  EXPECT_EQ(s.compiled, 2);
  EXPECT_DOUBLE_EQ(s.compile_rate, 0.5);
  EXPECT_EQ(s.verdicts.at("missing"), 1);
  EXPECT_EQ(s.failed_distributions.at("D3"), 1);
  EXPECT_DOUBLE_EQ(s.standard.correct_rate, 0.5);  // problems 1 and 2
  EXPECT_DOUBLE_EQ(s.hidden.correct_rate, 0.25);   // problem 1
  // fast_1 against tf32: standard 2/4 (speedups 2 and 3); hidden 1/4.
  EXPECT_DOUBLE_EQ(s.standard.speed.at("tf32").fast_p[kFast1], 0.5);
  EXPECT_DOUBLE_EQ(s.hidden.speed.at("tf32").fast_p[kFast1], 0.25);
  EXPECT_NEAR(*s.standard.speed.at("tf32").geomean_correct, std::sqrt(6.0), 1e-12);
  EXPECT_DOUBLE_EQ(*s.hidden.speed.at("fp32").geomean_correct, 4.0);
  EXPECT_DOUBLE_EQ(*s.hidden.best_memory.efficiency, 2.0);
  EXPECT_DOUBLE_EQ(s.hidden.best_memory.efficient_share, 0.25);
  EXPECT_EQ(run.samples.size(), 4u);
  EXPECT_EQ(run.samples[3].verdict, "missing");
  EXPECT_EQ(run.samples[3].problem, "4_D.py");
  EXPECT_EQ(run.protocol, "kbv");
  EXPECT_EQ(run.device, "NVIDIA H200");
}

// A flaky sample (a failed check passed on an identical re-run) is counted apart from wrong_output,
// and its D1 results decide the standard gate as a wrong_output sample's do.
TEST(Summarize, FlakyIsCountedApartFromWrongOutput) {
  SampleView hidden_only = view_of(record(1, 19, 0, "flaky", dists(2, "D3")));
  EXPECT_EQ(hidden_only.standard, true) << "every D1 check passed";
  EXPECT_EQ(hidden_only.hidden, false);
  EXPECT_EQ(hidden_only.reason, "it failed: flaky");
  EXPECT_EQ(view_of(record(1, 19, 0, "flaky", dists(2, "D1"))).standard, false);

  std::vector<json> records = {record(1, 1, 0, "flaky", dists(2, "D2")), record(1, 2, 0, "wrong_output", dists(2, "D2")),
                               record(1, 3, 0, "wrong_output", dists(2, "D4"))};
  std::vector<ProblemSlot> problems = {{1, 1, "1_A.py"}, {1, 2, "2_B.py"}, {1, 3, "3_C.py"}};
  RunSummary run = summarize("r", records, problems, "tf32");
  ASSERT_EQ(run.scopes.size(), 1u);
  EXPECT_EQ(run.scopes[0].verdicts.at("flaky"), 1);
  EXPECT_EQ(run.scopes[0].verdicts.at("wrong_output"), 2);
  EXPECT_EQ(run.samples[0].verdict, "flaky");
  // The verdict table: its own row, right after wrong_output's.
  Table t = verdict_table(run, 0);
  std::vector<std::string> labels;
  for (const auto& row : t.rows) labels.push_back(row[0].text);
  auto w = std::find(labels.begin(), labels.end(), "wrong_output");
  ASSERT_NE(w, labels.end());
  ASSERT_NE(w + 1, labels.end());
  EXPECT_EQ(*(w + 1), "flaky");
  const Cell& flaky = t.rows[static_cast<size_t>(w + 1 - labels.begin())][1];
  EXPECT_EQ(flaky.sort, 1.0) << flaky.text;
  EXPECT_NE(flaky.text.find("(1/3)"), std::string::npos) << flaky.text;
}

TEST(Summarize, WithoutDatasetTheRunsProblemsAreTheDenominatorAndItSaysSo) {
  std::vector<json> records = {record(1, 1, 0, "correct", dists(2)), record(2, 5, 0, "wrong_output", dists(2, "D1"))};
  RunSummary run = summarize("r", records, {}, "tf32");
  ASSERT_EQ(run.scopes.size(), 3u) << "two levels and all";
  EXPECT_EQ(run.scopes[2].name, "all");
  EXPECT_EQ(run.scopes[2].problems, 2);
  bool said = false;
  for (const auto& n : run.notes) said = said || n.find("have a record in this run") != std::string::npos;
  EXPECT_TRUE(said);
  bool not_measured = false;
  for (const auto& n : run.notes) not_measured = not_measured || n.find("not measured") != std::string::npos;
  EXPECT_TRUE(not_measured) << "no record carries a speedup";
  // Correct but untimed: the speed metrics say not measured rather than 0.
  EXPECT_FALSE(run.scopes[0].hidden.speed.at("tf32").measured);
  EXPECT_FALSE(run.scopes[0].hidden.best_memory.measured);
}

TEST(Summarize, SeveralSamplesPassAtKAndBestOfN) {
  // Problem 1: samples 0 (correct 1.5x), 1 (correct 3x), 2 (wrong); problem 2: all wrong but sample 2 missing.
  std::vector<json> records = {
      timed(record(1, 1, 0, "correct", dists(2)), 1.5, 1.5, 0.5),
      timed(record(1, 1, 1, "correct", dists(2)), 3.0, 3.0, 2.0), record(1, 1, 2, "wrong_output", dists(2, "D2")),
      record(1, 2, 0, "wrong_output", dists(2, "D1")), record(1, 2, 1, "runtime_error", dists(2, "", 0))};
  RunSummary run = summarize("r", records, {}, "tf32");
  const ScopeSummary& s = run.scopes[0];
  EXPECT_EQ(s.samples_per_problem, 3);
  EXPECT_EQ(s.slots, 6);
  EXPECT_EQ(s.missing, 1);
  // pass@1: (2/3 + 0) / 2; pass@3 for problem 1 = 1.
  EXPECT_NEAR(s.hidden.pass_at_k.at(1), (2.0 / 3.0) / 2, 1e-12);
  EXPECT_NEAR(s.hidden.pass_at_k.at(3), 0.5, 1e-12);
  EXPECT_FALSE(s.hidden.pass_at_k.count(5));
  // Best-of-n: problem 1 takes sample 1 (3x), paired memory 2.0.
  EXPECT_EQ(s.hidden.best_correct, 1);
  EXPECT_DOUBLE_EQ(*s.hidden.best_speed.at("tf32").geomean_correct, 3.0);
  EXPECT_DOUBLE_EQ(s.hidden.best_speed.at("tf32").fast_p[kFast1], 0.5);
  EXPECT_DOUBLE_EQ(*s.hidden.best_memory.efficiency, 2.0);
  // Per slot: fast_1 = 2 of 6 slots.
  EXPECT_NEAR(s.hidden.speed.at("tf32").fast_p[kFast1], 2.0 / 6, 1e-12);
}

// A timed record with 95% intervals and, when `busy`, the busy-host warning.
json with_ci(json r, double tf32, double low, double high, bool busy) {
  r = timed(std::move(r), tf32, tf32 * 2);
  r["timing"]["speedup_ci95"] = {{"tf32", {low, high}}, {"fp32", {low * 2, high * 2}}};
  if (busy)
    r["findings"].push_back({{"rule", "timing_host_busy"}, {"severity", "warn"}, {"message", "busy"},
                             {"evidence", "host CPU time"}, {"cheat", nullptr}});
  return r;
}

TEST(View, IntervalsCallsAndTimingWarnings) {
  SampleView v = view_of(with_ci(record(1, 1, 0, "correct", dists(2)), 1.01, 0.97, 1.05, true));
  ASSERT_EQ(v.speedup_ci95.count("tf32"), 1u);
  EXPECT_DOUBLE_EQ(v.speedup_ci95.at("tf32").first, 0.97);
  EXPECT_EQ(v.calls.at("tf32"), SpeedupCall::no_difference) << "the interval contains 1";
  EXPECT_EQ(v.calls.at("fp32"), SpeedupCall::faster) << "[1.94, 2.10]";
  EXPECT_EQ(v.timing_warnings, std::vector<std::string>{"host busy"});
  SampleView plain = view_of(timed(record(1, 1, 0, "correct", dists(2)), 2.0, 4.0));
  EXPECT_TRUE(plain.speedup_ci95.empty()) << "older records have no interval";
  EXPECT_EQ(plain.calls.at("tf32"), SpeedupCall::faster) << "the point estimate decides";
  EXPECT_TRUE(plain.timing_warnings.empty());
}

TEST(Summarize, TimingWarningsCountedAndANoticeWhenMostTimedSamplesCarryOne) {
  // 3 timed samples, 2 on a busy host; one wrong sample (not timed).
  std::vector<json> records = {with_ci(record(1, 1, 0, "correct", dists(2)), 1.5, 1.3, 1.7, true),
                               with_ci(record(1, 2, 0, "correct", dists(2)), 1.2, 0.9, 1.6, true),
                               with_ci(record(1, 3, 0, "correct", dists(2)), 3.0, 2.5, 3.5, false),
                               record(1, 4, 0, "wrong_output", dists(2, "D1"))};
  RunSummary run = summarize("r", records, {}, "tf32");
  const ScopeSummary& s = run.scopes.back();
  EXPECT_EQ(s.timed, 3);
  EXPECT_EQ(s.timing_warned, 2);
  EXPECT_EQ(s.timing_warnings.at("host busy"), 2);
  EXPECT_NE(run.timing_notice.find("2 of 3 timed samples carry a timing warning (host busy 2)"), std::string::npos)
      << run.timing_notice;
  // fast_1 counts 1.5 [1.3, 1.7] and 3.0 [2.5, 3.5], not 1.2 [0.9, 1.6]: uncertain.
  const SpeedMetrics& m = s.hidden.speed.at("tf32");
  EXPECT_DOUBLE_EQ(m.fast_p[kFast1], 2.0 / 4);
  EXPECT_EQ(m.fast_p_uncertain[kFast1], 1);
  EXPECT_EQ(m.timed_without_interval, 0);
  ASSERT_TRUE(m.geomean_correct_ci95.has_value());
  // The old definition, for published numbers: all three.
  RunSummary point = kbv::summarize("r", typed(records), {}, "tf32", FastPMode::point);
  EXPECT_DOUBLE_EQ(point.scopes.back().hidden.speed.at("tf32").fast_p[kFast1], 3.0 / 4);

  // Half or fewer: no notice.
  records[1] = with_ci(record(1, 2, 0, "correct", dists(2)), 1.2, 0.9, 1.6, false);
  RunSummary calm = summarize("r", records, {}, "tf32");
  EXPECT_EQ(calm.scopes.back().timing_warned, 1);
  EXPECT_EQ(calm.timing_notice, "");
}

TEST(PassAtKValues, UpToTheSampleCount) {
  EXPECT_EQ(pass_at_k_values(1), (std::vector<int>{1}));
  EXPECT_EQ(pass_at_k_values(5), (std::vector<int>{1, 5}));
  EXPECT_EQ(pass_at_k_values(8), (std::vector<int>{1, 5, 8}));
  EXPECT_EQ(pass_at_k_values(10), (std::vector<int>{1, 5, 10}));
  EXPECT_TRUE(pass_at_k_values(0).empty());
}

}  // namespace summary_test
}  // namespace kbv
