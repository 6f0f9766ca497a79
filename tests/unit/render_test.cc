// Report renderings: what is not measured says so, CSV and JSON are machine-readable, the HTML is
// self-contained.
#include "report/render.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>

namespace kbv {
namespace render_test {

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
  // The geomeans' 95% intervals (bootstrap over the records, which have no interval of their own):
  // with 2 or 3 records, a replicate drawing the smallest (or largest) every time is more likely
  // than 2.5%, so the interval runs from the smallest speedup to the largest.
  EXPECT_NE(md.find("| FP32 (strict) | 3.17× [1.00, 8.00] · fast_1 66.7% | 2.00× [1.00, 4.00] · fast_1 33.3% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| TF32 | 1.59× [0.50, 4.00] · fast_1 66.7% | 1.00× [0.50, 2.00] · fast_1 33.3% |"),
            std::string::npos)
      << md;
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

// A correct timed record with 95% intervals and optionally the busy-host warning.
json rec_ci(int problem, double tf32, double low, double high, bool busy) {
  json r = rec(problem, 0, "correct", tf32);
  r["timing"]["speedup_ci95"] = {{"tf32", {low, high}}, {"fp32", {low * 2, high * 2}}};
  if (busy)
    r["findings"] = json::array({{{"rule", "timing_host_busy"}, {"severity", "warn"}, {"message", "busy"},
                                  {"evidence", "host CPU time"}, {"cheat", nullptr}}});
  return r;
}

TEST(Markdown, IntervalsNoDifferenceAndTimingWarningsReachEveryTable) {
  ReportInput in = input_with({rec_ci(1, 1.42, 1.30, 1.55, true), rec_ci(2, 1.01, 0.97, 1.05, true),
                               rec_ci(3, 2.0, 1.8, 2.2, false)});
  std::string md = render_markdown(in);
  // Most timed samples warn: said at the top, before any table.
  const size_t notice = md.find("> **Warning (run-a):** most speedups of this run are unreliable: 2 of 3 timed samples");
  ASSERT_NE(notice, std::string::npos) << md;
  EXPECT_LT(notice, md.find("| metric |")) << md;
  // Per sample: the interval, and no win where it contains 1.
  EXPECT_NE(md.find("| 1.42× [1.30, 1.55] |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.01× [0.97, 1.05] no measurable difference |"), std::string::npos) << md;
  EXPECT_NE(md.find("| host busy |"), std::string::npos) << md;
  // Summary: the count, fast_1 with its uncertain member, the geomean with its interval.
  EXPECT_NE(md.find("| timed samples with a timing warning | 2 of 3 (host busy 2) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fast_1 (tf32) | 66.7% · 1 uncertain |"), std::string::npos) << md;
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| geomean speedup, correct \(tf32\) \| 1\.42× \[[0-9.]+, [0-9.]+\] \|)")))
      << md;
}

TEST(Markdown, PointDefinitionOfFastPOnRequest) {
  ReportInput in;
  in.runs.push_back(kbv::summarize("run-a", typed({rec_ci(1, 1.42, 1.30, 1.55, false), rec_ci(2, 1.01, 0.97, 1.05, false)}),
                                   {}, "tf32", FastPMode::point));
  std::string md = render_markdown(in);
  EXPECT_NE(md.find("| fast_1 (tf32) | 100.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("its speedup > p (point estimate, KernelBench's definition)"), std::string::npos) << md;
  EXPECT_EQ(md.find("Warning"), std::string::npos) << "no timing warning, no notice";
}

TEST(Csv, IntervalsCallsAndTimingWarningsColumns) {
  ReportInput in = input_with({rec_ci(1, 1.01, 0.97, 1.05, true), rec(2, 0, "correct", 2.0)});
  std::string csv = render_csv(in);
  std::istringstream lines(csv);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_NE(header.find(",reason,speedup_ci95_low_tf32,speedup_ci95_high_tf32,speedup_call_tf32,"), std::string::npos)
      << header;
  EXPECT_EQ(header.substr(header.size() - std::string(",timing_warnings").size()), ",timing_warnings") << header;
  EXPECT_NE(first.find(",0.97,1.05,no measurable difference,1.94,2.1,faster,,,,host busy"), std::string::npos) << first;
  EXPECT_NE(second.find(",,,faster,,,faster,,,,"), std::string::npos) << "no interval: the point estimate's call";
}

TEST(Json, IntervalsCallsWarningsAndTheNotice) {
  ReportInput in = input_with({rec_ci(1, 1.01, 0.97, 1.05, true)});
  auto j = render_json(in);
  const auto& run = j["runs"][0];
  EXPECT_TRUE(run["timing_notice"].is_string());
  EXPECT_EQ(run["fast_p_definition"], "interval");
  const auto& sample = run["samples"][0];
  EXPECT_EQ(sample["speedup_ci95"]["tf32"], json::array({0.97, 1.05}));
  EXPECT_EQ(sample["speedup_call"]["tf32"], "no measurable difference");
  EXPECT_EQ(sample["timing_warnings"], json::array({"host busy"}));
  const auto& scope = run["scopes"][0];
  EXPECT_EQ(scope["timed"], 1);
  EXPECT_EQ(scope["timing_warned"], 1);
  const auto& speed = scope["hidden"]["speed"]["tf32"];
  EXPECT_EQ(speed["fast_p_definition"], "interval");
  EXPECT_EQ(speed["fast_p_uncertain"]["1"], 1);
  EXPECT_EQ(speed["fast_p"]["1"], 0.0);
  EXPECT_TRUE(speed["geomean_speedup_correct_ci95"].is_array());
}

TEST(Html, TimingNoticeAtTheTop) {
  ReportInput in = input_with({rec_ci(1, 1.01, 0.97, 1.05, true)});
  std::string html = render_html(in);
  const size_t warn = html.find("<p class=\"warn\"><b>Warning (run-a):</b> most speedups");
  ASSERT_NE(warn, std::string::npos);
  EXPECT_LT(warn, html.find("<table"));
  EXPECT_NE(html.find("no measurable difference"), std::string::npos);
  EXPECT_NE(html.find("host busy"), std::string::npos);
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
  for (size_t at = html.find("class=\"pt\""); at != std::string::npos; at = html.find("class=\"pt\"", at + 1)) ++points;
  EXPECT_EQ(points, 2u);
  // Plots have a viewBox and no fixed size: the page's CSS sizes them.
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(<svg[^>]*class="plot"[^>]*viewBox="0 0 640 330"[^>]* width=)")));
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The problem the issue saw: 11.4x, 48.1x and 484x lumped into one "11.3x to 16x" bar.
TEST(Html, SpeedupAxisSpansTheDataAndEachBarSaysWhatIsInIt) {
  std::string html = render_html(input_with(
      {rec(1, 0, "correct", 11.4), rec(2, 0, "correct", 48.1), rec(3, 0, "correct", 484.0), rec(4, 0, "correct", 0.9)}));
  EXPECT_EQ(html.find("16×</title>"), std::string::npos) << "no bar ends at a fixed 16x cap";
  // 484x is in its own bar, from 256x to 512x, and the axis reaches 512x.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, std::regex(R"(<title>1 sample\(s\), 256× to 512×:\nL1 3_Op.py s0 484×</title>)")))
      << html.substr(html.find("id=\"speedup-0-level1\""), 3000);
  EXPECT_NE(html.find(">512×</text>"), std::string::npos);
  EXPECT_NE(html.find("32× to 64×:\nL1 2_Op.py s0 48.1×"), std::string::npos);
  EXPECT_NE(html.find("8× to 16×:\nL1 1_Op.py s0 11.4×"), std::string::npos);
  // The axis starts where the data start (0.9x: from 1/2x), not at a fixed 1/16x.
  EXPECT_NE(html.find(">1/2×</text>"), std::string::npos);
  EXPECT_EQ(html.find(">1/16×</text>"), std::string::npos);
  EXPECT_EQ(html.find("class=\"bar-over\""), std::string::npos) << "nothing beyond the caps";
}

TEST(Html, ASpeedupBeyondTheAxisCapIsAnOverflowBarThatListsIt) {
  std::string html = render_html(input_with({rec(1, 0, "correct", 2.0), rec(2, 0, "correct", 1e6)}));
  EXPECT_NE(html.find("class=\"bar-over\"><title>1 sample(s), above 4096×:\nL1 2_Op.py s0 1000000×"),
            std::string::npos)
      << html.substr(html.find("id=\"speedup-0-level1\""), 4000);
  EXPECT_NE(html.find(">&gt;4096×</text>"), std::string::npos) << "the overflow slot is labelled";
}

TEST(Html, FastPCurvesAndOverlaidDistributionsOneLinePerRun) {
  ReportInput in;
  in.runs.push_back(summarize("run-a", {rec(1, 0, "correct", 2.0), rec(2, 0, "correct", 0.5), rec(3, 0, "wrong_output")},
                              {}, "tf32"));
  in.runs.push_back(summarize("run-b", {rec(1, 0, "correct", 3.0), rec(2, 0, "correct", 1.2), rec(3, 0, "correct", 8.0)},
                              {}, "tf32"));
  std::string html = render_html(in);
  const size_t fast = html.find("id=\"fast-p\""), overlay = html.find("id=\"speedup-overlay\"");
  ASSERT_NE(fast, std::string::npos);
  ASSERT_NE(overlay, std::string::npos);
  const std::string fast_svg = html.substr(fast, html.find("</svg>", fast) - fast);
  const std::string overlay_svg = html.substr(overlay, html.find("</svg>", overlay) - overlay);
  EXPECT_EQ(count(fast_svg, "class=\"curve\""), 2u);
  EXPECT_EQ(count(overlay_svg, "class=\"curve\""), 2u);
  // fast_1: run-a 1 of 3 slots (2x), run-b 2 of 3 (3x, 8x; 1.2x too): 3 of 3.
  EXPECT_NE(fast_svg.find("run-a: fast_1 = 33.3%"), std::string::npos) << fast_svg;
  EXPECT_NE(fast_svg.find("run-b: fast_1 = 100.0%"), std::string::npos) << fast_svg;
  EXPECT_NE(fast_svg.find("run-b: fast_2 = 66.7%"), std::string::npos) << fast_svg;
  // One run: the curve, no overlay.
  std::string one = render_html(input_with({rec(1, 0, "correct", 2.0)}));
  EXPECT_NE(one.find("id=\"fast-p\""), std::string::npos);
  EXPECT_EQ(one.find("id=\"speedup-overlay\""), std::string::npos);
}

TEST(Leaderboard, FourGatesTableAndTheModelTokensAndCostOfGenerate) {
  ReportInput in;
  in.runs.push_back(summarize("runs/a", {rec(1, 0, "correct", 2.0), rec(2, 0, "wrong_output", 3.0)}, {}, "tf32"));
  in.runs.push_back(summarize("runs/b", {rec(1, 0, "correct", 0.5)}, {}, "tf32"));
  in.runs[0].generation.records = 2;
  in.runs[0].generation.models = {"gpt-test"};
  in.runs[0].generation.prompt_tokens = 1200;
  in.runs[0].generation.completion_tokens = 800;
  in.runs[0].generation.with_tokens = 2;
  in.runs[0].generation.cost_usd = 0.125;
  in.runs[0].generation.with_cost = 1;
  Table lb = leaderboard_table(in);
  auto col = [&](const Table& t, const std::string& name) {
    auto it = std::find(t.header.begin(), t.header.end(), name);
    EXPECT_NE(it, t.header.end()) << name;
    return static_cast<size_t>(it - t.header.begin());
  };
  EXPECT_EQ(lb.rows[0][col(lb, "model")].text, "gpt-test");
  EXPECT_EQ(lb.rows[1][col(lb, "model")].text, "runs/b") << "the folder's name without generate records";
  EXPECT_EQ(lb.rows[0][col(lb, "tokens (prompt + completion)")].text, "1200 + 800");
  EXPECT_EQ(lb.rows[0][col(lb, "cost")].text, "$0.12 (1 of 2 records)");
  EXPECT_EQ(lb.rows[1][col(lb, "cost")].text, "no generate records");
  for (const auto& row : lb.rows) EXPECT_EQ(row.size(), lb.header.size());

  Table g = gates_table(in);
  ASSERT_EQ(g.header.size(), 9u);
  // run a: problem 1 correct everywhere at 2x (tf32) / 4x (fp32); problem 2 passes D1 only at 3x / 6x.
  EXPECT_EQ(g.rows[0][col(g, "fast_1 (TF32, standard)")].text, "100.0%");
  EXPECT_EQ(g.rows[0][col(g, "fast_1 (TF32, hidden)")].text, "50.0%");
  EXPECT_EQ(g.rows[0][col(g, "geomean (FP32, hidden)")].text, "4.00×");
  EXPECT_EQ(g.rows[1][col(g, "fast_1 (FP32, hidden)")].text, "0.0%");
  EXPECT_EQ(g.rows[1][col(g, "geomean (TF32, standard)")].text, "0.50×");
  EXPECT_NE(render_markdown(in).find("fast_1 (FP32, hidden)"), std::string::npos);
  json j = json::parse(render_json(in).dump());
  EXPECT_EQ(j["runs"][0]["generation"]["models"], json::array({"gpt-test"}));
  EXPECT_EQ(j["runs"][0]["generation"]["prompt_tokens"], 1200);
  EXPECT_EQ(j["runs"][0]["generation"]["cost_usd"], 0.125);
  EXPECT_TRUE(j["runs"][1]["generation"].is_null());
  EXPECT_NE(render_html(in).find("id=\"gates\""), std::string::npos);
}

TEST(Html, UnmeasuredPanelsSaySo) {
  std::string html = render_html(input_with({rec(1, 0, "correct")}));
  EXPECT_NE(html.find(">not measured</text>"), std::string::npos);
  EXPECT_NE(html.find(">memory: not measured</text>"), std::string::npos);
}

}  // namespace render_test
}  // namespace kbv
