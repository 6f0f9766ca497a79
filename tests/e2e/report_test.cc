// End-to-end: `kbv import`, `kbv report`, `kbv export` on fixture runs (no workers needed), and
// the HTML report opened in a real headless Chromium (skipped, visibly, when it is not installed).
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support.h"
#include "formats/upstream.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/subprocess.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace report_test {

using kbv::e2e::kSource;
const fs::path kData = kSource / "tests/data/report";

using kbv::e2e::Outcome;

// Import, report and export start no worker: no build cache, two minutes at most.
Outcome kbv_cmd(const std::vector<std::string>& args) { return kbv::e2e::run_kbv(args, {}, 120, ""); }

fs::path temp_dir(const std::string& name) { return kbv::e2e::scratch_dir("report", name); }

// A kbv run folder whose store holds the fixture records (tests/data/report/make_fixture.py).
fs::path kbv_fixture_run(const std::string& name) {
  fs::path dir = temp_dir(name);
  json records = json::parse(kbv::read_file(kData / "kbv_records.json").text);
  std::string error;
  auto store = kbv::Store::open(dir / "kbv.sqlite", error);
  EXPECT_TRUE(store) << error;
  if (!store) return dir;
  const std::string phash = kbv::sha256_hex(records[0]["protocol"].dump());
  for (const auto& r : records) {
    kbv::RecordKey key{r["level"].get<int>(), r["problem_id"].get<int>(), r["sample_id"].get<int>(),
                       r["solution_hash"].get<std::string>(), phash};
    EXPECT_EQ(store->put(key, kbv::record_from_json(r).record), "");
  }
  return dir;
}

fs::path verified_fixture_run(const std::string& name) {
  fs::path dir = temp_dir(name);
  for (const char* f : {"eval_results.json", "eval_results_hidden.json"})
    fs::copy_file(kData / "verified_run" / f, dir / f);
  return dir;
}

std::string tf32_file() { return "tf32=" + (kData / "baseline_time_torch_tf32.json").string(); }
std::string fp32_file() { return "fp32=" + (kData / "baseline_time_torch.json").string(); }

TEST(ReportE2E, ImportReportExportKernelBenchVerified) {
  fs::path dir = verified_fixture_run("verified");
  Outcome o =
      kbv_cmd({"import", dir.string(), "--level", "1", "--baseline-file", tf32_file(), "--baseline-file", fp32_file()});
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("7 record(s) from"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("kernelbench-verified"), std::string::npos) << o.output;
  // The 4 timed entries (runtime > 0); the other 3 get a memory ratio at most (issue 29: counted 7).
  EXPECT_NE(o.output.find("4 record(s) with a tf32 speedup"), std::string::npos) << o.output;
  ASSERT_TRUE(fs::exists(dir / "kbv.sqlite"));
  // Importing the same files again replaces, not duplicates.
  ASSERT_EQ(
      kbv_cmd({"import", dir.string(), "--level", "1", "--baseline-file", tf32_file(), "--baseline-file", fp32_file()})
          .code,
      0);
  std::string error;
  EXPECT_EQ(kbv::Store::open(dir / "kbv.sqlite", error)->rows().size(), 7u);

  // The stored run reports without any baseline file: the speedups were stored.
  // The dataset: the six level-1 problems of problems/ that the fixture's samples were made for
  // (the suite has more; a fixed folder keeps the denominators below true).
  fs::path dataset = dir / "dataset" / "level1";
  fs::create_directories(dataset);
  for (const char* f : {"1_Square_matrix_multiplication_.py", "19_ReLU.py", "23_Softmax.py", "26_GELU_.py",
                        "47_Sum_reduction_over_a_dimension.py", "95_CrossEntropyLoss.py"})
    fs::copy_file(kSource / "problems" / "level1" / f, dataset / f);
  o = kbv_cmd({"report", dir.string(), "--format", "json", "--out", (dir / "r.json").string(), "--problems",
               (dir / "dataset").string()});
  ASSERT_EQ(o.code, 0) << o.output;
  json r = json::parse(kbv::read_file(dir / "r.json").text);
  const json& run = r["runs"][0];
  EXPECT_EQ(run["protocol"], "kernelbench-import");
  const json& level1 = run["scopes"][0];
  // Denominator: the 6 level-1 problems of the dataset; 47 and 95 have no sample.
  EXPECT_EQ(level1["problems"], 6);
  EXPECT_EQ(level1["slots"], 12);
  EXPECT_EQ(level1["missing"], 5);
  EXPECT_EQ(level1["hidden"]["correct"], 3);
  EXPECT_EQ(level1["standard"]["correct"], 4);
  // Best-of-n against tf32, hidden gate: 1 -> 1.92/2.4 = 0.8, 19 -> 0.0125/0.011, 23 -> 0.0341/0.029.
  const double expected = std::cbrt(0.8 * (0.0125 / 0.011) * (0.0341 / 0.029));
  EXPECT_NEAR(level1["hidden"]["best_of_n"]["speed"]["tf32"]["geomean_speedup_correct"].get<double>(), expected, 1e-9);
  EXPECT_NEAR(level1["hidden"]["best_of_n"]["speed"]["tf32"]["fast_p"]["1"].get<double>(), 2.0 / 6, 1e-12);
  // Standard gate: 19 takes sample 1 (0.0125/0.0026 = 4.8x).
  EXPECT_NEAR(level1["standard"]["best_of_n"]["speed"]["tf32"]["geomean_speedup_correct"].get<double>(),
              std::cbrt(0.8 * (0.0125 / 0.0026) * (0.0341 / 0.029)), 1e-9);
  EXPECT_NEAR(level1["hidden"]["best_of_n"]["memory"]["correct_mem_efficiency"].get<double>(), std::cbrt(2.0), 1e-9);

  // Written back in KernelBench-Verified's shape, the gates survive.
  o = kbv_cmd({"export", dir.string(), "--to", (dir / "out").string()});
  ASSERT_EQ(o.code, 0) << o.output;
  json standard = json::parse(kbv::read_file(dir / "out/eval_results.json").text);
  json hidden = json::parse(kbv::read_file(dir / "out/eval_results_hidden.json").text);
  json original = json::parse(kbv::read_file(dir / "eval_results.json").text);
  ASSERT_EQ(standard.size(), original.size());
  for (const auto& [key, entry] : original.items()) {
    EXPECT_EQ(standard[key]["correctness"], entry["correctness"]) << key;
    EXPECT_EQ(standard[key]["compiled"], entry["compiled"]) << key;
    if (entry.contains("peak_memory")) {
      EXPECT_EQ(standard[key]["peak_memory"], entry["peak_memory"]) << key;
    }
  }
  EXPECT_EQ(hidden["19_1"]["correctness"], false);
  EXPECT_EQ(hidden["19_0"]["correctness"], true);
  // Not compiled and absent from the hidden file it came from: absent from the export too, as
  // upstream's leaderboard expects (it forces only compiled samples missing there to false).
  EXPECT_FALSE(hidden.contains("1_1")) << hidden.dump();

  // The KernelBench shape as well.
  o = kbv_cmd({"export", dir.string(), "--format", "kernelbench", "--to", (dir / "kb").string()});
  ASSERT_EQ(o.code, 0) << o.output;
  json kb = json::parse(kbv::read_file(dir / "kb/eval_results.json").text);
  EXPECT_EQ(kb["19"].size(), 2u);
}

TEST(ReportE2E, ReadsAnUpstreamFolderWithoutImporting) {
  fs::path dir = verified_fixture_run("in_memory");
  Outcome o = kbv_cmd({"report", dir.string(), "--level", "1", "--baseline-file", tf32_file()});
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("without storing them"), std::string::npos) << o.output;
  // Rows labelled by what the baseline measured: upstream's TF32 file (issue 29).
  // The geomeans with their 95% interval: imported records have none of their own, so it is the
  // bootstrap over the records alone (deterministic: a fixed seed).
  EXPECT_NE(o.output.find("| TF32 matmuls and convolutions | 1.65× [0.80, 4.81] · fast_1 50.0% | 1.02× [0.80, 1.18] · fast_1 50.0% |"),
            std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("| FP32 (strict) | not measured | not measured |"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(dir / "kbv.sqlite")) << "a report never writes into the run folder";
  // Without --level and without kernel files the level is unknown: an error that says what to pass.
  o = kbv_cmd({"report", dir.string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("pass --level L"), std::string::npos) << o.output;
}

TEST(ReportE2E, UsableErrors) {
  fs::path dir = temp_dir("errors");
  Outcome o = kbv_cmd({"report", dir.string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("no kbv.sqlite and no eval_results.json"), std::string::npos) << o.output;
  o = kbv_cmd({"report", (dir / "absent").string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("not a folder"), std::string::npos) << o.output;
  o = kbv_cmd({"report", dir.string(), "--format", "pdf"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("use md, html, csv or json"), std::string::npos) << o.output;
  fs::path run = kbv_fixture_run("refuse");
  o = kbv_cmd({"import", run.string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("no eval_results.json"), std::string::npos) << o.output;
  kbv::write_file_atomic(run / "eval_results.json", "{}");
  o = kbv_cmd({"import", run.string(), "--level", "1"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("holds kbv's own results"), std::string::npos) << o.output;
}

TEST(ReportE2E, KbvRunInEveryFormat) {
  fs::path dir = kbv_fixture_run("formats");
  json records = json::parse(kbv::read_file(kData / "kbv_records.json").text);
  for (const char* ext : {"md", "html", "csv", "json"}) {
    fs::path out = dir / (std::string("report.") + ext);
    Outcome o = kbv_cmd({"report", dir.string(), "--out", out.string()});
    ASSERT_EQ(o.code, 0) << o.output;
    EXPECT_NE(o.output.find(std::string("(") + ext + ")"), std::string::npos) << o.output;
    ASSERT_TRUE(fs::exists(out)) << out;
  }
  json r = json::parse(kbv::read_file(dir / "report.json").text);
  const json& scopes = r["runs"][0]["scopes"];
  ASSERT_EQ(scopes.size(), 4u) << "levels 1, 2, 3 and all";
  EXPECT_EQ(scopes[3]["name"], "all");
  EXPECT_EQ(scopes[3]["records"], records.size());
  EXPECT_EQ(scopes[3]["missing"], 1) << "level 3 problem 43 has no sample 2";
  EXPECT_EQ(scopes[3]["samples_per_problem"], 3);
  EXPECT_TRUE(scopes[3]["hidden"]["speed"]["tf32"]["measured"]);
  EXPECT_TRUE(scopes[3]["hidden"]["best_of_n"]["memory"]["measured"]);
  // The CSV: a header and one line per slot (the records plus the missing one).
  std::istringstream csv(kbv::read_file(dir / "report.csv").text);
  size_t lines = 0;
  for (std::string line; std::getline(csv, line);) ++lines;
  EXPECT_EQ(lines, records.size() + 2);
  std::string md = kbv::read_file(dir / "report.md").text;
  EXPECT_NE(md.find("cheat T"), std::string::npos) << "cheat classes in the verdict breakdown";
  EXPECT_NE(md.find("failed on D4"), std::string::npos);
}

// A folder `kbv generate` wrote: the leaderboard names the model and sums its tokens and cost.
TEST(ReportE2E, TheLeaderboardShowsWhatGenerateRecorded) {
  fs::path generated = kbv_fixture_run("generated-model");
  std::ofstream(generated / "level_1_problem_19_sample_0_response.json")
      << R"({"status":"ok","model":"vendor/model-x","prompt_tokens":1500,"completion_tokens":500,"cost_usd":0.25})";
  std::ofstream(generated / "level_1_problem_19_sample_1_response.json")
      << R"({"status":"ok","model":"vendor/model-x","prompt_tokens":1500,"completion_tokens":700,"cost_usd":0.5})";
  fs::path plain = kbv_fixture_run("plain-folder");
  fs::path out = temp_dir("generated-report");
  Outcome o = kbv_cmd({"report", generated.string(), plain.string(), "--out", (out / "r.md").string()});
  ASSERT_EQ(o.code, 0) << o.output;
  const std::string md = kbv::read_file(out / "r.md").text;
  EXPECT_NE(md.find("| vendor/model-x |"), std::string::npos) << md.substr(0, 3000);
  EXPECT_NE(md.find("3000 + 1200"), std::string::npos) << md.substr(0, 3000);
  EXPECT_NE(md.find("$0.75"), std::string::npos) << md.substr(0, 3000);
  EXPECT_NE(md.find("no generate records"), std::string::npos) << "the plain folder has none";
  o = kbv_cmd({"report", generated.string(), "--out", (out / "r.json").string()});
  ASSERT_EQ(o.code, 0) << o.output;
  json j = json::parse(kbv::read_file(out / "r.json").text);
  EXPECT_EQ(j["runs"][0]["generation"]["records"], 2);
  EXPECT_EQ(j["runs"][0]["generation"]["completion_tokens"], 1200);
}

bool have_chromium() { return kbv::run_command({"chromium", "--version"}, {}, std::chrono::seconds(30)).status.exited; }

// The HTML in a real browser: it renders, the plots are there, the script ran, no console message.
TEST(ReportE2E, HtmlRendersInHeadlessChromium) {
  if (!have_chromium())
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium): the HTML report was not opened in a browser";
  fs::path kbv_run = kbv_fixture_run("demo-model");
  fs::path upstream = verified_fixture_run("upstream-verified");
  fs::path html = temp_dir("html") / "report.html";
  Outcome o = kbv_cmd({"report", kbv_run.string(), upstream.string(), "--level", "1", "--baseline-file", tf32_file(),
                       "--baseline-file", fp32_file(), "--out", html.string()});
  ASSERT_EQ(o.code, 0) << o.output;
  const std::string url = "file://" + html.string();
  const std::vector<std::string> common = {
      "chromium", "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0"};

  // At a laptop's width and a wide screen's: the page's script ran, and it measured the layout
  // (the page no wider than the window, every plot at least 280 px wide).
  for (int width : {1366, 2560}) {
    SCOPED_TRACE("window width " + std::to_string(width));
    std::vector<std::string> dump = common;
    dump.insert(dump.end(), {"--window-size=" + std::to_string(width) + ",900", "--dump-dom", url});
    kbv::RunResult d = kbv::run_command(dump, {}, std::chrono::seconds(120), 8 << 20);
    ASSERT_TRUE(d.status.exited && d.status.code == 0) << d.status.describe() << d.error;
    const std::string dom = d.output;
    EXPECT_NE(dom.find("data-kbv-ready=\"ok\""), std::string::npos) << "the page's script did not finish";
    EXPECT_EQ(dom.find("id=\"kbv-error\""), std::string::npos) << dom.substr(dom.find("kbv-error"), 400);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(dom, m, std::regex("data-kbv-plots=\"(\\d+)\""))) << "plot count missing";
    EXPECT_EQ(std::stoi(m[1]), 12) << "a speedup and a memory plot per level (3 levels in the kbv run, 1 in the "
                                      "upstream one), a verdict plot per run, fast_p and the overlay";
    for (const char* id : {"speedup-0", "memory-0", "verdict-0", "speedup-1", "leaderboard", "gates", "samples-1",
                           "fast-p", "speedup-overlay"})
      EXPECT_NE(dom.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
    EXPECT_NE(dom.find("<rect"), std::string::npos) << "histogram bars";
    EXPECT_NE(dom.find("<circle"), std::string::npos) << "scatter points";
    auto attr = [&](const std::string& name) {
      std::smatch a;
      EXPECT_TRUE(std::regex_search(dom, a, std::regex(name + "=\"(\\d+)\""))) << name << " missing";
      return a.empty() ? -1 : std::stoi(a[1]);
    };
    const int scroll = attr("data-kbv-scroll-width"), client = attr("data-kbv-client-width");
    EXPECT_GT(client, width / 2) << "the window size reached the page";
    EXPECT_LE(scroll, client) << "the page scrolls sideways";
    EXPECT_EQ(attr("data-kbv-narrow-plots"), 0) << "a plot drawn narrower than 280 px";
    EXPECT_GT(attr("data-kbv-widest-plot"), 400) << "plots follow the page's width, not a fixed 300 px";
    EXPECT_LE(attr("data-kbv-widest-plot"), client);
  }

  // Console messages (errors, warnings, logs) are reported on stderr as ":CONSOLE" lines.
  // run_command merges stderr into output, so check a separate run's log file.
  for (int width : {1366, 2560}) {
    SCOPED_TRACE("screenshot " + std::to_string(width) + " px wide");
    fs::path png = html.parent_path() / ("report-" + std::to_string(width) + ".png");
    fs::path log = html.parent_path() / ("chromium-" + std::to_string(width) + ".log");
    std::vector<std::string> shot = common;
    shot.insert(shot.end(), {"--hide-scrollbars", "--window-size=" + std::to_string(width) + ",2200",
                             "--screenshot=" + png.string(), url});
    kbv::SpawnOptions so;
    so.argv = shot;
    so.log_path = log;
    so.protocol_pipes = false;
    std::string error;
    auto child = kbv::spawn(so, error);
    ASSERT_TRUE(child) << error;
    auto status = kbv::wait_for(child->pid, std::chrono::seconds(120));
    if (!status) kbv::kill_group(child->pid);
    ASSERT_TRUE(status && status->exited && status->code == 0) << kbv::tail_file(log, 4000);
    std::string chromium_log = kbv::read_file(log).text;
    EXPECT_EQ(chromium_log.find(":CONSOLE"), std::string::npos) << chromium_log;
    ASSERT_TRUE(fs::exists(png));
    EXPECT_GT(fs::file_size(png), 30000u) << "a blank page compresses to a few KB";
    std::ifstream in(png, std::ios::binary);
    char sig[8] = {};
    in.read(sig, 8);
    EXPECT_EQ(std::string(sig + 1, 3), "PNG");
  }
  // Kept for docs/: KBV_REPORT_SCREENSHOT=path copies it out.
  if (const char* keep = std::getenv("KBV_REPORT_SCREENSHOT"); keep && *keep)
    fs::copy_file(html.parent_path() / "report-1366.png", keep, fs::copy_options::overwrite_existing);
}

// One store with the fp32 and the bf16 results of the same samples (docs/PRECISION.md): one
// section per precision and a side-by-side table.
TEST(ReportE2E, Fp32AndBf16OfOneRunSideBySide) {
  fs::path dir = kbv_fixture_run("precisions");
  json records = json::parse(kbv::read_file(kData / "kbv_records.json").text);
  std::string error;
  auto store = kbv::Store::open(dir / "kbv.sqlite", error);
  ASSERT_TRUE(store) << error;
  json bf16_protocol = records[0]["protocol"];
  bf16_protocol["precision"] = "bf16";
  const std::string phash = kbv::sha256_hex(bf16_protocol.dump());
  for (auto r : records) {
    r["precision"] = "bf16";
    r["protocol"]["precision"] = "bf16";
    kbv::RecordKey key{r["level"].get<int>(), r["problem_id"].get<int>(), r["sample_id"].get<int>(),
                       r["solution_hash"].get<std::string>(), phash};
    ASSERT_EQ(store->put(key, kbv::record_from_json(r).record), "");
  }
  store.reset();
  Outcome o = kbv_cmd({"report", dir.string(), "--out", (dir / "r.json").string()});
  ASSERT_EQ(o.code, 0) << o.output;
  json r = json::parse(kbv::read_file(dir / "r.json").text);
  ASSERT_EQ(r["runs"].size(), 2u) << r.dump(1).substr(0, 2000);
  EXPECT_EQ(r["runs"][0]["precision"], "fp32");
  EXPECT_EQ(r["runs"][1]["precision"], "bf16");
  EXPECT_EQ(r["runs"][0]["scopes"].back()["records"], r["runs"][1]["scopes"].back()["records"]);
  Outcome md = kbv_cmd({"report", dir.string(), "--out", (dir / "r.md").string()});
  ASSERT_EQ(md.code, 0) << md.output;
  std::string text = kbv::read_file(dir / "r.md").text;
  EXPECT_NE(text.find("## Precisions side by side"), std::string::npos) << text.substr(0, 3000);
  EXPECT_NE(text.find("correct (bf16)"), std::string::npos);
  EXPECT_NE(text.find("[kbv bf16]"), std::string::npos);
  // --precision keeps one precision; one that is not there is an error that says so.
  Outcome only = kbv_cmd({"report", dir.string(), "--precision", "bf16", "--out", (dir / "b.json").string()});
  ASSERT_EQ(only.code, 0) << only.output;
  json b = json::parse(kbv::read_file(dir / "b.json").text);
  ASSERT_EQ(b["runs"].size(), 1u);
  EXPECT_EQ(b["runs"][0]["precision"], "bf16");
  Outcome none = kbv_cmd({"report", dir.string(), "--precision", "fp16"});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.output.find("no results of precision fp16"), std::string::npos) << none.output;
}

}  // namespace report_test
