// Reading KernelBench and KernelBench-Verified files written from their documented formats, and
// writing them back.
#include "formats/eval_results.h"
#include "formats/baseline.h"
#include "formats/upstream.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "report/summary.h"
#include "util/fs.h"

namespace kbv {
namespace upstream_test {

namespace fs = std::filesystem;
using nlohmann::json;

class UpstreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kbv_upstream_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    EXPECT_EQ(write_file_atomic(p, text), "");
    return p;
  }
  fs::path dir_;
};

// KernelBench's scripts/eval_from_generations.py: problem id -> list of samples.
const char* kKernelBench = R"json({
  "1": [{"sample_id": 0, "compiled": true, "correctness": true,
         "metadata": {"hardware": "NVIDIA H100 80GB HBM3", "device": "cuda:0", "correctness_trials": "(5 / 5)"},
         "runtime": 2.0, "runtime_stats": {"mean": 2.0, "std": 0.01, "min": 1.98, "max": 2.05, "num_trials": 100,
                                           "hardware": "NVIDIA H100 80GB HBM3", "device": "cuda:0"}}],
  "2": [{"sample_id": 0, "compiled": false, "correctness": false,
         "metadata": {"compilation_error": "error: identifier \"foo\" is undefined\nmore"}, "runtime": -1.0,
         "runtime_stats": {}},
        {"sample_id": 1, "compiled": true, "correctness": false,
         "metadata": {"correctness_issue": "Output mismatch", "correctness_trials": "(0 / 5)"},
         "runtime": -1.0, "runtime_stats": {}}],
  "10": [{"sample_id": 0, "compiled": true, "correctness": false,
          "metadata": {"runtime_error": "CUDA error: an illegal memory access was encountered"},
          "runtime": -1.0, "runtime_stats": {}}]
})json";

// KernelBench-Verified: "<pid>_<sid>" -> one entry with peak_memory; the hidden file alike.
const char* kVerified = R"json({
  "1_0": {"sample_id": 0, "compiled": true, "correctness": true, "metadata": {"hardware": "NVIDIA H200"},
          "runtime": 2.0, "runtime_stats": {"mean": 2.0}, "peak_memory": 1000},
  "1_1": {"sample_id": 1, "compiled": true, "correctness": true, "metadata": {"hardware": "NVIDIA H200"},
          "runtime": 4.0, "runtime_stats": {"mean": 4.0}, "peak_memory": 4000},
  "2_0": {"sample_id": 0, "compiled": true, "correctness": true, "metadata": {}, "runtime": 1.0,
          "runtime_stats": {"mean": 1.0}, "peak_memory": 500},
  "3_0": {"sample_id": 0, "compiled": true, "correctness": true, "metadata": {}, "runtime": 1.0,
          "runtime_stats": {"mean": 1.0}}
})json";
const char* kVerifiedHidden = R"json({
  "1_0": {"sample_id": 0, "compiled": true, "correctness": true, "metadata": {}},
  "1_1": {"sample_id": 1, "compiled": true, "correctness": true, "metadata": {}},
  "2_0": {"sample_id": 0, "compiled": true, "correctness": false,
          "metadata": {"hidden_failed_configs": ["config_4"]}}
})json";
// results/timing/<hardware>/<baseline>.json
const char* kBaselineTf32 = R"json({
  "level1": {
    "1_Square_matrix_multiplication_.py": {"mean": 3.0, "std": 0.1, "min": 2.9, "max": 3.2, "num_trials": 100,
                                           "hardware": "NVIDIA H200", "device": "cuda:0", "peak_memory": 2000},
    "2_Standard_matrix_multiplication_.py": {"mean": 0.5, "std": 0.01, "min": 0.49, "max": 0.52, "num_trials": 100,
                                             "hardware": "NVIDIA H200", "device": "cuda:0", "peak_memory": 500},
    "3_Batched_matrix_multiplication.py": null
  }
})json";

TEST_F(UpstreamTest, ReadsKernelBenchListShape) {
  fs::path f = write("eval_results.json", kKernelBench);
  write("level_1_problem_1_sample_0_kernel.py", "class ModelNew: pass\n");
  UpstreamRead r = read_eval_results(f, std::nullopt, 1, dir_);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.format, "kernelbench");
  ASSERT_EQ(r.records.size(), 4u);
  const json a = to_json(r.records[0]);
  EXPECT_EQ(a["level"], 1);
  EXPECT_EQ(a["problem_id"], 1);
  EXPECT_EQ(a["verdict"], "correct");
  EXPECT_EQ(a["protocol"]["name"], kImportProtocol);
  EXPECT_EQ(a["protocol"]["source"], f.string());
  EXPECT_EQ(a["protocol"]["device_name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(a["runtime_stats"]["num_trials"], 100);
  EXPECT_NE(a["solution"].get<std::string>().find("level_1_problem_1_sample_0_kernel.py"), std::string::npos);
  EXPECT_TRUE(a.contains("solution_hash"));
  // Verdicts from upstream's metadata.
  EXPECT_EQ(to_json(r.records[1])["verdict"], "compile_error");
  EXPECT_EQ(to_json(r.records[1])["message"], "upstream: error: identifier \"foo\" is undefined");
  EXPECT_EQ(to_json(r.records[2])["verdict"], "wrong_output");
  EXPECT_EQ(to_json(r.records[2])["message"], "upstream: Output mismatch");
  EXPECT_EQ(to_json(r.records[3])["problem_id"], 10);
  EXPECT_EQ(to_json(r.records[3])["verdict"], "runtime_error");
  SampleView v = view_of(r.records[0]);
  EXPECT_EQ(v.standard, true);
  EXPECT_FALSE(v.hidden.has_value()) << "no hidden file: the hidden gate was not run";
  EXPECT_TRUE(v.speedup.empty()) << "no baseline file: speed not measured";
}

TEST_F(UpstreamTest, ReadsOlderOneEntryPerProblemShape) {
  fs::path f = write("eval_results.json", R"({"4": {"compiled": true, "correctness": true, "metadata": {},
                                                    "runtime": 1.5, "runtime_stats": {}}})");
  UpstreamRead r = read_eval_results(f, std::nullopt, 2, dir_);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(to_json(r.records[0])["sample_id"], 0);
  EXPECT_EQ(to_json(r.records[0])["level"], 2);
}

TEST_F(UpstreamTest, VerifiedWithHiddenResultsAndBaselineFile) {
  fs::path f = write("eval_results.json", kVerified);
  fs::path h = write("eval_results_hidden.json", kVerifiedHidden);
  fs::path b = write("baseline_time_torch_tf32.json", kBaselineTf32);
  UpstreamRead r = read_eval_results(f, h, 1, dir_);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.format, "kernelbench-verified");
  ASSERT_EQ(r.records.size(), 4u);
  ASSERT_EQ(r.warnings.size(), 1u) << "3_0 compiled but is missing from the hidden file";
  EXPECT_NE(r.warnings[0].find("1 compiled sample(s) have no entry"), std::string::npos) << r.warnings[0];

  std::string error;
  auto [name, path] = parse_baseline_arg(b.string());
  EXPECT_EQ(name, "tf32");
  auto baseline = read_baseline_file(path, name, error);
  ASSERT_TRUE(baseline) << error;
  EXPECT_EQ(baseline->entries.size(), 2u) << "null entries are skipped";
  for (auto& rec : r.records) apply_baseline(rec, *baseline);

  SampleView s10 = view_of(r.records[0]);
  EXPECT_EQ(s10.problem, "1_Square_matrix_multiplication_.py");
  EXPECT_DOUBLE_EQ(s10.speedup.at("tf32"), 1.5);       // 3.0 / 2.0
  EXPECT_DOUBLE_EQ(s10.memory_ratio.at("tf32"), 2.0);  // 2000 / 1000
  EXPECT_EQ(s10.hidden, true);
  SampleView s11 = view_of(r.records[1]);
  EXPECT_DOUBLE_EQ(s11.speedup.at("tf32"), 0.75);
  EXPECT_DOUBLE_EQ(s11.memory_ratio.at("tf32"), 0.5);
  SampleView s20 = view_of(r.records[2]);
  EXPECT_EQ(s20.standard, true);
  EXPECT_EQ(s20.hidden, false);
  EXPECT_EQ(s20.verdict, "wrong_output");
  EXPECT_EQ(s20.failed_distributions, std::vector<std::string>{"config_4"});
  EXPECT_DOUBLE_EQ(s20.speedup.at("tf32"), 0.5);
  SampleView s30 = view_of(r.records[3]);
  EXPECT_EQ(s30.hidden, false) << "missing from the hidden file: failed, as KernelBench-Verified does";
  EXPECT_TRUE(s30.speedup.empty()) << "the baseline file has null for problem 3";

  // Best-of-n over these: problem 1 picks sample 0 (1.5x), problem 2 fails hidden, problem 3 too.
  RunSummary run = summarize("v", r.records, {}, "tf32");
  const ScopeSummary& all = run.scopes[0];
  EXPECT_EQ(all.hidden.best_correct, 1);
  EXPECT_DOUBLE_EQ(*all.hidden.best_speed.at("tf32").geomean_correct, 1.5);
  EXPECT_DOUBLE_EQ(*all.hidden.best_memory.efficiency, 2.0) << "the memory of the speed winner, paired";
  EXPECT_DOUBLE_EQ(all.hidden.best_memory.efficient_share, 1.0 / 3);
  EXPECT_EQ(all.standard.best_correct, 3);
  EXPECT_FALSE(all.hidden.speed.at("fp32").measured) << "no fp32 baseline file";
}

TEST_F(UpstreamTest, LongErrorsAreCutOnACharacterBoundary) {
  // 299 ASCII bytes, then a 3-byte character across the 300-byte cut.
  json entry = {{"compiled", false}, {"metadata", {{"compilation_error", std::string(299, 'x') + "\u2192 more"}}}};
  fs::path f = write("eval_results.json", json{{"1", json::array({entry})}}.dump());
  UpstreamRead r = read_eval_results(f, std::nullopt, 1, dir_);
  ASSERT_EQ(r.records.size(), 1u);
  const std::string message = to_json(r.records[0])["message"];
  EXPECT_EQ(message, "upstream: " + std::string(299, 'x') + "...");
  EXPECT_NO_THROW((void)to_json(r.records[0]).dump()) << "valid UTF-8";
}

TEST_F(UpstreamTest, BaselineArgumentNames) {
  EXPECT_EQ(parse_baseline_arg("fp32=results/timing/H200/x_tf32.json").first, "fp32");
  EXPECT_EQ(parse_baseline_arg("results/timing/H200/baseline_time_torch.json").first, "fp32");
  EXPECT_EQ(parse_baseline_arg("baseline_time_torch_compile_inductor_default.json").first, "compile");
  EXPECT_EQ(parse_baseline_arg("/data/a=b/baseline_tf32.json").first, "tf32") << "'=' inside a folder name";
  EXPECT_EQ(parse_baseline_arg("/data/a=b/baseline_tf32.json").second, "/data/a=b/baseline_tf32.json");
}

TEST_F(UpstreamTest, BadFilesAreErrorsNamingTheFile) {
  fs::path f = write("eval_results.json", "{\"1\": [ {\"compiled\": tru");
  UpstreamRead r = read_eval_results(f, std::nullopt, 1, dir_);
  EXPECT_NE(r.error.find(f.string()), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("not valid JSON"), std::string::npos) << r.error;

  fs::path g = write("weird.json", R"({"abc": [], "5": [1, {"compiled": true}]})");
  UpstreamRead w = read_eval_results(g, std::nullopt, 1, dir_);
  EXPECT_EQ(w.error, "");
  EXPECT_EQ(w.records.size(), 1u);
  EXPECT_EQ(w.warnings.size(), 2u) << "the bad key and the non-object entry are named";

  std::string error;
  fs::path b = write("b.json", R"({"levelX": {}})");
  EXPECT_FALSE(read_baseline_file(b, "tf32", error));
  EXPECT_NE(error.find("no \"level<N>\" object"), std::string::npos) << error;
  EXPECT_FALSE(read_baseline_file(dir_ / "absent.json", "tf32", error));
  EXPECT_NE(error.find("absent.json"), std::string::npos) << error;
}

TEST_F(UpstreamTest, FindsFilesAndLevels) {
  write("eval_results_level2.json", "{}");
  write("eval_results_level1.json", "{}");
  write("eval_results_hidden_level1.json", "{}");
  auto files = find_upstream_files(dir_);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].level, 1);
  EXPECT_TRUE(files[0].hidden_file.has_value());
  EXPECT_EQ(files[1].level, 2);
  EXPECT_FALSE(files[1].hidden_file.has_value());
  EXPECT_FALSE(infer_run_level(dir_).has_value());
  write("level_3_problem_1_sample_0_kernel.py", "x");
  EXPECT_EQ(infer_run_level(dir_), 3);
}

TEST_F(UpstreamTest, VerifiedExportRoundTrips) {
  fs::path f = write("eval_results.json", kVerified);
  fs::path h = write("eval_results_hidden.json", kVerifiedHidden);
  UpstreamRead r = read_eval_results(f, h, 1, dir_);
  ASSERT_EQ(r.error, "");
  auto standard = verified_eval_results(r.records, false);
  auto hidden = verified_eval_results(r.records, true);
  ASSERT_EQ(standard.size(), 4u);
  std::vector<std::string> keys;
  for (const auto& item : standard.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"1_0", "1_1", "2_0", "3_0"}));
  EXPECT_EQ(standard["2_0"]["correctness"], true);
  EXPECT_EQ(standard["1_1"]["peak_memory"], 4000.0);
  EXPECT_EQ(hidden["2_0"]["correctness"], false);
  EXPECT_EQ(hidden["2_0"]["metadata"]["hidden_failed_configs"], json::array({"config_4"}));

  // Written and read back: the same gates.
  fs::path back = dir_ / "back";
  fs::create_directories(back);
  ASSERT_EQ(write_file_atomic(back / "eval_results.json", standard.dump()), "");
  ASSERT_EQ(write_file_atomic(back / "eval_results_hidden.json", hidden.dump()), "");
  UpstreamRead again = read_eval_results(back / "eval_results.json", back / "eval_results_hidden.json", 1, back);
  ASSERT_EQ(again.records.size(), r.records.size());
  for (size_t i = 0; i < r.records.size(); ++i) {
    SampleView a = view_of(r.records[i]), b = view_of(again.records[i]);
    EXPECT_EQ(a.standard, b.standard) << i;
    EXPECT_EQ(a.hidden, b.hidden) << i;
    EXPECT_EQ(a.verdict, b.verdict) << i;
  }
}

TEST_F(UpstreamTest, NativeRecordsExportTheirGates) {
  json native = {
      {"level", 1},
      {"problem_id", 19},
      {"sample_id", 0},
      {"compiled", true},
      {"correctness", false},
      {"verdict", "wrong_output"},
      {"runtime", -1.0},
      {"protocol",
       {{"name", "kbv"}, {"trials", 1}, {"distributions", json::array({{{"name", "D1"}}, {{"name", "D4"}}})}}},
      {"distributions",
       json::array({{{"distribution", "D1"}, {"passed", true}}, {{"distribution", "D4"}, {"passed", false}}})},
      {"memory", {{"measured", true}, {"candidate", {{"peak_bytes", 4096}}}}}};
  auto standard = verified_eval_results({record_from_json(native).record}, false);
  auto hidden = verified_eval_results({record_from_json(native).record}, true);
  EXPECT_EQ(standard["19_0"]["correctness"], true) << "D1 passed: KernelBench's check would pass it";
  EXPECT_EQ(standard["19_0"]["peak_memory"], 4096.0);
  EXPECT_EQ(hidden["19_0"]["correctness"], false);
  // KernelBench-Verified's names: config_N in its hidden order (kbv's D1..D4).
  EXPECT_EQ(hidden["19_0"]["metadata"]["hidden_failed_configs"], json::array({"config_4"}));
}

// KernelBench has no flaky status: the failed check counts where it decides, and the metadata says
// it was instability (kbv_flaky: the record's message), in both export formats.
TEST_F(UpstreamTest, FlakyRecordsExportAsFailedWithTheReasonInMetadata) {
  json native = {
      {"level", 1},
      {"problem_id", 19},
      {"sample_id", 0},
      {"compiled", true},
      {"correctness", false},
      {"verdict", "flaky"},
      {"message", "trial 0 D4 (x-1) failed, then passed on identical re-run 1 of at most 2"},
      {"runtime", -1.0},
      {"protocol",
       {{"name", "kbv"}, {"trials", 1}, {"distributions", json::array({{{"name", "D1"}}, {{"name", "D4"}}})}}},
      {"distributions",
       json::array({{{"distribution", "D1"}, {"passed", true}}, {{"distribution", "D4"}, {"passed", false}}})}};
  const Record r = record_from_json(native).record;
  auto standard = verified_eval_results({r}, false);
  auto hidden = verified_eval_results({r}, true);
  EXPECT_EQ(standard["19_0"]["correctness"], true) << "D1 passed: KernelBench's check would pass it";
  EXPECT_EQ(hidden["19_0"]["correctness"], false);
  EXPECT_EQ(hidden["19_0"]["metadata"]["kbv_flaky"], native["message"]);
  EXPECT_EQ(standard["19_0"]["metadata"]["kbv_flaky"], native["message"]);
  auto kb = kernelbench_eval_results({r});
  EXPECT_EQ(kb["19"][0]["correctness"], false);
  EXPECT_EQ(kb["19"][0]["metadata"]["kbv_flaky"], native["message"]);
}

// What KernelBench-Verified's harness writes for a sample, from a kbv record's own trials: the
// hidden run's per-config keys, max_difference of the failed D1 trials (generate_leaderboard
// --fp32_tolerance re-thresholds on it), memory_stats, and the mean as `runtime`.
TEST_F(UpstreamTest, NativeRecordsExportWhatUpstreamsHarnessWrites) {
  json cmp = json::array({{{"numel", 8}, {"mismatches", 2}, {"max_abs_error", 0.25}, {"rel_l2_error", 0.1}},
                          {{"numel", 8}, {"mismatches", 1}, {"max_abs_error", 0.5}, {"rel_l2_error", 0.2}}});
  json native = {
      {"level", 1},
      {"problem_id", 19},
      {"sample_id", 2},
      {"compiled", true},
      {"correctness", false},
      {"verdict", "wrong_output"},
      {"runtime", 1.5},
      {"runtime_stats", {{"mean", 1.75432}, {"std", 0.0123456}, {"median", 1.5}}},
      {"metadata", {{"hardware", "NVIDIA H200"}, {"device", "cuda:0"}}},
      {"protocol", {{"name", "kbv"}, {"trials", 1}}},
      {"distributions", json::array({{{"distribution", "D1"}, {"passed", false}, {"comparisons", cmp}},
                                     {{"distribution", "D2"}, {"passed", true}},
                                     {{"distribution", "D3"}, {"passed", false}, {"reason", "raised: CUDA error"}},
                                     {{"distribution", "D4"}, {"passed", true}}})},
      {"memory", {{"measured", true}, {"candidate", {{"peak_bytes", 4096}}}}}};
  auto standard = verified_eval_results({record_from_json(native).record}, false);
  auto hidden = verified_eval_results({record_from_json(native).record}, true);
  const auto& s = standard["19_2"];
  EXPECT_EQ(s["metadata"]["max_difference"], json::array({"0.500000"})) << s.dump();
  // upstream's runtime is its mean, rounded to 3 significant digits as get_timing_stats rounds it
  EXPECT_DOUBLE_EQ(s["runtime"].get<double>(), 1.75) << "upstream's runtime is a rounded mean";
  EXPECT_DOUBLE_EQ(s["runtime_stats"]["mean"].get<double>(), 1.75);
  EXPECT_DOUBLE_EQ(s["runtime_stats"]["std"].get<double>(), 0.0123);
  EXPECT_DOUBLE_EQ(s["runtime_stats"]["median"].get<double>(), 1.5);
  EXPECT_EQ(s["metadata"]["kbv_timing_rounding"], kTimingRoundingNote) << s.dump();
  EXPECT_EQ(json::parse(s["memory_stats"].dump()),
            (json{{"peak_bytes", 4096.0}, {"hardware", "NVIDIA H200"}, {"device", "cuda:0"}}));
  const auto& h = hidden["19_2"]["metadata"];
  EXPECT_EQ(h["hidden_failed_configs"], json::array({"config_1", "config_3"})) << h.dump();
  EXPECT_EQ(h["hidden_max_difference"], json::array({"config_1: 0.500000"})) << h.dump();
  EXPECT_EQ(h["hidden_runtime_error"], json::array({"config_3: raised: CUDA error"})) << h.dump();
  EXPECT_EQ(h["max_difference"], json::array({"0.500000"}));
  EXPECT_FALSE(h.contains("hidden_correctness_trials"));
}

// An imported KernelBench-Verified run exported again keeps the hidden run's own metadata and
// memory_stats, and a sample the hidden file did not have stays absent (not an explicit false).
TEST_F(UpstreamTest, VerifiedExportKeepsTheHiddenRunsOwnMetadata) {
  fs::path f = write("eval_results.json", R"json({
    "1_0": {"sample_id": 0, "compiled": true, "correctness": false,
            "metadata": {"max_difference": ["0.000200"], "hardware": "NVIDIA H200"}, "runtime": 2.0,
            "runtime_stats": {"mean": 2.0}, "peak_memory": 1000,
            "memory_stats": {"peak_bytes": 1000, "hardware": "NVIDIA H200", "device": "cuda:0"}},
    "1_1": {"sample_id": 1, "compiled": true, "correctness": true, "metadata": {}, "runtime": 3.0,
            "runtime_stats": {"mean": 3.0}},
    "2_0": {"sample_id": 0, "compiled": true, "correctness": false,
            "metadata": {"eval_status": "timeout", "timeout_s": 180}, "runtime": -1.0, "runtime_stats": {}},
    "3_0": {"sample_id": 0, "compiled": true, "correctness": false,
            "metadata": {"eval_status": "eval_exception", "error": "CUDA out of memory"}, "runtime": -1.0,
            "runtime_stats": {}}
  })json");
  fs::path h = write("eval_results_hidden.json", R"json({
    "1_0": {"sample_id": 0, "compiled": true, "correctness": false,
            "metadata": {"max_difference": ["0.000300"], "hidden_failed_configs": ["config_2"],
                         "hidden_max_difference": ["config_2: 0.010000"]}}
  })json");
  UpstreamRead r = read_eval_results(f, h, 1, dir_);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.records.size(), 4u);
  EXPECT_EQ(r.records[2].verdict, Verdict::timeout) << r.records[2].message;
  EXPECT_NE(r.records[2].message.find("180 s"), std::string::npos) << r.records[2].message;
  EXPECT_EQ(r.records[3].verdict, Verdict::runtime_error) << r.records[3].message;
  EXPECT_NE(r.records[3].message.find("CUDA out of memory"), std::string::npos) << r.records[3].message;

  auto standard = verified_eval_results(r.records, false);
  auto hidden = verified_eval_results(r.records, true);
  EXPECT_EQ(standard["1_0"]["memory_stats"]["device"], "cuda:0") << standard["1_0"].dump();
  EXPECT_EQ(standard["1_0"]["metadata"]["max_difference"], json::array({"0.000200"}));
  EXPECT_EQ(hidden["1_0"]["metadata"]["max_difference"], json::array({"0.000300"})) << "the hidden run's own";
  EXPECT_EQ(hidden["1_0"]["metadata"]["hidden_max_difference"], json::array({"config_2: 0.010000"}));
  EXPECT_EQ(hidden["1_0"]["metadata"]["hidden_failed_configs"], json::array({"config_2"}));
  EXPECT_FALSE(hidden.contains("1_1")) << "no hidden entry upstream: none exported";
  EXPECT_DOUBLE_EQ(standard["1_1"]["runtime"].get<double>(), 3.0);
}

}  // namespace upstream_test
}  // namespace kbv
