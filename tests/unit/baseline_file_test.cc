// KernelBench's baseline timing file as `kbv baseline --import/--export` read and write it
// (formats/baseline.h).
#include "formats/baseline.h"

#include <gtest/gtest.h>

using nlohmann::json;

TEST(BaselineFile, LevelKeysAsImportReadsThem) {
  EXPECT_EQ(kbv::baseline_level_key("level1"), 1);
  EXPECT_EQ(kbv::baseline_level_key("level12"), 12);
  EXPECT_FALSE(kbv::baseline_level_key("levelx"));
  EXPECT_FALSE(kbv::baseline_level_key("Level1"));
  EXPECT_FALSE(kbv::baseline_level_key("1"));
}

TEST(BaselineFile, EntryStatsFillWhatKernelBenchDoesNotRecord) {
  json upstream = {{"mean", 2.5}, {"std", 0.1}, {"min", 2.0}, {"max", 3.0}, {"num_trials", 100}};
  ASSERT_TRUE(kbv::baseline_entry_timed(upstream));
  kbv::Stats s = kbv::baseline_entry_stats(upstream);
  EXPECT_DOUBLE_EQ(s.mean_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5) << "no median upstream: the mean stands in";
  EXPECT_DOUBLE_EQ(s.std_ms, 0.1);
  EXPECT_DOUBLE_EQ(s.min_ms, 2.0);
  EXPECT_DOUBLE_EQ(s.max_ms, 3.0);
  EXPECT_EQ(s.samples, 100);
  EXPECT_FALSE(kbv::baseline_entry_timed(json(nullptr))) << "upstream writes null for a failed baseline";
  EXPECT_FALSE(kbv::baseline_entry_timed(json{{"mean", "2.5"}}));
}

TEST(BaselineFile, NullFieldsCountAsAbsentInsteadOfThrowing) {
  // A hand-edited or foreign file: null where a number belongs used to end kbv with an uncaught
  // json type_error (terminate); it is read as if the field were absent.
  json entry = {{"mean", 1.5}, {"std", nullptr}, {"median", nullptr}, {"min", "x"}, {"num_trials", nullptr}};
  ASSERT_TRUE(kbv::baseline_entry_timed(entry));
  kbv::Stats s;
  ASSERT_NO_THROW(s = kbv::baseline_entry_stats(entry));
  EXPECT_DOUBLE_EQ(s.median_ms, 1.5);
  EXPECT_DOUBLE_EQ(s.std_ms, 0.0);
  EXPECT_DOUBLE_EQ(s.min_ms, 1.5);
  EXPECT_DOUBLE_EQ(s.max_ms, 1.5);
  EXPECT_EQ(s.samples, 0);
}

TEST(BaselineFile, ExportEntryHasUpstreamsKeysAndTheMedian) {
  json file = json::object();
  json stats = {{"mean_ms", 2.5}, {"std_ms", 0.1}, {"min_ms", 2.0}, {"max_ms", 3.0}, {"median_ms", 2.4}, {"samples", 9}};
  kbv::add_baseline_entry(file, 1, "19_ReLU.py", stats, "NVIDIA H100", "cuda:0");
  kbv::add_baseline_entry(file, 2, "3_X.py", json::object(), "cpu", "cpu");
  EXPECT_EQ(file.dump(), R"({"level1":{"19_ReLU.py":{"device":"cuda:0","hardware":"NVIDIA H100","max":3.0,"mean":2.5,)"
                         R"("median":2.4,"min":2.0,"num_trials":9,"std":0.1}},"level2":{"3_X.py":{"device":"cpu",)"
                         R"("hardware":"cpu","max":0.0,"mean":0.0,"median":0.0,"min":0.0,"num_trials":0,"std":0.0}}})");
  // What the export writes, the import reads back.
  kbv::Stats back = kbv::baseline_entry_stats(file["level1"]["19_ReLU.py"]);
  EXPECT_DOUBLE_EQ(back.median_ms, 2.4);
  EXPECT_EQ(back.samples, 9);
}

// Upstream's baseline files hold get_timing_stats' figures, 3 significant digits; the export
// writes kbv's cached stats the same way (kbv's median whole), so upstream's scoring reads the
// means kbv's verified table divides by.
TEST(BaselineFile, ExportRoundsAsUpstreamsBaselineFiles) {
  json file = json::object();
  json stats = {{"mean_ms", 2.34567}, {"std_ms", 0.0123456}, {"min_ms", 2.0004}, {"max_ms", 12.25},
                {"median_ms", 2.34567}, {"samples", 100}};
  kbv::add_baseline_entry(file, 1, "19_ReLU.py", stats, "NVIDIA H100", "cuda:0");
  const json& e = file["level1"]["19_ReLU.py"];
  EXPECT_EQ(e["mean"].get<double>(), 2.35);
  EXPECT_EQ(e["std"].get<double>(), 0.0123);
  EXPECT_EQ(e["min"].get<double>(), 2.0);
  EXPECT_EQ(e["max"].get<double>(), 12.2) << "an exact tie, to even";
  EXPECT_EQ(e["median"].get<double>(), 2.34567) << "kbv's own key stays whole";
  EXPECT_EQ(stats["mean_ms"].get<double>(), 2.34567) << "the cached stats are not touched";
}
