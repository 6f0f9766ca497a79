// Reports with several precisions: one section per precision, fp32 and bf16 side by side.
#include <gtest/gtest.h>

#include "report/render.h"

namespace kbv {
namespace precision_report_test {

using nlohmann::json;

json rec(int problem, bool correct, double tf32, const std::string& precision = "fp32") {
  json dists = json::array();
  for (const char* d : {"D1", "D2", "D3", "D4"}) dists.push_back({{"trial", 0}, {"distribution", d}, {"passed", correct}});
  json r = {{"level", 2},
            {"problem_id", problem},
            {"sample_id", 0},
            {"problem", "problems/level2/" + std::to_string(problem) + "_Op.py"},
            {"compiled", true},
            {"correctness", correct},
            {"verdict", correct ? "correct" : "wrong_output"},
            {"message", ""},
            {"distributions", dists},
            {"timing", {{"speedup", {{"tf32", tf32}}}}},
            {"protocol", {{"name", "kbv"}, {"precision", precision}}}};
  if (precision != "fp32") r["precision"] = precision;  // older fp32 records lack the field
  return r;
}

RunSummary run_of(const std::string& name, const std::string& model, const std::string& precision,
                  std::vector<json> records) {
  std::vector<Record> typed;
  for (const auto& j : records) typed.push_back(record_from_json(j).record);
  RunSummary s = summarize(name, typed, {}, "tf32");
  s.precision = precision;
  s.model = model;
  return s;
}

TEST(PrecisionReport, SideBySideRowPerModel) {
  ReportInput in;
  in.runs.push_back(run_of("m [kbv]", "runs/m", "fp32", {rec(1, true, 0.8), rec(2, true, 0.5)}));
  in.runs.push_back(run_of("m [kbv bf16]", "runs/m", "bf16", {rec(1, true, 2.0, "bf16"), rec(2, false, 3.0, "bf16")}));
  in.runs.push_back(run_of("other", "runs/other", "fp32", {rec(1, true, 1.0)}));
  Table t = precision_table(in);
  ASSERT_EQ(t.rows.size(), 1u) << "only the model with two precisions gets a row";
  std::vector<std::string> want_header = {"model",          "correct (fp32)", "fast_1 (fp32)", "geomean (fp32)",
                                          "correct (bf16)", "fast_1 (bf16)",  "geomean (bf16)"};
  EXPECT_EQ(t.header, want_header);
  const auto& row = t.rows[0];
  EXPECT_EQ(row[0].text, "runs/m");
  EXPECT_EQ(row[1].text, "100.0% (2/2)");
  EXPECT_EQ(row[2].text, "0.0%");  // neither fp32 sample beats the baseline
  EXPECT_EQ(row[4].text, "50.0% (1/2)");
  EXPECT_EQ(row[5].text, "50.0%");  // one of two slots correct and faster
  EXPECT_EQ(row[6].text, format_speedup(2.0));
  std::string md = render_markdown(in);
  EXPECT_NE(md.find("## Precisions side by side"), std::string::npos) << md;
  EXPECT_NE(md.find("## m [kbv bf16]"), std::string::npos) << md;
  EXPECT_NE(md.find("kbv bf16"), std::string::npos) << md;
  EXPECT_EQ(render_json(in)["runs"][1]["precision"], "bf16");
}

TEST(PrecisionReport, NoTableWithOnePrecision) {
  ReportInput in;
  in.runs.push_back(run_of("a", "runs/a", "fp32", {rec(1, true, 1.5)}));
  in.runs.push_back(run_of("b", "runs/b", "bf16", {rec(1, true, 1.5, "bf16")}));
  EXPECT_TRUE(precision_table(in).rows.empty());
  EXPECT_EQ(render_markdown(in).find("Precisions side by side"), std::string::npos);
}

}  // namespace precision_report_test
}  // namespace kbv
