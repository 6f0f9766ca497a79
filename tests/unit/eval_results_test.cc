#include "formats/eval_results.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace kbv {
namespace eval_results_test {

nlohmann::json rec(int problem, int sample, bool correct = true, double runtime = 1.5) {
  return {{"level", 1},
          {"problem_id", problem},
          {"sample_id", sample},
          {"compiled", true},
          {"correctness", correct},
          {"metadata", {{"hardware", "H200"}}},
          {"runtime", runtime},
          {"runtime_stats", {{"mean", runtime}, {"std", 0.01}}}};
}

// The fixtures are stored JSON records; a value that is not an object makes no record.
nlohmann::ordered_json kernelbench_eval_results(const std::vector<nlohmann::json>& records) {
  std::vector<Record> typed;
  for (const auto& j : records)
    if (RecordRead r = record_from_json(j); r.ok()) typed.push_back(std::move(r.record));
  return kbv::kernelbench_eval_results(typed);
}

std::vector<std::string> keys(const nlohmann::ordered_json& object) {
  std::vector<std::string> out;
  for (const auto& item : object.items()) out.push_back(item.key());
  return out;
}

TEST(KernelBenchEvalResults, ProblemIdsSortNumerically) {
  const auto out = kernelbench_eval_results({rec(100, 0), rec(10, 0), rec(2, 0), rec(1, 0)});
  EXPECT_EQ(keys(out), (std::vector<std::string>{"1", "2", "10", "100"}));
  EXPECT_EQ(out.dump().find("\"1\""), 1u);
  EXPECT_LT(out.dump().find("\"2\""), out.dump().find("\"10\""));
  EXPECT_LT(out.dump().find("\"10\""), out.dump().find("\"100\""));
}

TEST(KernelBenchEvalResults, SamplesSortById) {
  const auto out = kernelbench_eval_results({rec(5, 11), rec(5, 2), rec(5, 0)});
  ASSERT_TRUE(out.contains("5"));
  const auto& list = out["5"];
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["sample_id"], 0);
  EXPECT_EQ(list[1]["sample_id"], 2);
  EXPECT_EQ(list[2]["sample_id"], 11);
}

TEST(KernelBenchEvalResults, KeysInUpstreamOrder) {
  const auto out = kernelbench_eval_results({rec(3, 0, false, 2.25)});
  const auto& sample = out["3"][0];
  EXPECT_EQ(keys(sample), (std::vector<std::string>{"sample_id", "compiled", "correctness",
                                                    "metadata", "runtime", "runtime_stats"}));
  EXPECT_EQ(sample["sample_id"], 0);
  EXPECT_EQ(sample["compiled"], true);
  EXPECT_EQ(sample["correctness"], false);
  EXPECT_EQ(sample["metadata"]["hardware"], "H200");
  EXPECT_DOUBLE_EQ(sample["runtime"].get<double>(), 2.25);
  EXPECT_DOUBLE_EQ(sample["runtime_stats"]["mean"].get<double>(), 2.25);
  EXPECT_EQ(out.dump(),
            R"({"3":[{"sample_id":0,"compiled":true,"correctness":false,)"
            R"("metadata":{"hardware":"H200","kbv_timing_rounding":")" + std::string(kTimingRoundingNote) +
                R"("},"runtime":2.25,)"
            R"("runtime_stats":{"mean":2.25,"std":0.01}}]})");
}

// upstream_rounded is float(f"{x:.3g}"): every expected value below is what Python 3.11 gives.
TEST(UpstreamRounded, ThreeSignificantDigitsAsPythonsFormat) {
  EXPECT_EQ(upstream_rounded(1.23456), 1.23);
  EXPECT_EQ(upstream_rounded(0.000123456), 0.000123);
  EXPECT_EQ(upstream_rounded(12345.6), 12300.0);
  EXPECT_EQ(upstream_rounded(123456789.0), 123000000.0);
  EXPECT_EQ(upstream_rounded(999.5), 1000.0) << "a carry into a fourth digit";
  EXPECT_EQ(upstream_rounded(0.99951), 1.0);
  EXPECT_EQ(upstream_rounded(1.0005), 1.0);
  EXPECT_EQ(upstream_rounded(-2.345), -2.35) << "-2.345 is stored a little above the tie in magnitude";
  EXPECT_EQ(upstream_rounded(0.125), 0.125) << "already 3 digits: unchanged";
}

TEST(UpstreamRounded, ExactTiesGoToEvenAndNearTiesByTheirBinaryValue) {
  EXPECT_EQ(upstream_rounded(12.25), 12.2) << "12.25 is exact in binary: a tie, to even";
  EXPECT_EQ(upstream_rounded(12.35), 12.3) << "12.35 is stored as 12.3499999...";
  EXPECT_EQ(upstream_rounded(1234.5), 1230.0) << "the dropped 4.5 is under half of the last kept digit's 10";
  EXPECT_EQ(upstream_rounded(1235.0), 1240.0) << "an exact tie, to even";
  EXPECT_EQ(upstream_rounded(2.675), 2.67) << "2.675 is stored as 2.67499999...";
}

TEST(UpstreamRounded, ZeroTinyHugeAndNonFinite) {
  EXPECT_EQ(upstream_rounded(0.0), 0.0);
  EXPECT_TRUE(std::signbit(upstream_rounded(-0.0))) << "-0 stays -0, as float('-0') does";
  EXPECT_EQ(upstream_rounded(-1.0), -1.0) << "kbv's and upstream's 'not timed'";
  EXPECT_EQ(upstream_rounded(1.23456e-300), 1.23e-300);
  EXPECT_EQ(upstream_rounded(1e-310), 1e-310) << "a subnormal";
  EXPECT_EQ(upstream_rounded(5e-324), 5e-324) << "the smallest subnormal: 4.94e-324 reads back as itself";
  EXPECT_EQ(upstream_rounded(9.995e307), 1e308);
  EXPECT_EQ(upstream_rounded(std::numeric_limits<double>::max()), std::numeric_limits<double>::infinity())
      << "1.8e+308 is past the largest double: Python's float() reads infinity";
  EXPECT_EQ(upstream_rounded(std::numeric_limits<double>::infinity()), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(upstream_rounded(std::nan(""))));
}

// Upstream's get_timing_stats keeps 3 significant digits of mean, std, min and max
// (float(f"{x:.3g}"); the rounding itself: UpstreamRounded above); the export
// rounds them the same way, says so in the entry's metadata, and leaves the record whole.
TEST(KernelBenchEvalResults, TimingStatsRoundedAsUpstreamRoundsThem) {
  nlohmann::json r = rec(4, 0, true, 1.23456);
  r["runtime_stats"] = {{"mean", 1.23456}, {"std", 0.0123456}, {"min", 1.0004}, {"max", 12345.6},
                        {"median", 1.23456}, {"num_trials", 100}};
  RecordRead read = record_from_json(r);
  ASSERT_TRUE(read.ok());
  const std::vector<Record> timed = {read.record};
  const auto out = kbv::kernelbench_eval_results(timed);
  const auto& e = out["4"][0];
  EXPECT_EQ(e["runtime"].get<double>(), 1.23);
  EXPECT_EQ(e["runtime_stats"]["mean"].get<double>(), 1.23);
  EXPECT_EQ(e["runtime_stats"]["std"].get<double>(), 0.0123);
  EXPECT_EQ(e["runtime_stats"]["min"].get<double>(), 1.0);
  EXPECT_EQ(e["runtime_stats"]["max"].get<double>(), 12300.0);
  EXPECT_EQ(e["runtime_stats"]["median"].get<double>(), 1.23456) << "upstream has no median: kbv's, whole";
  EXPECT_EQ(e["runtime_stats"]["num_trials"], 100);
  EXPECT_EQ(e["metadata"][kTimingRoundingKey], kTimingRoundingNote);
  EXPECT_EQ(read.record.runtime, 1.23456) << "the record keeps full precision";
  EXPECT_EQ(read.record.runtime_stats["mean"].get<double>(), 1.23456);
  // Not timed: nothing rounded and nothing said.
  const std::vector<Record> not_timed = {record_from_json(rec(5, 0, false, -1.0)).record};
  const auto untimed = kbv::kernelbench_eval_results(not_timed);
  EXPECT_FALSE(untimed["5"][0]["metadata"].contains(kTimingRoundingKey)) << untimed.dump();
}

TEST(KernelBenchEvalResults, MissingFieldsGetDefaults) {
  const nlohmann::json bare = {{"problem_id", 7}, {"sample_id", 1}, {"compiled", false}};
  nlohmann::json null_runtime = rec(7, 2);
  null_runtime["runtime"] = nullptr;  // NaN is stored as null
  const auto out = kernelbench_eval_results({bare, null_runtime});
  const auto& list = out["7"];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_TRUE(list[0]["runtime"].is_number_float());
  EXPECT_DOUBLE_EQ(list[0]["runtime"].get<double>(), -1.0);
  EXPECT_EQ(list[0]["runtime_stats"], nlohmann::ordered_json::object());
  EXPECT_EQ(list[0]["metadata"], nlohmann::ordered_json::object());
  EXPECT_EQ(list[0]["compiled"], false);
  EXPECT_EQ(list[0]["correctness"], false);
  EXPECT_DOUBLE_EQ(list[1]["runtime"].get<double>(), -1.0);
}

TEST(KernelBenchEvalResults, ExtraKeysDropped) {
  nlohmann::json r = rec(4, 0);
  r["solution_hash"] = "abc";
  r["protocol"] = {{"trials", 5}};
  r["speedup"] = 3.0;
  const auto out = kernelbench_eval_results({r});
  const auto& sample = out["4"][0];
  EXPECT_EQ(sample.size(), 6u);
  EXPECT_FALSE(sample.contains("solution_hash"));
  EXPECT_FALSE(sample.contains("protocol"));
  EXPECT_FALSE(sample.contains("speedup"));
  EXPECT_FALSE(sample.contains("problem_id"));
  EXPECT_FALSE(sample.contains("level"));
}

TEST(KernelBenchEvalResults, LaterDuplicateWins) {
  const auto out = kernelbench_eval_results({rec(1, 0, false), rec(1, 0, true)});
  ASSERT_EQ(out["1"].size(), 1u);
  EXPECT_EQ(out["1"][0]["correctness"], true);
}

TEST(KernelBenchEvalResults, EmptyAndMalformedInput) {
  EXPECT_EQ(kernelbench_eval_results({}).dump(), "{}");
  const auto out = kernelbench_eval_results(
      {nlohmann::json::array(), nlohmann::json{{"sample_id", 0}}, rec(2, 0)});
  EXPECT_EQ(keys(out), (std::vector<std::string>{"2"}));
}

// Batch mode keeps each level's file current record by record: the same file as building it from
// every record, with each record turned into its entry once (not once per sample evaluated).
TEST(KernelBenchEvalResults, FileKeptCurrentRecordByRecordEqualsTheWholeBuild) {
  std::vector<nlohmann::json> stored = {rec(100, 0), rec(10, 1), rec(2, 0, false), nlohmann::json{{"sample_id", 0}},
                                        rec(10, 0), rec(2, 0, true, 0.5), rec(10, 1, false, 7.0)};
  EvalResultsFile file;
  std::vector<nlohmann::json> so_far;
  for (const auto& j : stored) {
    RecordRead r = record_from_json(j);
    ASSERT_TRUE(r.ok());
    file.put(r.record);
    so_far.push_back(j);
    EXPECT_EQ(file.json().dump(2), kernelbench_eval_results(so_far).dump(2)) << "after " << so_far.size();
  }
  EXPECT_EQ(file.entries_made(), stored.size() - 1) << "one entry per record that has a slot, made once";
  EXPECT_EQ(keys(file.json()), (std::vector<std::string>{"2", "10", "100"}));
}

}  // namespace eval_results_test
}  // namespace kbv
