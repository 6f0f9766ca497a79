// Report renderings: what is not measured says so, CSV and JSON are machine-readable, the HTML is
// self-contained.
#include "report/render.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

namespace kbv {
namespace {

using nlohmann::json;

// The fixtures are stored JSON records; the report reads them as typed records (record/record.h).
std::vector<Record> typed(const std::vector<json>& records) {
  std::vector<Record> out;
  for (const auto& j : records) out.push_back(record_from_json(j).record);
  return out;
}
RunSummary summarize(const std::string& name, const std::vector<json>& records, const std::vector<ProblemSlot>& problems,
                     const std::string& baseline) {
  return kbv::summarize(name, typed(records), problems, baseline);
}

json rec(int problem, int sample, const std::string& verdict, std::optional<double> tf32 = std::nullopt) {
  json dists = json::array();
  for (const char* d : {"D1", "D2", "D3", "D4"})
    dists.push_back({{"trial", 0}, {"distribution", d}, {"passed", verdict == "correct" || std::string(d) == "D1"}});
  json r = {{"level", 1},
            {"problem_id", problem},
            {"sample_id", sample},
            {"problem", "problems/level1/" + std::to_string(problem) + "_Op.py"},
            {"compiled", true},
            {"correctness", verdict == "correct"},
            {"verdict", verdict},
            {"message", verdict == "correct" ? "" : "trial 0 D4 (x-1): max |error| 2.0 at [3], say \"hi\", a|b"},
            {"distributions", dists},
            {"protocol", {{"name", "kbv"}, {"trials", 1}, {"device_name", "NVIDIA H200"}}}};
  if (tf32) {
    r["timing"] = {{"speedup", {{"tf32", *tf32}, {"fp32", *tf32 * 2}}}, {"speed_of_light", 0.5}};
    r["memory"] = {{"measured", true}, {"ratio", {{"tf32", 1.5}, {"fp32", 1.5}}}};
  }
  return r;
}

ReportInput input_with(std::vector<json> records) {
  ReportInput in;
  in.runs.push_back(summarize("run-a", records, {}, "tf32"));
  return in;
}

TEST(Markdown, NotMeasuredNeverZeroOrOne) {
  // Records written before timing landed: correct, but no speedup or memory.
  ReportInput in = input_with({rec(1, 0, "correct"), rec(2, 0, "wrong_output")});
  std::string md = render_markdown(in);
  EXPECT_NE(md.find("| fast_1 (tf32) | not measured |"), std::string::npos) << md;
  EXPECT_NE(md.find("| geomean speedup, correct (tf32) | not measured |"), std::string::npos) << md;
  EXPECT_NE(md.find("| best-of-n: Correct Mem Efficiency (tf32) | not measured |"), std::string::npos) << md;
  EXPECT_EQ(md.find("0.00×"), std::string::npos) << md;
  EXPECT_EQ(md.find("1.00×"), std::string::npos) << md;
  EXPECT_NE(md.find("| correct, hidden distributions | 50.0% (1/2) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| correct, standard check | 100.0% (2/2) |"), std::string::npos) << md;
  // The failure reason is in the per-problem table, with '|' escaped.
  EXPECT_NE(md.find("[failed D2,D3,D4] trial 0 D4"), std::string::npos) << md;
  EXPECT_NE(md.find("a\\|b"), std::string::npos) << md;
}

TEST(Markdown, MeasuredRunShowsTheTwoByTwoTable) {
  ReportInput in = input_with({rec(1, 0, "correct", 2.0), rec(2, 0, "wrong_output", 4.0), rec(3, 0, "correct", 0.5)});
  std::string md = render_markdown(in);
  // Hidden gate: problems 1 and 3 -> geomean(2, 0.5) = 1 against tf32; fp32 doubles: geomean(4, 1) = 2.
  // Standard gate adds problem 2: tf32 geomean(2, 4, 0.5) = 4^(1/3) = 1.59; fp32 geomean(4, 8, 1) = 3.17.
  // fast_1: 1.0 is not > 1, so fp32 counts 4 and 8 (standard) or 4 (hidden).
  EXPECT_NE(md.find("| FP32 (strict) | 3.17× · fast_1 66.7% | 2.00× · fast_1 33.3% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| TF32 | 1.59× · fast_1 66.7% | 1.00× · fast_1 33.3% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fast_1 (tf32) | 33.3% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| best-of-n: Mem Efficient % (tf32) | 66.7% |"), std::string::npos) << md;
  // Every measured winner has ratio 1.5: none increases peak memory.
  EXPECT_NE(md.find("| best-of-n: correct kernels increasing peak memory (tf32) | 0.0% |"), std::string::npos) << md;
}

TEST(Markdown, SeveralRunsGetALeaderboard) {
  ReportInput in = input_with({rec(1, 0, "correct", 2.0)});
  in.runs.push_back(summarize("run-b", {rec(1, 0, "wrong_output", 3.0)}, {}, "tf32"));
  std::string md = render_markdown(in);
  EXPECT_NE(md.find("## Leaderboard"), std::string::npos);
  EXPECT_NE(md.find("| run-a | kbv | NVIDIA H200 | 1 | 1 | 100.0% (1/1) | 100.0% (1/1) | 100.0% (1/1) | 100.0% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| run-b | kbv |"), std::string::npos) << md;
}

TEST(Csv, OneRowPerSampleQuotedWhereNeeded) {
  ReportInput in = input_with({rec(1, 0, "correct", 2.0), rec(2, 0, "wrong_output")});
  std::string csv = render_csv(in);
  std::istringstream lines(csv);
  std::string header, first, second, extra;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_FALSE(std::getline(lines, extra));
  EXPECT_EQ(header.rfind("run,protocol,level,problem_id,problem,sample_id,verdict,compiled,standard,hidden,"
                         "speedup_tf32,speedup_fp32,speedup_compile,memory_ratio_tf32,",
                         0),
            0u)
      << header;
  EXPECT_EQ(first.rfind("run-a,kbv,1,1,1_Op.py,0,correct,true,true,true,2,4,,1.5,1.5,,0.5,", 0), 0u) << first;
  // Empty speedups (not measured), and the reason quoted with its quotes doubled.
  EXPECT_NE(second.find(",wrong_output,true,true,false,,,,,,,,"), std::string::npos) << second;
  EXPECT_NE(second.find("\"trial 0 D4 (x-1): max |error| 2.0 at [3], say \"\"hi\"\", a|b\""), std::string::npos)
      << second;
}

TEST(Json, NullForNotMeasuredAndEverySample) {
  ReportInput in = input_with({rec(1, 0, "correct")});
  auto j = render_json(in);
  const auto& scope = j["runs"][0]["scopes"][0];
  EXPECT_EQ(scope["headline_gate"], "hidden");
  EXPECT_EQ(scope["hidden"]["speed"]["tf32"]["measured"], false);
  EXPECT_TRUE(scope["hidden"]["speed"]["tf32"]["fast_p"]["1"].is_null());
  EXPECT_TRUE(scope["hidden"]["speed"]["tf32"]["geomean_speedup_correct"].is_null());
  EXPECT_EQ(scope["hidden"]["correct"], 1);
  EXPECT_EQ(j["runs"][0]["samples"].size(), 1u);
  EXPECT_EQ(j["fast_p_thresholds"].size(), 6u);
  EXPECT_TRUE(json::parse(j.dump()).is_object());
}

TEST(Html, SelfContainedWithPlotsAndSortableTables) {
  ReportInput in = input_with({rec(1, 0, "correct", 2.0), rec(2, 0, "wrong_output", 4.0), rec(3, 0, "correct", 0.5)});
  std::string html = render_html(in);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* id : {"id=\"speedup-0\"", "id=\"memory-0\"", "id=\"verdict-0\"", "id=\"samples-0\"",
                         "id=\"summary-0\"", "class=\"sortable\""})
    EXPECT_NE(html.find(id), std::string::npos) << id;
  // Nothing fetched from elsewhere: no src/href attributes, no url(), no @import.
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=)"))) << "external resource";
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  // The reason text is escaped.
  EXPECT_NE(html.find("say &quot;hi&quot;"), std::string::npos);
  EXPECT_EQ(html.find("say \"hi\""), std::string::npos);
  // One scatter point per correct sample with both a speedup and a memory ratio (problems 1 and 3).
  size_t points = 0;
  for (size_t at = html.find("<circle"); at != std::string::npos; at = html.find("<circle", at + 1)) ++points;
  EXPECT_EQ(points, 2u);
}

TEST(Html, UnmeasuredPanelsSaySo) {
  std::string html = render_html(input_with({rec(1, 0, "correct")}));
  EXPECT_NE(html.find(">not measured</text>"), std::string::npos);
  EXPECT_NE(html.find(">memory: not measured</text>"), std::string::npos);
}

}  // namespace
}  // namespace kbv
