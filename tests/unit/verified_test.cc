// The report side of the KernelBench-Verified protocol: the denominator (exclusions from the
// protocol and from `kbv lint-problems`), the paper's table shape computed as upstream's
// compute_best_of_n_metrics / compute_paired_memory_metrics do, and baseline labels.
#include "report/verified.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "formats/baseline.h"
#include "formats/upstream.h"
#include "report/render.h"
#include "report/summary.h"

#include <gtest/gtest.h>

namespace kbv {
namespace verified_test {

using nlohmann::json;
namespace fs = std::filesystem;

std::vector<Record> typed(const std::vector<json>& records) {
  std::vector<Record> out;
  for (const auto& j : records) out.push_back(record_from_json(j).record);
  return out;
}

json protocol(const std::string& name) {
  return {{"name", name},
          {"trials", 1},
          {"distributions",
           json::array({{{"name", "D1"}, {"scale", 1.0}},
                        {{"name", "D2"}, {"scale", 3.0}},
                        {{"name", "D3"}, {"scale", 0.01}},
                        {{"name", "D4"}, {"scale", -1.0}}})}};
}

// A record of the verified protocol; `speedup` < 0: not timed; `memory` < 0: not measured.
json rec(int level, int problem, int sample, bool correct, double speedup = -1, double memory = -1,
         const std::string& protocol_name = kVerifiedProtocolName) {
  json dists = json::array();
  for (const char* d : {"D1", "D2", "D3", "D4"})
    dists.push_back({{"trial", 0}, {"distribution", d}, {"passed", correct || std::string(d) == "D1"}});
  json r = {{"level", level},
            {"problem_id", problem},
            {"sample_id", sample},
            {"problem", "level" + std::to_string(level) + "/" + std::to_string(problem) + "_P.py"},
            {"compiled", true},
            {"correctness", correct},
            {"verdict", correct ? "correct" : "wrong_output"},
            {"message", correct ? "" : "failed D2"},
            {"findings", json::array()},
            {"distributions", dists},
            {"runtime", -1.0},
            {"protocol", protocol(protocol_name)}};
  if (speedup > 0) {
    r["runtime"] = 1.0;
    r["timing"] = {{"speedup", {{"tf32", speedup}}}};
  }
  if (memory > 0) r["memory"] = {{"measured", true}, {"ratio", {{"tf32", memory}}}};
  return r;
}

TEST(VerifiedProtocol, NameAndOwnExclusions) {
  EXPECT_TRUE(is_verified_protocol("kernelbench-verified"));
  EXPECT_FALSE(is_verified_protocol("kernelbench"));
  EXPECT_FALSE(is_verified_protocol("kbv"));
  std::vector<Exclusion> e = verified_protocol_exclusions();
  ASSERT_EQ(e.size(), 3u);
  for (const auto& x : e) {
    EXPECT_EQ(x.level, 2);
    EXPECT_EQ(x.kind, "degenerate");
    EXPECT_NE(x.reason.find("constant zero"), std::string::npos);
  }
  EXPECT_EQ(e[0].id, 23);
  EXPECT_EQ(e[1].id, 80);
  EXPECT_EQ(e[2].id, 83);
}

json lint_row(int level, int id, json findings) {
  return {{"path", "x"}, {"level", level}, {"id", id}, {"name", std::to_string(id) + "_P.py"}, {"findings", findings}};
}
json finding(const std::string& rule, json where, const std::string& severity = "finding") {
  return {{"rule", rule}, {"severity", severity}, {"distributions", where}, {"message", rule + " seen"}};
}

TEST(VerifiedExclusions, FromLintUnsolvableAndDegenerate) {
  json all = json::array({"D1", "D2", "D3", "D4"});
  json allowed = finding("ill_conditioned", json::array({"D1"}));
  allowed["allowed"] = "known, and fine";
  json report = {{"distributions", json::array({{{"name", "D1"}}, {{"name", "D2"}}, {{"name", "D3"}}, {{"name", "D4"}}})},
                 {"problems", json::array({
                                  lint_row(2, 23, json::array({finding("ill_conditioned", json::array({"D3"}))})),
                                  lint_row(2, 80, json::array({finding("constant", all), finding("zeros", all)})),
                                  lint_row(1, 19, json::array({finding("constant", json::array({"D4"}))})),
                                  lint_row(1, 23, json::array({finding("zeros", json::array({"D3"}))})),
                                  lint_row(1, 5, json::array({allowed})),
                                  lint_row(1, 95, json::array({finding("integer_input", json::array(), "note")})),
                                  lint_row(3, 7, json::array({finding("nondeterministic", json::array({"D1"})),
                                                              finding("constant", all)})),
                              })}};
  std::string error;
  std::vector<Exclusion> e = exclusions_from_lint(report, "lint.json", error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].level, 2);
  EXPECT_EQ(e[0].id, 23);
  EXPECT_EQ(e[0].kind, "unsolvable");
  EXPECT_EQ(e[0].reason, "ill_conditioned: ill_conditioned seen");
  EXPECT_EQ(e[0].source, "lint.json");
  EXPECT_EQ(e[0].name, "23_P.py");
  EXPECT_EQ(e[1].id, 80);
  EXPECT_EQ(e[1].kind, "degenerate");
  EXPECT_EQ(e[2].id, 7);
  EXPECT_EQ(e[2].kind, "unsolvable");  // unsolvable wins over degenerate
}

TEST(VerifiedExclusions, NotALintReportIsAnError) {
  std::string error;
  EXPECT_TRUE(exclusions_from_lint(json::array(), "x.json", error).empty());
  EXPECT_NE(error.find("x.json"), std::string::npos);
  error.clear();
  exclusions_from_lint(json{{"problems", json::array({{{"level", "two"}}})}}, "y.json", error);
  EXPECT_NE(error.find("y.json: problems[0]"), std::string::npos) << error;
}

TEST(VerifiedExclusions, MergeKeepsOneEntryPerProblemAndNamesBothSources) {
  std::vector<Exclusion> list = verified_protocol_exclusions();
  merge_exclusions(list, {{2, 23, "23_X.py", "unsolvable", "ill_conditioned", "lint.json"},
                          {1, 4, "", "unsolvable", "nonfinite", "lint.json"}});
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[0].level, 1);
  EXPECT_EQ(list[1].id, 23);
  EXPECT_EQ(list[1].kind, "degenerate");
  EXPECT_EQ(list[1].name, "23_X.py");
  EXPECT_NE(list[1].source.find("protocol kernelbench-verified; lint.json"), std::string::npos) << list[1].source;
}

TEST(VerifiedSummary, ExcludedProblemsLeaveTheDenominatorAndAreListed) {
  std::vector<ProblemSlot> problems = {{2, 1, "1_A.py"}, {2, 23, "23_B.py"}, {2, 80, "80_C.py"}, {2, 83, "83_D.py"}};
  std::vector<json> records = {rec(2, 1, 0, true, 2.0), rec(2, 23, 0, true, 4.0), rec(2, 23, 1, false)};
  RunSummary run = summarize("r", typed(records), problems, "tf32", FastPMode::point, verified_protocol_exclusions());
  ASSERT_EQ(run.excluded.size(), 3u);
  EXPECT_EQ(run.excluded[0].name, "23_P.py");  // the record's file name
  EXPECT_EQ(run.excluded[1].name, "80_C.py");  // no record: the dataset's file name
  EXPECT_EQ(run.excluded_records, 2);
  ASSERT_FALSE(run.scopes.empty());
  EXPECT_EQ(run.scopes.back().problems, 1);
  EXPECT_EQ(run.scopes.back().slots, 2);  // one problem, sample ids 0 and 1
  for (const auto& v : run.samples) EXPECT_EQ(v.problem_id, 1);
  // A level the run does not cover: not listed.
  RunSummary level1 = summarize("r", typed({rec(1, 1, 0, true, 2.0)}), {}, "tf32", FastPMode::point,
                                verified_protocol_exclusions());
  EXPECT_TRUE(level1.excluded.empty());
}

TEST(VerifiedTable, BestOfNAsUpstreamComputesIt) {
  // Level 1, 4 problems, 3 samples each (upstream: compute_best_of_n_metrics + paired memory):
  //  p1: s0 correct 0.5× (mem 2.0), s1 correct 1.5× (mem 0.8), s2 wrong 9×  -> winner s1: 1.5×, mem 0.8
  //  p2: s0 correct, untimed; s1 wrong                                        -> no winner (upstream: runtime -1)
  //  p3: s0 correct 1.0× exactly (mem 1.5), s1 correct 1.0× (mem 3.0)         -> winner s0 (first of a tie): mem 1.5
  //  p4: nothing correct                                                       -> no winner
  std::vector<json> records = {rec(1, 1, 0, true, 0.5, 2.0), rec(1, 1, 1, true, 1.5, 0.8), rec(1, 1, 2, false, 9.0),
                               rec(1, 2, 0, true),           rec(1, 2, 1, false),
                               rec(1, 3, 0, true, 1.0, 1.5), rec(1, 3, 1, true, 1.0, 3.0),
                               rec(1, 4, 0, false),          rec(2, 1, 0, true, 4.0, 0.5)};
  RunSummary run = summarize("r", typed(records), {}, "tf32", FastPMode::point);
  VerifiedTable t = verified_table(run);
  EXPECT_EQ(t.gate, "hidden distributions");
  ASSERT_EQ(t.scopes.size(), 3u);  // level 1, level 2, all
  const VerifiedScope& l1 = t.scopes[0];
  EXPECT_EQ(l1.problems, 4);
  EXPECT_EQ(l1.winners, 2);
  EXPECT_EQ(l1.correct_untimed, 1);
  EXPECT_DOUBLE_EQ(l1.correctness, 0.5);
  ASSERT_TRUE(l1.speedup);
  EXPECT_NEAR(*l1.speedup, std::sqrt(1.5 * 1.0), 1e-12);
  EXPECT_DOUBLE_EQ(l1.fast_p[kFast1], 0.25);  // 1.0 is not > 1
  EXPECT_DOUBLE_EQ(l1.fast_p[0], 0.5);
  EXPECT_EQ(l1.fast_count[kFast1], 1);
  ASSERT_TRUE(l1.mem_eff);
  EXPECT_NEAR(*l1.mem_eff, std::sqrt(0.8 * 1.5), 1e-12);  // the speed winners' memory, not the best memory
  EXPECT_EQ(l1.memory_measured, 2);
  EXPECT_DOUBLE_EQ(l1.mem_efficient_share, 0.25);
  const VerifiedScope& all = t.scopes[2];
  EXPECT_EQ(all.level, 0);
  EXPECT_EQ(all.problems, 5);
  EXPECT_EQ(all.winners, 3);
  EXPECT_NEAR(*all.speedup, std::cbrt(1.5 * 1.0 * 4.0), 1e-12);
  EXPECT_DOUBLE_EQ(all.fast_p[kFast1], 0.4);
}

TEST(VerifiedTable, NativeRecordsCompareMeansAsUpstreamDoes) {
  // A native record's speedup is a ratio of medians; upstream divides the baseline's mean by the
  // candidate's mean. Where the record has both means, the verified table uses their ratio.
  json a = rec(1, 1, 0, true, 2.0);  // median ratio 2.0
  a["timing"]["candidate"] = {{"median_ms", 1.0}, {"mean_ms", 1.2}};
  a["timing"]["baselines"] = {{"tf32", {{"median_ms", 2.0}, {"mean_ms", 1.8}}}};  // mean ratio 1.5
  json b = rec(1, 2, 0, true, 3.0);  // no means: its speedup
  RunSummary run = summarize("r", typed({a, b}), {}, "tf32", FastPMode::point);
  EXPECT_DOUBLE_EQ(run.samples.at(0).speedup.at("tf32"), 2.0) << "kbv's own tables keep the median ratio";
  VerifiedTable t = verified_table(run);
  ASSERT_TRUE(t.scopes[0].speedup);
  EXPECT_NEAR(*t.scopes[0].speedup, std::sqrt(1.5 * 3.0), 1e-12);
}

// Upstream's files store every mean at 3 significant digits (get_timing_stats), and its scoring
// divides those stored figures: the verified table divides the same rounded means, the ones kbv's
// verified export writes, so a candidate 0.07% faster than its baseline (1.2351 ms against
// 1.236 ms: both 1.24 once rounded) has speedup 1, which is not fast_1, as upstream scores it.
TEST(VerifiedTable, MeansRoundedAsUpstreamStoresThemDecideFast1) {
  json a = rec(1, 1, 0, true, 1.5);
  a["timing"]["candidate"] = {{"median_ms", 1.2}, {"mean_ms", 1.2351}};
  a["timing"]["baselines"] = {{"tf32", {{"median_ms", 1.8}, {"mean_ms", 1.236}}}};
  a["runtime_stats"] = {{"mean", 1.2351}, {"median", 1.2}, {"statistic", "median"}};
  json b = rec(1, 2, 0, true, 1.5);  // far from the boundary: rounding moves it a little
  b["timing"]["candidate"] = {{"median_ms", 1.0}, {"mean_ms", 1.00049}};
  b["timing"]["baselines"] = {{"tf32", {{"median_ms", 2.0}, {"mean_ms", 2.0049}}}};
  const std::vector<Record> records = typed({a, b});
  RunSummary run = summarize("r", records, {}, "tf32", FastPMode::point);
  ASSERT_GT(1.236 / 1.2351, 1.0) << "unrounded, problem 1 would count in fast_1";
  EXPECT_EQ(run.samples.at(0).mean_speedup.at("tf32"), 1.0) << "1.24 / 1.24";
  EXPECT_EQ(run.samples.at(1).mean_speedup.at("tf32"), 2.0 / 1.0) << "2.00 / 1.00";
  VerifiedTable t = verified_table(run);
  const VerifiedScope& l1 = t.scopes[0];
  EXPECT_EQ(l1.winners, 2);
  EXPECT_DOUBLE_EQ(l1.fast_p[kFast1], 0.5) << "problem 1's speedup is exactly 1: not > 1";
  EXPECT_EQ(l1.fast_count[kFast1], 1);
  ASSERT_TRUE(l1.speedup);
  EXPECT_NEAR(*l1.speedup, std::sqrt(1.0 * 2.0), 1e-12);
  // The export writes the figure the table divided by; the record keeps its own.
  const auto exported = verified_eval_results(records, false);
  EXPECT_EQ(exported["1_0"]["runtime"].get<double>(), 1.24) << exported.dump();
  EXPECT_EQ(exported["1_0"]["runtime_stats"]["mean"].get<double>(), 1.24);
  EXPECT_EQ(records[0].timing->candidate->mean_ms.value(), 1.2351);
}

TEST(VerifiedTable, StandardGateWithoutHiddenAndNoneWithoutWinners) {
  json r = rec(1, 1, 0, false, 2.0, -1, "kernelbench");
  r["protocol"]["distributions"] = json::array({{{"name", "D1"}, {"scale", 1.0}}});
  RunSummary run = summarize("r", typed({r}), {}, "tf32", FastPMode::point);
  VerifiedTable t = verified_table(run);
  EXPECT_EQ(t.gate, "standard check");
  EXPECT_EQ(t.scopes[0].winners, 0);
  EXPECT_FALSE(t.scopes[0].speedup);
  EXPECT_FALSE(t.scopes[0].mem_eff);
  EXPECT_DOUBLE_EQ(t.scopes[0].correctness, 0.0);
}

TEST(VerifiedRender, EveryFormatShowsTheExclusionsAndTheTable) {
  std::vector<json> records = {rec(2, 1, 0, true, 2.0, 1.2), rec(2, 23, 0, true, 4.0)};
  ReportInput input;
  input.verified_tables = true;
  input.runs.push_back(summarize("run", typed(records), {}, "tf32", FastPMode::point, verified_protocol_exclusions()));
  std::string md = render_markdown(input);
  EXPECT_NE(md.find("Verified speedup results"), std::string::npos);
  EXPECT_NE(md.find("Excluded from the denominator"), std::string::npos);
  EXPECT_NE(md.find("| 2 | 23_P.py | degenerate |"), std::string::npos) << md;
  EXPECT_NE(md.find("L2 Speedup"), std::string::npos);
  std::string html = render_html(input);
  EXPECT_NE(html.find("Excluded from the denominator"), std::string::npos);
  EXPECT_NE(html.find("verified-overall"), std::string::npos);
  std::string csv = render_csv(input);
  EXPECT_NE(csv.find("run,kernelbench-verified,2,23,23_P.py,,excluded,"), std::string::npos) << csv;
  nlohmann::ordered_json j = render_json(input);
  ASSERT_EQ(j["runs"][0]["excluded"].size(), 3u);
  EXPECT_EQ(j["runs"][0]["excluded"][0]["id"], 23);
  EXPECT_EQ(j["runs"][0]["excluded_records"], 1);
  const auto& scopes = j["runs"][0]["verified"]["scopes"];
  ASSERT_EQ(scopes.size(), 2u);
  EXPECT_EQ(scopes[0]["problems"], 1);
  EXPECT_DOUBLE_EQ(scopes[0]["speedup"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(scopes[0]["mem_eff"].get<double>(), 1.2);
  // Without the verified shape: no table, the exclusions still listed.
  input.verified_tables = false;
  EXPECT_EQ(render_markdown(input).find("Verified speedup results"), std::string::npos);
  EXPECT_FALSE(render_json(input)["runs"][0].contains("verified"));
  EXPECT_EQ(render_json(input)["runs"][0]["excluded"].size(), 3u);
}

TEST(BaselineLabels, UpstreamFilesAreLabelledByWhatTheyMeasured) {
  fs::path dir = fs::temp_directory_path() / ("kbv_verified_labels_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const json& j) {
    std::ofstream(dir / name) << j.dump();
    return dir / name;
  };
  json upstream = {{"level1", {{"1_A.py", {{"mean", 2.0}, {"std", 0.1}, {"hardware", "H200"}}}}}};
  json kbv_export = {{"level1", {{"1_A.py", {{"mean", 2.0}, {"median", 1.9}}}}}};
  std::string error;
  auto [n1, p1] = parse_baseline_arg(write("baseline_time_torch.json", upstream).string());
  auto b1 = read_baseline_file(p1, n1, error);
  ASSERT_TRUE(b1) << error;
  EXPECT_EQ(b1->name, "fp32");
  EXPECT_NE(b1->label.find("TF32 convolutions"), std::string::npos) << b1->label;
  EXPECT_EQ(b1->label.find("strict"), std::string::npos) << b1->label;
  auto [n2, p2] = parse_baseline_arg(write("baseline_time_torch_tf32.json", upstream).string());
  auto b2 = read_baseline_file(p2, n2, error);
  ASSERT_TRUE(b2) << error;
  EXPECT_EQ(b2->name, "tf32");
  EXPECT_EQ(b2->label, "TF32 matmuls and convolutions");
  auto [n3, p3] = parse_baseline_arg(write("baseline_time_torch_bf16.json", upstream).string());
  auto b3 = read_baseline_file(p3, n3, error);
  ASSERT_TRUE(b3) << error;
  EXPECT_EQ(b3->label.rfind("BF16", 0), 0u) << b3->label;
  auto b4 = read_baseline_file(write("mine.json", kbv_export), "fp32", error);
  ASSERT_TRUE(b4) << error;
  EXPECT_EQ(b4->label, "FP32 (strict)");  // kbv's own export: what kbv's baseline is

  // The label travels with the speedup into the record and the report.
  json entry = {{"1_0", {{"sample_id", 0}, {"compiled", true}, {"correctness", true}, {"runtime", 1.0}}}};
  std::ofstream(dir / "eval_results.json") << entry.dump();
  UpstreamRead read = read_eval_results(dir / "eval_results.json", std::nullopt, 1, dir);
  ASSERT_TRUE(read.error.empty()) << read.error;
  ASSERT_EQ(read.records.size(), 1u);
  ASSERT_TRUE(apply_baseline(read.records[0], *b1));
  RunSummary run = summarize("r", read.records, {}, "fp32", FastPMode::point);
  ASSERT_TRUE(run.baseline_labels.count("fp32"));
  EXPECT_EQ(run.baseline_labels["fp32"], b1->label);
  Table survival = survival_table(run, run.scopes.back(), 0);
  EXPECT_EQ(survival.rows[0][0].text, b1->label);
  // kbv's own records: what the name says.
  RunSummary native = summarize("n", typed({rec(1, 1, 0, true, 2.0)}), {}, "tf32", FastPMode::point);
  EXPECT_EQ(native.baseline_labels["tf32"], "TF32");
  EXPECT_EQ(native_baseline_label("fp32"), "FP32 (strict)");
  fs::remove_all(dir);
}

}  // namespace verified_test
}  // namespace kbv
