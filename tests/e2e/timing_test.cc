// End-to-end: the timing engine in records (docs/TIMING.md). CPU tests run everywhere (steady
// clock); GPU tests skip visibly without a GPU and are for the lead to run on the H200.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "measure/measure.h"
#include "support.h"
#include "util/fs.h"
#include "util/sched.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace timing_test {

using kbv::e2e::gpu_visible;
using kbv::e2e::kSource;
using kbv::e2e::Outcome;

// The most of the speed of light an honest kernel can show: a median below 80% of the floor is
// impossible_speed (kFloorMargin, supervisor/timing_checks.cc).
constexpr double kHonestSpeedOfLightMax = 1.0 / 0.8;

// `kbv ARGS`, its record read from `json_path`; with `cache`, a build and baseline cache of its own.
Outcome kbv_run(const std::vector<std::string>& args, const fs::path& json_path = {},
                const std::string& cache = KBV_TEST_CACHE) {
  return kbv::e2e::run_kbv(args, json_path, 1500, cache);
}

fs::path scratch(const std::string& name) { return kbv::e2e::scratch_dir("timing", name); }

// model_as_candidate (support.h) written to DIR/as_candidate.py. Empty when the problem is
// unreadable or the file cannot be written.
fs::path reference_as_candidate(const fs::path& problem, const fs::path& dir) {
  const std::string source = kbv::e2e::model_as_candidate(problem);
  const fs::path solution = dir / "as_candidate.py";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (source.empty() || ec) return {};
  if (!kbv::write_file_atomic(solution, source).empty()) return {};
  return solution;
}

Outcome eval(const std::string& solution, const std::string& device, std::vector<std::string> extra = {},
             const std::string& problem = "problems/level1/19_ReLU.py", const std::string& tag = "") {
  fs::path out = scratch(fs::path(solution).stem().string() + "-" + device + tag) / "record.json";
  std::vector<std::string> args = {"eval",         "--problem",     (kSource / problem).string(),
                                   "--solution",   (kSource / solution).string(),
                                   "--device",     device,          "--trials", "2",
                                   "--json",       out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return kbv_run(args, out);
}

// A rejecting T22 timing_mismatch finding whose message holds `words`.
bool rejected_as_t22(const json& record, const std::string& words) {
  for (const auto& f : record["findings"])
    if (f["rule"] == "timing_mismatch" && f["severity"] == "reject" && f.value("cheat", "") == "T22" &&
        f["message"].get<std::string>().find(words) != std::string::npos)
      return true;
  return false;
}

void expect_stats(const json& s, const std::string& what) {
  for (const char* k : {"median_ms", "mean_ms", "std_ms", "min_ms", "max_ms", "iqr_ms", "samples", "discarded", "rse",
                        "overhead_ms"})
    EXPECT_TRUE(s.contains(k)) << what << " lacks " << k << ": " << s.dump();
  EXPECT_GT(s.value("median_ms", 0.0), 0.0) << what;
  EXPECT_GE(s.value("samples", 0), 3) << what;
  EXPECT_LE(s.value("min_ms", 0.0), s.value("median_ms", 0.0)) << what;
  EXPECT_LE(s.value("median_ms", 0.0), s.value("max_ms", 0.0)) << what;
}

TEST(Timing, CpuHonestRecordCarriesTimingFields) {
  Outcome o = eval("examples/level1/19_ReLU/cpu_honest.py", "cpu", {"--time-cap", "0.3"});
  ASSERT_EQ(o.code, 0) << o.output;
  const json& r = o.record;
  ASSERT_EQ(r["verdict"], "correct") << r.dump(1);
  ASSERT_TRUE(r.contains("timing")) << r.dump(1);
  const json& t = r["timing"];
  EXPECT_EQ(t["method"], "steady-clock");
  expect_stats(t["candidate"], "candidate");
  expect_stats(t["baselines"]["tf32"], "tf32 baseline");
  expect_stats(t["baselines"]["fp32"], "fp32 baseline");
  // Paired: the pooled medians' ratio is speedup_pooled; the speedup is the geometric mean of the
  // rounds' ratios (every round kept unless one was set aside as stalled, which the record says).
  EXPECT_NEAR(t["speedup_pooled"]["tf32"].get<double>(),
              t["baselines"]["tf32"]["median_ms"].get<double>() / t["candidate"]["median_ms"].get<double>(), 1e-9);
  bool stalled = false;
  for (const auto& f : r["findings"]) stalled = stalled || f.value("rule", "") == "timing_round_stalled";
  if (!stalled) {
    double log_sum = 0;
    for (const auto& round : t["rounds"])
      log_sum += std::log(round["baselines_ms"]["tf32"].get<double>() / round["candidate"]["median_ms"].get<double>());
    const double geomean = std::exp(log_sum / static_cast<double>(t["rounds"].size()));
    EXPECT_NEAR(t["speedup"]["tf32"].get<double>(), geomean, 1e-6 * geomean) << t["rounds"].dump();
  }
  EXPECT_TRUE(t["wall_check"]["ok"].get<bool>()) << t["wall_check"].dump();
  EXPECT_LE(t["wall_check"]["reported_sum_ms"].get<double>(), t["wall_check"]["supervisor_ms"].get<double>());
  EXPECT_GT(t["spot_checks"]["checked"].get<int>(), 0);
  EXPECT_EQ(t["spot_checks"]["failed"].get<int>(), 0);
  EXPECT_GT(t["floor_ms"].get<double>(), 0.0);
  EXPECT_GT(t["speed_of_light"].get<double>(), 0.0);
  EXPECT_LT(t["speed_of_light"].get<double>(), kHonestSpeedOfLightMax);
  EXPECT_EQ(t["bytes"].get<uint64_t>(), 2u * 16 * 4096 * 4);  // KBV_CPU: 16 x 4096 floats in, as many out
  // Fresh draws by default: the reference recomputed a secret choice of the spot-checked calls.
  EXPECT_EQ(t["inputs"], "fresh") << t.dump(1);
  EXPECT_FALSE(t.contains("input_sets"));
  EXPECT_GE(t["spot_checks"]["calls_recomputed"].get<int>(), 1) << t["spot_checks"].dump();
  EXPECT_LE(t["spot_checks"]["calls_recomputed"].get<int>(), 16) << t["spot_checks"].dump();
  EXPECT_LE(t["spot_checks"]["calls_recomputed"].get<int>(), t["spot_checks"]["calls"].get<int>());
  // Every timed call has spot entries, and every one was bounded by the supervisor's own clock.
  const int timed = t["candidate"]["samples"].get<int>() + t["candidate"]["discarded"].get<int>();
  EXPECT_EQ(t["spot_checks"]["calls"].get<int>(), timed) << t["spot_checks"].dump();
  ASSERT_TRUE(t.contains("call_bound")) << t.dump(1);
  EXPECT_EQ(t["call_bound"]["checked"].get<int>(), timed) << t["call_bound"].dump();
  EXPECT_TRUE(t["call_bound"]["ok"].get<bool>()) << t["call_bound"].dump();
  EXPECT_GT(t["call_bound"]["ping_ms"].get<double>(), 0.0) << t["call_bound"].dump();
  // And by the worker process's CPU time inside each window (the per-call CPU bound).
  ASSERT_TRUE(t["call_bound"].contains("cpu")) << t["call_bound"].dump();
  EXPECT_EQ(t["call_bound"]["cpu"]["checked"].get<int>(), timed) << t["call_bound"].dump();
  EXPECT_TRUE(t["call_bound"]["cpu"]["ok"].get<bool>()) << t["call_bound"].dump();
  EXPECT_EQ(t["call_bound"]["cpu"]["threads"].get<int>(), 1) << t["call_bound"].dump();
  // No other process of the candidate's computed meanwhile (the sandbox's own use next to nothing).
  EXPECT_TRUE(t["call_bound"]["cpu"]["beside_ok"].get<bool>()) << t["call_bound"].dump();
  EXPECT_LT(t["call_bound"]["cpu"]["beside_ms"].get<double>(), 2.0) << t["call_bound"].dump();
  EXPECT_DOUBLE_EQ(r["runtime"].get<double>(), t["candidate"]["median_ms"].get<double>());
  for (const char* k : {"mean", "std", "min", "max", "num_trials", "hardware", "device", "median"})
    EXPECT_TRUE(r["runtime_stats"].contains(k)) << k;
  // kbv's protocol keeps its median, its cache flush and its stopping rule (docs/PROTOCOLS.md).
  EXPECT_EQ(r["runtime_stats"]["statistic"], "median");
  EXPECT_GT(t["flush_bytes"].get<uint64_t>(), 0u) << t.dump(1).substr(0, 2000);
  EXPECT_NE(t["stop"], "calls");
  EXPECT_EQ(r["protocol"]["timing"]["rule"]["time_cap_s"], 0.3);
  // The launch hold is part of the protocol, but a GPU kernel: the CPU engine holds nothing.
  EXPECT_EQ(r["protocol"]["timing"]["launch_hold_us"].get<double>(), kbv::kDefaultLaunchHoldUs) << r["protocol"].dump();
  EXPECT_FALSE(t.contains("launch_hold")) << t.dump(1);
  // Where the evaluation's time went: every phase it reached, in order, adding up to its seconds.
  const json& ph = r["phase_seconds"];
  std::vector<std::string> names;
  double sum = 0;
  for (auto it = ph.begin(); it != ph.end(); ++it) {
    names.push_back(it.key());
    EXPECT_GE(it.value().get<double>(), 0.0) << it.key();
    sum += it.value().get<double>();
  }
  std::sort(names.begin(), names.end());  // nlohmann's object keeps its keys sorted
  EXPECT_EQ(names, (std::vector<std::string>{"audit", "build", "checks", "lint", "load", "memory", "timing"}))
      << ph.dump();
  EXPECT_NEAR(sum, r["seconds"].get<double>(), 0.05) << ph.dump() << " against " << r["seconds"];
  EXPECT_GT(ph["timing"].get<double>(), 0.3) << "the time cap alone is 0.3 s of the candidate's sampling";
  EXPECT_NE(o.output.find("speedup"), std::string::npos) << "the summary line shows the speedups: " << o.output;
  // Paired by default under --protocol kbv: every speedup with its interval, every round's medians.
  EXPECT_EQ(t.value("pairs", 0), kbv::kDefaultTimingPairs) << t.dump(1).substr(0, 4000);
  EXPECT_EQ(t["rounds"].size(), static_cast<size_t>(kbv::kDefaultTimingPairs));
  EXPECT_EQ(r["protocol"]["timing"]["pairs"], kbv::kDefaultTimingPairs);
  for (const char* mode : {"tf32", "fp32"}) {
    ASSERT_TRUE(t["speedup_ci95"].contains(mode)) << t.dump(1).substr(0, 4000);
    const double low = t["speedup_ci95"][mode][0].get<double>(), high = t["speedup_ci95"][mode][1].get<double>();
    EXPECT_LE(low, t["speedup"][mode].get<double>()) << mode;
    EXPECT_GE(high, t["speedup"][mode].get<double>()) << mode;
    EXPECT_EQ(t["baselines"][mode]["cached"], false) << "paired baselines are measured, never cached";
  }
  EXPECT_NE(o.output.find(" paired rounds"), std::string::npos) << o.output;
}

// Under --protocol kernelbench-verified the engine times as upstream's time_execution_with_cuda_event
// does (here the CPU's steady clock): 3 warm-ups, exactly 100 calls on the same inputs, no cache
// flush, every call kept; `runtime` is their mean and the speedups ratios of means.
TEST(Timing, VerifiedProtocolRecordsTheMeanOfAHundredUnflushedCalls) {
  Outcome o = eval("examples/level1/19_ReLU/cpu_honest.py", "cpu", {"--protocol", "kernelbench-verified"},
                   "problems/level1/19_ReLU.py", "-verified");
  ASSERT_EQ(o.code, 0) << o.output;
  const json& r = o.record;
  ASSERT_EQ(r["verdict"], "correct") << r.dump(1).substr(0, 4000);
  ASSERT_TRUE(r.contains("timing")) << r.dump(1).substr(0, 4000);
  const json& t = r["timing"];
  EXPECT_EQ(t["candidate"]["samples"], 100) << t.dump(1).substr(0, 4000);
  EXPECT_EQ(t["candidate"]["discarded"], 0);
  EXPECT_EQ(t["stop"], "calls");
  EXPECT_EQ(t["flush_bytes"], 0) << "no cache flush between calls";
  EXPECT_EQ(t["input_sets"], 1) << "the same inputs every call";
  EXPECT_FALSE(t.contains("pairs"));
  EXPECT_DOUBLE_EQ(r["runtime"].get<double>(), t["candidate"]["mean_ms"].get<double>());
  EXPECT_EQ(r["runtime_stats"]["statistic"], "mean");
  EXPECT_EQ(r["runtime_stats"]["num_trials"], 100);
  EXPECT_DOUBLE_EQ(r["runtime_stats"]["mean"].get<double>(), r["runtime"].get<double>());
  EXPECT_NE(r["runtime_stats"]["loop"].get<std::string>().find("mean of 100 calls after 3 warm-ups"),
            std::string::npos)
      << r["runtime_stats"].dump();
  EXPECT_NE(r["runtime_stats"]["loop"].get<std::string>().find("upstream's loop"), std::string::npos);
  const json& pt = r["protocol"]["timing"];
  EXPECT_EQ(pt["statistic"], "mean");
  EXPECT_EQ(pt["l2_flush"], false);
  EXPECT_EQ(pt["loop"], "upstream");
  EXPECT_EQ(pt["rule"]["calls"], 100);
  EXPECT_EQ(pt["rule"]["warmup"], 3);
  EXPECT_EQ(r["protocol"]["cast_init_inputs"], true);
  // The supervisor's checks saw every call: 3 warm-ups and 100 timed ones, each bounded.
  EXPECT_TRUE(t["wall_check"]["ok"].get<bool>()) << t["wall_check"].dump();
  EXPECT_EQ(t["call_bound"]["checked"].get<int>(), 100) << t["call_bound"].dump();
  for (const char* mode : {"tf32", "fp32"}) {
    const json& b = t["baselines"][mode];
    EXPECT_EQ(b["samples"], 100) << mode << ": the baselines are timed by the same loop";
    EXPECT_NEAR(t["speedup"][mode].get<double>(), b["mean_ms"].get<double>() / t["candidate"]["mean_ms"].get<double>(),
                1e-9)
        << mode;
  }
  EXPECT_NE(o.output.find("(mean of 100"), std::string::npos) << o.output;
}

TEST(Timing, OffLeavesTheRecordUntimed) {
  Outcome o = eval("examples/level1/19_ReLU/cpu_honest.py", "cpu", {"--timing", "off"});
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "correct");
  EXPECT_FALSE(o.record.contains("timing"));
  EXPECT_DOUBLE_EQ(o.record["runtime"].get<double>(), -1.0);
  EXPECT_EQ(o.record["protocol"]["timing"]["enabled"], false);
}

// GELU on the CPU past the static rules (--policy lenient), one trial, half a second of sampling:
// for candidates whose timing must stand on its own. One baseline: what these tests look at is the
// candidate's own timed calls, which are the same whatever baselines are timed beside them (the
// tf32 one cost a second timed side, more on a busy host).
Outcome eval_gelu_lenient(const fs::path& solution, const fs::path& out, std::vector<std::string> extra = {}) {
  fs::remove(out);
  std::vector<std::string> args = {"eval",   "--problem", (kSource / "problems/level1/26_GELU_.py").string(),
                                   "--solution", solution.string(), "--device", "cpu", "--trials", "1",
                                   "--policy", "lenient", "--time-cap", "0.5", "--baselines", "fp32",
                                   "--json", out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return kbv_run(args, out);
}

// A cache keyed on the input's content (cheat T5, as examples/level1/26_GELU_/cpu_cache_content.py)
// whose misses cost at least 20 ms: with fresh draws no timed call can hit it, so even its fastest
// call takes 20 ms; cycling through two input sets, every timed call hits. The static rule and the
// runtime audit (whose repeated calls hit) reject it first; --policy lenient and --protocol
// kernelbench let it reach the timing, which must stand on its own.
TEST(Timing, FreshDrawsLeaveAContentCacheNothingToHit) {
  fs::path dir = scratch("content-cache");
  std::string src = kbv::read_file(kSource / "examples/level1/26_GELU_/cpu_cache_content.py").text;
  ASSERT_NE(src.find("import hashlib\n"), std::string::npos);
  ASSERT_NE(src.find("        out = gelu_ext.gelu_cpu(x)\n"), std::string::npos);
  src.replace(src.find("import hashlib\n"), 15, "import hashlib\nimport time\n");
  src.replace(src.find("        out = gelu_ext.gelu_cpu(x)\n"), 35,
              "        time.sleep(0.02)  # a miss: the costly work\n        out = gelu_ext.gelu_cpu(x)\n");
  fs::path sol = dir / "cpu_cache_content_slow_miss.py";
  ASSERT_TRUE(kbv::write_file_atomic(sol, src).empty());
  auto run = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), {"--protocol", "kernelbench"});
    return eval_gelu_lenient(sol, dir / "record.json", extra);
  };
  Outcome fresh = run({});
  ASSERT_EQ(fresh.code, 0) << fresh.output;
  ASSERT_EQ(fresh.record["verdict"], "correct") << fresh.record.dump(1);
  const json& ft = fresh.record["timing"];
  EXPECT_EQ(ft["inputs"], "fresh");
  EXPECT_GE(ft["candidate"]["min_ms"].get<double>(), 20.0) << "a timed call hit the content cache: " << ft.dump(1);
  EXPECT_EQ(ft["spot_checks"]["failed"].get<int>(), 0) << ft["spot_checks"].dump();

  Outcome sets = run({"--timing-inputs", "sets", "--timing-sets", "2"});
  ASSERT_EQ(sets.code, 0) << sets.output;
  ASSERT_EQ(sets.record["verdict"], "correct") << sets.record.dump(1);
  const json& st = sets.record["timing"];
  EXPECT_EQ(st["input_sets"], 2) << st.dump(1);
  EXPECT_LT(st["candidate"]["median_ms"].get<double>(), 10.0) << "two cycled sets: the cache answers " << st.dump(1);
}

// A candidate that patched torch.rand to compute each drawn input's answer before the call
// (examples/level1/26_GELU_/cpu_draw_hook.py; its misses sleep 20 ms). The static rule rejects it;
// past the rule (--policy lenient) the timing draws must still never reach its hook: the reference
// makes them, so every timed call misses. When the candidate's worker made its own draws with the
// problem's get_inputs(), every timed call hit (fastest call about 1 ms).
TEST(Timing, DrawsAreMadeOutOfTheCandidatesReach) {
  fs::path dir = scratch("draw-hook");
  Outcome o = eval_gelu_lenient(kSource / "examples/level1/26_GELU_/cpu_draw_hook.py", dir / "record.json");
  ASSERT_EQ(o.code, 0) << o.output;
  ASSERT_EQ(o.record["verdict"], "correct") << o.record.dump(1);
  const json& t = o.record["timing"];
  EXPECT_EQ(t["inputs"], "fresh");
  EXPECT_GE(t["candidate"]["min_ms"].get<double>(), 20.0) << "a timed call found its answer ready: " << t.dump(1);
  // Paired rounds: 3 warm-up calls in the first candidate block, 1 in each later one (block_rule).
  const int warmups = t.contains("pairs") ? 3 + (t["pairs"].get<int>() - 1) : 3;
  EXPECT_EQ(t["draws"].get<int>(), warmups + t["candidate"]["samples"].get<int>())
      << "one draw per warm-up and timed call";
  EXPECT_EQ(t["spot_checks"]["failed"].get<int>(), 0) << t["spot_checks"].dump();
  bool warned = false;
  for (const auto& f : o.record["findings"]) warned = warned || f["rule"] == "patch_harness";
  EXPECT_TRUE(warned) << o.record["findings"].dump(1);
}

// The honest CPU GELU, plus one write of `message` (a Python dict literal) on its worker's reply
// channel (fd 4, open in its process) from inside the timing: the first time four calls in a row
// run on the same buffer with new values in [0, 1) each (the four checks of --trials 1 scale theirs
// by x3, x0.01 and x-1; the audit repeats values). Written to dir/name; its path, or empty.
fs::path gelu_writing_on_its_channel(const fs::path& dir, const std::string& name, const std::string& message) {
  std::string src = kbv::read_file(kSource / "examples/level1/26_GELU_/cpu_honest.py").text;
  const std::string forward = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n";
  if (src.find(forward) == std::string::npos) return {};
  src.replace(src.find(forward), forward.size(),
              forward +
                  "        _calls.append((x.data_ptr(), float(x.reshape(-1)[0])))\n"
                  "        last = _calls[-4:]\n"
                  "        if (len(last) == 4 and len({p for p, _ in last}) == 1 and len({v for _, v in last}) == 4\n"
                  "                and all(0 <= v < 1 for _, v in last) and not _sent):\n"
                  "            _sent.append(1)\n"
                  "            b = json.dumps(" + message + ").encode()\n"
                  "            os.write(4, struct.pack('<I', len(b)) + b)\n");
  src = "import json\nimport os\nimport struct\n_calls = []\n_sent = []\n" + src;
  fs::path sol = dir / name;
  return kbv::write_file_atomic(sol, src).empty() ? sol : fs::path();
}

// A candidate that asks for a draw out of order, e.g. to see the next call's inputs early: a
// forged channel (T14).
TEST(Timing, AnAskForADrawOutOfOrderIsAForgedChannel) {
  fs::path dir = scratch("forged-draw");
  fs::path sol = gelu_writing_on_its_channel(dir, "cpu_forged_draw.py", "{'op': 'draw', 'index': 999}");
  ASSERT_FALSE(sol.empty());
  Outcome o = eval_gelu_lenient(sol, dir / "record.json");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "rejected") << o.record.dump(1);
  bool found = false;
  for (const auto& f : o.record["findings"])
    found = found || (f["rule"] == "timing_mismatch" && f["cheat"] == "T14" &&
                      f["message"].get<std::string>().find("\"index\":999") != std::string::npos);
  EXPECT_TRUE(found) << o.record["findings"].dump(1);
}

// A candidate that writes a reply of its own during a timed call: the supervisor takes it as the
// timing reply, and its malformed content (a string where the timer's overhead should be a number)
// is a forged channel (T14), rejected, not a crash.
TEST(Timing, AMalformedTimingReplyIsAForgedChannel) {
  fs::path dir = scratch("forged-reply");
  fs::path sol = gelu_writing_on_its_channel(dir, "cpu_forged_reply.py",
                                             "{'ok': True, 'samples_ms': [0.001], 'overhead_ms': 'forged'}");
  ASSERT_FALSE(sol.empty());
  Outcome o = eval_gelu_lenient(sol, dir / "record.json");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "rejected") << o.record.dump(1);
  EXPECT_EQ(o.record["correctness"], false);
  EXPECT_NE(o.record["message"].get<std::string>().find("timing reply is malformed"), std::string::npos)
      << o.record["message"];
  bool found = false;
  for (const auto& f : o.record["findings"])
    found = found || (f["rule"] == "timing_mismatch" && f["cheat"] == "T14" && f["severity"] == "reject");
  EXPECT_TRUE(found) << o.record["findings"].dump(1);
}

TEST(Timing, PointerCacheFailsTheSpotCheck) {
  Outcome o = eval("examples/level1/19_ReLU/cpu_pointer_cache.py", "cpu", {"--time-cap", "0.3", "--policy", "lenient"});
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "rejected") << o.record.dump(1);
  // The runtime audit's same-storage call (stale_output) catches it before timing; when it is
  // timed, the spot checks must.
  bool found = false;
  for (const auto& f : o.record["findings"])
    found = found || f["rule"] == "spot_check_failed" || f["rule"] == "stale_output";
  EXPECT_TRUE(found) << o.record["findings"].dump(1);
  if (o.record.contains("timing")) {
    EXPECT_GT(o.record["timing"]["spot_checks"]["failed"].get<int>(), 0);
  }
}

// For the kbv processes a test starts: baselines are cached whatever else the CI machine runs
// meanwhile, for tests that check what is cached rather than the busy-host rule (a baseline timed
// beside busy cores is not cached: ABusyHostIsSaidAndItsBaselinesAreNotCached).
struct CachedWhateverTheLoad {
  CachedWhateverTheLoad() { setenv("KBV_HOST_BUSY_CORES", "1000", 1); }
  ~CachedWhateverTheLoad() { unsetenv("KBV_HOST_BUSY_CORES"); }
  CachedWhateverTheLoad(const CachedWhateverTheLoad&) = delete;
  CachedWhateverTheLoad& operator=(const CachedWhateverTheLoad&) = delete;
};

// T17: a candidate that leaves a process running from import would compete with the baseline's
// timing (and the cached baseline would carry it). Its process writes a heartbeat (the wall clock)
// every few milliseconds until killed; the candidate's worker and its process group must be gone
// before the baseline is timed, so the last heartbeat comes before the baseline file is written.
// With own_session the process leaves the worker's group and session (setsid), out of reach of a
// group kill: kbv adopts it as its subreaper, kills it and says so (process_left_running).
void baseline_timed_after_the_candidate(const std::string& name, bool own_session) {
  fs::path dir = scratch(name);
  const fs::path beat = dir / "heartbeat";
  const std::string problem = (kSource / "problems/level1/19_ReLU.py").string();
  std::string src = kbv::read_file(problem).text;
  src += "\n\nimport subprocess\n"
         "_beat = subprocess.Popen(['sh', '-c', 'while :; do date +%s.%N > " + beat.string() + ".tmp && mv -f " +
         beat.string() + ".tmp " + beat.string() + "; sleep 0.002; done']" +
         (own_session ? ", start_new_session=True" : "") + ")\n\n\n"
         "class ModelNew(Model):\n    pass\n";
  const fs::path sol = dir / "relu_with_a_heartbeat.py";
  ASSERT_TRUE(kbv::write_file_atomic(sol, src).empty());
  const fs::path cache = dir / "cache", out = dir / "record.json";
  CachedWhateverTheLoad cached_whatever_the_load;  // the baseline file's time is the evidence
  // --sandbox off: the heartbeat is a file outside any sandbox's scratch, and the subject here is the
  // process-group and subreaper kill. Under the sandbox the worker's PID namespace ends with it
  // and takes such processes along (DESIGN.md, "Sandbox").
  Outcome o = kbv_run({"eval", "--problem", problem, "--solution", sol.string(), "--device", "cpu", "--trials", "1",
                       "--protocol", "kernelbench", "--policy", "lenient", "--baselines", "fp32", "--time-cap",
                       "0.3", "--sandbox", "off", "--json", out.string()},
                      out, cache.string());
  ASSERT_EQ(o.record["verdict"], "correct") << o.output;
  // --protocol kernelbench: unpaired, the interval from the two sample sets apart.
  EXPECT_FALSE(o.record["timing"].contains("pairs")) << o.record["timing"].dump(1).substr(0, 4000);
  EXPECT_TRUE(o.record["timing"].contains("speedup_ci95")) << o.record["timing"].dump(1).substr(0, 4000);
  ASSERT_EQ(o.record["timing"]["baselines"]["fp32"]["cached"], false) << [&] {  // the record less its per-distribution checks, for a failure's cause
    json r = o.record;
    r.erase("distributions");
    return r.dump(1).substr(0, 8000);
  }();
  std::vector<fs::path> baselines;
  for (const auto& e : fs::directory_iterator(cache / "baselines")) baselines.push_back(e.path());
  ASSERT_EQ(baselines.size(), 1u);
  struct stat st {};
  ASSERT_EQ(::stat(baselines[0].c_str(), &st), 0);
  const double written = static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
  const std::string last = kbv::read_file(beat).text;
  ASSERT_FALSE(last.empty()) << "the candidate's process never wrote its heartbeat: " << o.output;
  const double gap_s = written - std::stod(last);
  EXPECT_GT(gap_s, 0.0) << "the candidate's process wrote its last heartbeat " << -gap_s << " s after the baseline "
                        << baselines[0] << " was written: it was running while the baseline was timed";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(kbv::read_file(beat).text, last) << "the candidate's process outlived the evaluation";
  int said = 0;
  for (const auto& f : o.record["findings"])
    if (f.value("rule", "") == "process_left_running") {
      ++said;
      EXPECT_EQ(f["severity"], "warn");
      EXPECT_EQ(f["cheat"], "T17");
      EXPECT_NE(f.value("message", "").find("while :; do date"), std::string::npos) << f.dump();
    }
  EXPECT_EQ(said, own_session ? 1 : 0) << "a process left in the worker's group goes with the group, unreported; "
                                          "one that left the group is said: "
                                       << o.record["findings"].dump(1);
}

TEST(Timing, TheBaselineIsTimedAfterTheCandidateIsGone) { baseline_timed_after_the_candidate("baseline-alone", false); }

TEST(Timing, AProcessThatLeftTheGroupIsKilledBeforeTheBaseline) {
  baseline_timed_after_the_candidate("baseline-alone-setsid", true);
}

// Paired rounds keep the candidate's worker alive between its blocks; while a baseline block runs
// it and everything it started are stopped (T17). The candidate's process (in a session of its own)
// appends the wall clock to a file every few milliseconds: no beat may fall inside a baseline
// block, and beats do fall inside the candidate's blocks (it was continued after each).
TEST(Timing, PairedRoundsStopTheCandidateWhileABaselineIsTimed) {
  fs::path dir = scratch("paired-freeze");
  const fs::path beats = dir / "beats";
  const std::string problem = (kSource / "problems/level1/19_ReLU.py").string();
  const std::string src = kbv::read_file(problem).text +
                          "\n\nimport subprocess\n"
                          "_beat = subprocess.Popen(['sh', '-c', 'while :; do date +%s.%N >> " +
                          beats.string() + "; sleep 0.002; done'], start_new_session=True)\n\n\n"
                          "class ModelNew(Model):\n    pass\n";
  const fs::path sol = dir / "relu_with_a_heartbeat.py", out = dir / "record.json";
  ASSERT_TRUE(kbv::write_file_atomic(sol, src).empty());
  Outcome o = kbv_run({"eval", "--problem", problem, "--solution", sol.string(), "--device", "cpu", "--trials", "1",
                       "--protocol", "kernelbench", "--policy", "lenient", "--baselines", "fp32", "--time-cap", "0.6",
                       "--timing-pairs", "4", "--sandbox", "off", "--json", out.string()},
                      out, (dir / "cache").string());
  ASSERT_EQ(o.record["verdict"], "correct") << o.output;
  const json& t = o.record["timing"];
  ASSERT_EQ(t.value("pairs", 0), 4) << t.dump(1).substr(0, 4000);
  ASSERT_EQ(t["rounds"].size(), 4u);
  EXPECT_EQ(t["baselines"]["fp32"]["cached"], false) << "paired baselines are measured";
  std::vector<std::pair<double, double>> base, cand;
  for (const auto& round : t["rounds"])
    for (const auto& b : round["blocks"]) {
      const std::pair<double, double> w{b["start_s"].get<double>(), b["end_s"].get<double>()};
      if (b["side"] == "candidate") {
        cand.push_back(w);
      } else {
        base.push_back(w);
        EXPECT_GE(b.value("frozen", 0), 2) << "the worker and the heartbeat's shell at least: " << b.dump();
      }
    }
  ASSERT_EQ(base.size(), 4u);
  ASSERT_EQ(cand.size(), 4u);
  EXPECT_LT(base[0].second, cand[0].first) << "round 0: baselines first";
  EXPECT_LT(cand[1].second, base[1].first) << "round 1: the candidate first";
  std::istringstream lines(kbv::read_file(beats).text);
  int in_base = 0, in_cand = 0, total = 0;
  std::string worst;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const double at = std::stod(line);
    ++total;
    for (const auto& [a, b] : base)
      if (at > a && at < b) {
        ++in_base;
        worst = fmt::format("a beat at {:.4f} inside a baseline block [{:.4f}, {:.4f}]", at, a, b);
      }
    for (const auto& [a, b] : cand)
      if (at > a && at < b) ++in_cand;
  }
  EXPECT_EQ(in_base, 0) << worst;
  EXPECT_GT(in_cand, 0) << "the candidate's process ran again in its own blocks (" << total << " beats)";
  ASSERT_TRUE(t.contains("speedup_ci95")) << t.dump(1).substr(0, 4000);
  EXPECT_LE(t["speedup_ci95"]["fp32"][0].get<double>(), t["speedup_ci95"]["fp32"][1].get<double>());
}

// Two identical kernels (the candidate's C++ wrapper returns at::relu, the reference's own op):
// the paired interval contains 1 and the terminal says there is no measurable difference.
TEST(Timing, IdenticalKernelsShowNoMeasurableDifference) {
  fs::path out = scratch("paired-identical") / "record.json";
  Outcome o = kbv_run({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                       (kSource / "examples/level1/19_ReLU/cpu_aten_in_wrapper.py").string(), "--device", "cpu",
                       "--trials", "1", "--protocol", "kernelbench", "--policy", "lenient", "--baselines", "fp32",
                       "--time-cap", "1", "--timing-pairs", "6", "--json", out.string()},
                      out);
  ASSERT_EQ(o.code, 0) << o.output;
  ASSERT_EQ(o.record["verdict"], "correct") << o.record["findings"].dump(1);
  const json& t = o.record["timing"];
  EXPECT_EQ(t.value("pairs", 0), 6);
  ASSERT_TRUE(t.contains("speedup_ci95")) << t.dump(1).substr(0, 4000);
  const double low = t["speedup_ci95"]["fp32"][0].get<double>(), high = t["speedup_ci95"]["fp32"][1].get<double>();
  // Every round's medians are in the record, for audit.
  ASSERT_EQ(t["rounds"].size(), 6u);
  for (const auto& round : t["rounds"]) {
    EXPECT_GT(round["candidate"]["median_ms"].get<double>(), 0.0) << round.dump();
    EXPECT_GT(round["baselines_ms"]["fp32"].get<double>(), 0.0) << round.dump();
    // The baseline's blocks ran in the twin, a candidate-kind worker (docs/TIMING.md "The baselines' twin").
    for (const auto& b : round["blocks"])
      if (b["side"] != "candidate") {
        EXPECT_EQ(b.value("worker", ""), "twin") << b.dump();
      }
  }
  EXPECT_EQ(t["baselines"]["fp32"].value("worker", ""), "twin") << t["baselines"].dump();
  EXPECT_FALSE(t.contains("baseline_twin_error")) << t["baseline_twin_error"];
  // With the baseline in the twin, the same kind of process as the candidate, the 0.7-0.8x that identical
  // kernels got when the reference timed the baseline (docs/results/2026-12-06-cpu-aa-bias.md) is gone
  // (docs/results/2026-12-07-baseline-twin.md), and with it this test's quarantine of that gap.
  EXPECT_LE(low, 1.0) << "speedup " << t["speedup"].dump() << " [" << low << ", " << high << "]";
  EXPECT_GE(high, 1.0) << "speedup " << t["speedup"].dump() << " [" << low << ", " << high << "]";
  EXPECT_NE(o.output.find("(no measurable difference)"), std::string::npos) << o.output;
}

// The other side of the line: a candidate that is the reference's own op behind a 50 ms sleep is
// many times slower than the baseline on any host, and its interval lies wholly below 1.
TEST(Timing, AClearDifferenceExcludesOne) {
  fs::path dir = scratch("paired-slower");
  const std::string problem = (kSource / "problems/level1/19_ReLU.py").string();
  const std::string src = kbv::read_file(problem).text +
                          "\n\nimport time\n\n\nclass ModelNew(Model):\n"
                          "    def forward(self, x):\n        time.sleep(0.05)\n        return torch.relu(x)\n";
  const fs::path sol = dir / "relu_after_a_nap.py", out = dir / "record.json";
  ASSERT_TRUE(kbv::write_file_atomic(sol, src).empty());
  Outcome o = kbv_run({"eval", "--problem", problem, "--solution", sol.string(), "--device", "cpu", "--trials", "1",
                       "--protocol", "kernelbench", "--policy", "lenient", "--baselines", "fp32", "--time-cap", "0.4",
                       "--timing-pairs", "4", "--baseline-worker", "reference", "--json", out.string()},
                      out);
  ASSERT_EQ(o.code, 0) << o.output;
  ASSERT_EQ(o.record["verdict"], "correct") << o.record["findings"].dump(1);
  const json& t = o.record["timing"];
  ASSERT_TRUE(t.contains("speedup_ci95")) << t.dump(1).substr(0, 4000);
  // Timed by the reference worker, as asked (the other side of the twin: IdenticalKernels...).
  EXPECT_EQ(t["baselines"]["fp32"].value("worker", ""), "reference") << t["baselines"].dump();
  EXPECT_EQ(o.record["protocol"]["timing"].value("baseline_worker", ""), "reference") << o.record["protocol"].dump();
  EXPECT_LT(t["speedup_ci95"]["fp32"][1].get<double>(), 1.0) << t["speedup"] << " " << t["speedup_ci95"];
  EXPECT_EQ(o.output.find("no measurable difference"), std::string::npos) << o.output;
}

// T17 under paired timing: cpu_spin_between_calls spins one thread per core whenever its own
// calls have stopped, i.e. while the baselines are timed beside its live worker. Frozen during
// those blocks, it gets the speedup of the same C++ loop without the spinners (cpu_honest).
TEST(Timing, ASpinnerBetweenCallsDoesNotInflate) {
  // --policy lenient: the static threads rule (T2) would reject the spinner before it runs; the
  // runtime defence is the subject here.
  const std::vector<std::string> flags = {"--baselines", "fp32", "--time-cap", "1", "--policy", "lenient"};
  Outcome honest = eval("examples/level1/19_ReLU/cpu_honest.py", "cpu", flags);
  Outcome spinner = eval("examples/level1/19_ReLU/cpu_spin_between_calls.py", "cpu", flags);
  ASSERT_EQ(honest.record["verdict"], "correct") << honest.output;
  ASSERT_EQ(spinner.record["verdict"], "correct") << spinner.output;
  const json &h = honest.record["timing"], &sp = spinner.record["timing"];
  ASSERT_EQ(sp.value("pairs", 0), kbv::kDefaultTimingPairs) << "paired by default under --protocol kbv";
  const double hs = h["speedup"]["fp32"].get<double>(), ss = sp["speedup"]["fp32"].get<double>();
  const double h_high = h["speedup_ci95"]["fp32"][1].get<double>(), s_low = sp["speedup_ci95"]["fp32"][0].get<double>();
  // Unfrozen, the spinners take every core during the baseline blocks: the baseline runs several
  // times slower (docs/TIMING.md, "Paired rounds", measured). Frozen, the two agree within noise.
  EXPECT_LT(s_low, 1.5 * h_high) << "spinner " << ss << "x " << sp["speedup_ci95"].dump() << " against honest " << hs
                                 << "x " << h["speedup_ci95"].dump();
}

TEST(Timing, BaselineCommandPrecomputesExportsAndImports) {
  fs::path root = scratch("baseline");
  fs::create_directories(root / "data" / "level1");
  fs::copy_file(kSource / "problems/level1/19_ReLU.py", root / "data/level1/19_ReLU.py");
  std::string cache = (root / "cache").string();
  std::vector<std::string> common = {"--problems", (root / "data").string(), "--device", "cpu", "--time-cap", "0.2"};
  CachedWhateverTheLoad cached_whatever_the_load;
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = {"baseline"};
    a.insert(a.end(), common.begin(), common.end());
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  Outcome first = kbv_run(with({}), {}, cache);
  ASSERT_EQ(first.code, 0) << first.output;
  EXPECT_NE(first.output.find("2 measured"), std::string::npos) << first.output;
  Outcome again = kbv_run(with({}), {}, cache);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("0 measured, 2 cached"), std::string::npos) << again.output;

  fs::path exported = root / "baseline.json";
  Outcome ex = kbv_run(with({"--export", exported.string()}), {}, cache);
  ASSERT_EQ(ex.code, 0) << ex.output;
  json j = json::parse(kbv::read_file(exported).text, nullptr, false);
  ASSERT_TRUE(j.contains("level1") && j["level1"].contains("19_ReLU.py")) << j.dump();
  const json& e = j["level1"]["19_ReLU.py"];
  for (const char* k : {"mean", "std", "min", "max", "num_trials", "hardware", "device"})
    EXPECT_TRUE(e.contains(k)) << k;
  EXPECT_EQ(e["hardware"], "cpu");

  // Into an empty cache, then out again: the same numbers.
  std::string other = (root / "cache2").string();
  Outcome im = kbv_run(with({"--import", exported.string()}), {}, other);
  ASSERT_EQ(im.code, 0) << im.output;
  fs::path round = root / "round.json";
  Outcome ex2 = kbv_run(with({"--export", round.string()}), {}, other);
  ASSERT_EQ(ex2.code, 0) << ex2.output;
  json k = json::parse(kbv::read_file(round).text, nullptr, false);
  EXPECT_DOUBLE_EQ(k["level1"]["19_ReLU.py"]["mean"].get<double>(), e["mean"].get<double>());

  // Another device's numbers are not filed as this one's.
  j["level1"]["19_ReLU.py"]["hardware"] = "NVIDIA H200";
  ASSERT_TRUE(kbv::write_file_atomic(root / "h200.json", j.dump()).empty());
  Outcome wrong = kbv_run(with({"--import", (root / "h200.json").string()}), {}, (root / "cache3").string());
  EXPECT_EQ(wrong.code, 1) << wrong.output;
  EXPECT_NE(wrong.output.find("measured on NVIDIA H200"), std::string::npos) << wrong.output;

  // Nothing cached: an error, and no `{}` over a good file (issue 29).
  Outcome none = kbv_run(with({"--export", round.string()}), {}, (root / "cache4").string());
  EXPECT_NE(none.code, 0) << none.output;
  EXPECT_NE(none.output.find("nothing was written"), std::string::npos) << none.output;
  json kept = json::parse(kbv::read_file(round).text, nullptr, false);
  EXPECT_TRUE(kept.contains("level1")) << "an empty export replaced a good file: " << kept.dump();
}

// T20: the cached baseline and device calibration are sealed by the supervisor (src/store/sealed.h).
// Whatever else writes them (a candidate without the sandbox, an old kbv, a hand) is refused: the
// figures are measured again and the record says so, so a forged 1000x slower baseline or an
// impossible bandwidth never reaches a speedup or the physical floor.
TEST(Timing, AForgedCacheEntryIsRefusedAndMeasuredAgain) {
  fs::path root = scratch("sealed-cache");
  fs::remove_all(root);
  const std::string cache = (root / "cache").string();
  CachedWhateverTheLoad cached_whatever_the_load;
  // The reference as its own candidate (--policy lenient): nothing to build. The subject is the
  // baseline and calibration files of this test's own cache, where a C++ candidate was compiled
  // anew each run, without the tests' precompiled header (~20 CPU s).
  const std::string problem = (kSource / "problems/level1/19_ReLU.py").string();
  const fs::path solution = reference_as_candidate(problem, root);
  ASSERT_FALSE(solution.empty());
  // Under the upstream protocol: on a busy host (ctest runs two tests at once) the kbv protocol may
  // find the per-call bound unjudgeable and end the timing before the baselines (CI, 2026-12-06),
  // where this test is about what the baselines read from the cache.
  auto run = [&](const std::string& name) {
    fs::path out = root / (name + ".json");
    return kbv_run({"eval", "--problem", problem, "--solution", solution.string(), "--device", "cpu", "--trials", "1",
                    "--policy", "lenient", "--protocol", "kernelbench", "--baselines", "fp32", "--time-cap", "0.2",
                    "--timing-pairs", "0",  // unpaired: cached baselines
                    "--json", out.string()},
                   out, cache);
  };
  Outcome first = run("first");
  ASSERT_EQ(first.code, 0) << first.output;
  ASSERT_EQ(first.record["verdict"], "correct") << first.record.dump(1);
  const double honest_ms = first.record["timing"]["baselines"]["fp32"]["median_ms"].get<double>();
  const double honest_bw = first.record["timing"]["bandwidth_bytes_per_s"].get<double>();

  // The forgery: the seal kept, the figures changed; one baseline and the calibration.
  int forged = 0;
  for (const char* folder : {"baselines", "calibration"})
    for (const auto& f : fs::directory_iterator(fs::path(cache) / folder)) {
      json j = json::parse(kbv::read_file(f.path()).text, nullptr, false);
      ASSERT_TRUE(j.is_object() && j.contains("seal")) << f.path() << " is not sealed";
      if (j.contains("stats")) j["stats"]["median_ms"] = 1000 * honest_ms;
      if (j.contains("bandwidth_bytes_per_s")) j["bandwidth_bytes_per_s"] = 1e18;
      ASSERT_TRUE(kbv::write_file_atomic(f.path(), j.dump()).empty());
      ++forged;
    }
  ASSERT_EQ(forged, 2);

  Outcome second = run("second");
  ASSERT_EQ(second.code, 0) << second.output;
  const json& t = second.record["timing"];
  ASSERT_TRUE(t.contains("baselines") && t["baselines"].contains("fp32")) << t.dump(1);
  EXPECT_FALSE(t["baselines"]["fp32"]["cached"].get<bool>()) << t.dump(1);
  EXPECT_LT(t["baselines"]["fp32"]["median_ms"].get<double>(), 100 * honest_ms) << "the forged baseline was used";
  EXPECT_LT(t["bandwidth_bytes_per_s"].get<double>(), 100 * honest_bw) << "the forged calibration was used";
  std::string message;
  for (const auto& f : second.record["findings"])
    if (f["rule"] == "cache_entry_refused") message = f["message"];
  EXPECT_NE(message.find("the fp32 baseline"), std::string::npos) << second.record["findings"].dump(1);
  EXPECT_NE(message.find("the device calibration"), std::string::npos) << message;
  EXPECT_NE(message.find("does not match"), std::string::npos) << message;

  // Measured again and sealed again: the third run uses the cache, with nothing to say.
  Outcome third = run("third");
  ASSERT_EQ(third.code, 0) << third.output;
  EXPECT_TRUE(third.record["timing"]["baselines"]["fp32"]["cached"].get<bool>());
  for (const auto& f : third.record["findings"]) EXPECT_NE(f["rule"], "cache_entry_refused") << f.dump();
}

// ---- GPU (the lead runs these on the H200) ----

TEST(TimingGpu, SideStreamWorkIsInsideTheTime) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU: the side-stream candidate is CUDA";
  // Under the default launch hold: the side stream's work can run beside the hold, and a sample
  // whose clocks disagree counts from the call's entry, so it is still counted whole.
  Outcome honest = eval("examples/level1/19_ReLU/cuda_honest.py", "cuda");
  Outcome side = eval("examples/level1/19_ReLU/cuda_side_stream.py", "cuda", {"--policy", "lenient"});
  ASSERT_EQ(honest.record["verdict"], "correct") << honest.output;
  ASSERT_EQ(side.record["verdict"], "correct") << side.output;
  double h = honest.record["timing"]["candidate"]["median_ms"].get<double>();
  double s = side.record["timing"]["candidate"]["median_ms"].get<double>();
  EXPECT_GE(s, 0.95 * h) << "side stream " << s << " ms, same kernel on the calling stream " << h << " ms";
  EXPECT_GT(side.record["timing"]["events_host_disagreed"].get<int>(), 0);
}

TEST(TimingGpu, SkipLargeIsCaughtAtDefaultTrials) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU: cuda_skip_large is CUDA";
  fs::path out = scratch("skip_large") / "record.json";
  Outcome o = kbv_run({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                       (kSource / "examples/level1/19_ReLU/cuda_skip_large.py").string(), "--device", "cuda",
                       "--json", out.string()},
                      out);
  EXPECT_EQ(o.record["verdict"], "rejected") << o.record.dump(1);
}

TEST(TimingGpu, L2FlushMakesACachedInputSlower) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU: the L2 flush is a GPU matter";
  // 4096 dependent loads over a 16 MiB input that fits in L2: after the flush each is a DRAM
  // latency, without it (--flush-bytes 1) the input copied in just before the call is still in
  // L2. A 4 MiB ReLU (the earlier form of this test) took 24-31 us, all of it host launch
  // latency, and its flushed and hot medians came out in either order.
  fs::path dir = scratch("l2");
  std::string problem = (kSource / "bench/problems/level1/2_Dependent_loads.py").string();
  std::string sol = (kSource / "tests/data/cuda_dependent_loads.py").string();
  auto timed = [&](std::vector<std::string> extra) {
    fs::path out = dir / "r.json";
    std::vector<std::string> args = {"eval", "--problem", problem, "--solution", sol, "--device", "cuda",
                                     "--trials", "1", "--json", out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    Outcome o = kbv_run(args, out);
    EXPECT_EQ(o.record["verdict"], "correct") << o.output;
    return o.record["timing"]["candidate"]["median_ms"].get<double>();
  };
  double flushed = timed({});
  double hot = timed({"--flush-bytes", "1"});
  EXPECT_GT(flushed, 1.2 * hot) << "flushed " << flushed << " ms, cache-hot " << hot << " ms";
}

TEST(TimingGpu, HonestRecordUsesEventsAndClock) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU";
  Outcome o = eval("examples/level1/19_ReLU/cuda_honest.py", "cuda");
  ASSERT_EQ(o.record["verdict"], "correct") << o.output;
  const json& t = o.record["timing"];
  EXPECT_EQ(t["method"], "cuda-events+host-sync");
  EXPECT_EQ(t["clock"]["source"], "nvml") << "libnvidia-ml.so.1 should be found on a GPU machine";
  EXPECT_GT(t["flush_bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(t["speed_of_light"].get<double>(), 0.0);
  // An honest kernel may beat the measured copy a little (docs/TIMING.md "Physical floor": an H100
  // ran this one at 1.14 of cudaMemcpyAsync's 2.6 TB/s), never by the impossible_speed margin.
  EXPECT_LT(t["speed_of_light"].get<double>(), kHonestSpeedOfLightMax);
  EXPECT_EQ(t["spot_checks"]["failed"].get<int>(), 0);
  // The diagnostics of the candidate-vs-baseline gap (docs/TIMING.md): the host's share of the
  // interval and the memory clock.
  const double host_call = t["candidate"]["host_call_ms"].get<double>();
  EXPECT_GT(host_call, 0.0);
  EXPECT_LT(host_call, t["candidate"]["max_ms"].get<double>() + 1.0) << "the host's launch, not the interval";
  EXPECT_GT(t["clock"]["mem_mhz_max"].get<double>(), 0.0) << t["clock"].dump();
}

TEST(TimingGpu, LaunchHoldIsTheDefaultAndCanBeTurnedOff) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU: the hold is a sleep kernel on the calling stream";
  // By default the GPU is held 500 us before the start event, so the call's launch is queued when
  // the interval begins (the side stream under the hold: SideStreamWorkIsInsideTheTime).
  Outcome held = eval("examples/level1/19_ReLU/cuda_honest.py", "cuda");
  ASSERT_EQ(held.record["verdict"], "correct") << held.output;
  const json& t = held.record["timing"];
  Outcome unheld = eval("examples/level1/19_ReLU/cuda_honest.py", "cuda", {"--launch-hold-us", "0"});
  ASSERT_EQ(unheld.record["verdict"], "correct") << unheld.output;
  ASSERT_TRUE(t.contains("launch_hold")) << t.dump(1);
  EXPECT_EQ(t["launch_hold"]["us"].get<double>(), kbv::kDefaultLaunchHoldUs) << t["launch_hold"].dump();
  // On the H200 the held time is the hold plus 3-6% (200 us: 0.215-0.232 ms; 500 us: 0.517-0.529 ms).
  const double hold_ms = t["launch_hold"]["held_ms"].get<double>(), want_ms = kbv::kDefaultLaunchHoldUs / 1000;
  EXPECT_GT(hold_ms, 0.75 * want_ms) << "the hold should last about " << want_ms << " ms: " << t["launch_hold"].dump();
  EXPECT_LT(hold_ms, want_ms + 0.8) << t["launch_hold"].dump();
  EXPECT_LE(t["launch_hold"]["late"].get<int>(), t["candidate"]["samples"].get<int>());
  // An honest call behind the hold: the clocks agree (in 95 of 96 A/A evaluations on the H200 in
  // every sample, in the last in all but one).
  EXPECT_LE(10 * t["events_host_disagreed"].get<int>(), t["candidate"]["samples"].get<int>()) << t.dump(1);
  EXPECT_FALSE(unheld.record["timing"].contains("launch_hold")) << unheld.record["timing"].dump(1);
  EXPECT_EQ(unheld.record["protocol"]["timing"]["launch_hold_us"], 0);
}

// Processes that spin until this object goes (or the test process dies): load beside kbv.
struct BusyLoops {
  explicit BusyLoops(int n) {
    for (int i = 0; i < n; ++i) {
      pid_t p = fork();
      if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        volatile unsigned long k = 0;
        for (;;) k = k + 1;
      }
      if (p > 0) pids.push_back(p);
    }
  }
  ~BusyLoops() {
    for (pid_t p : pids) kill(p, SIGKILL);
    for (pid_t p : pids) waitpid(p, nullptr, 0);
  }
  std::vector<pid_t> pids;
};

// A CPU timing beside busy cores is slow by whatever ATen's threads waited for them (a ReLU
// baseline 20-40x on the 2-core CI machine): the record says how many cores others used, warns,
// and such a baseline is not cached, so a later evaluation on an idle host times it again.
TEST(Timing, ABusyHostIsSaidAndItsBaselinesAreNotCached) {
  ASSERT_EQ(std::getenv("KBV_HOST_BUSY_CORES"), nullptr) << "the default line is under test";
  fs::path root = scratch("busy-host");
  // The reference as its own candidate: nothing to build, timed under --policy lenient.
  const fs::path solution = reference_as_candidate(kSource / "problems/level1/19_ReLU.py", root);
  ASSERT_FALSE(solution.empty());
  fs::path out = root / "record.json";
  std::string cache = (root / "cache").string();
  Outcome o;
  {
    BusyLoops busy(2);
    ASSERT_EQ(busy.pids.size(), 2u);
    o = kbv_run({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                 solution.string(), "--device", "cpu", "--trials", "1", "--policy", "lenient",
                 "--protocol", "kernelbench", "--time-cap", "0.3", "--json", out.string()},
                out, cache);
  }
  ASSERT_EQ(o.code, 0) << o.output;
  ASSERT_EQ(o.record["verdict"], "correct") << o.output;
  const json& t = o.record["timing"];
  EXPECT_GE(t["candidate"].value("host_other_cores", 0.0), 0.25) << t["candidate"].dump();
  for (const char* mode : {"tf32", "fp32"}) {
    ASSERT_TRUE(t["baselines"].contains(mode)) << t.dump(1);
    EXPECT_GE(t["baselines"][mode].value("host_other_cores", 0.0), 0.25) << mode << ": " << t["baselines"][mode].dump();
    EXPECT_EQ(t["baselines"][mode]["cached"], false);
  }
  bool warned = false;
  for (const auto& f : o.record["findings"])
    if (f["rule"] == "timing_host_busy" && f["message"].get<std::string>().find("(T22)") == std::string::npos) {
      warned = true;  // the host's load (the other timing_host_busy: a per-call bound not judged)
      EXPECT_EQ(f["severity"], "warn");
      EXPECT_TRUE(f["cheat"].is_null()) << f.dump();
      EXPECT_NE(f["message"].get<std::string>().find("not cached"), std::string::npos) << f["message"];
    }
  EXPECT_TRUE(warned) << o.record["findings"].dump(1);
  std::error_code ec;
  EXPECT_TRUE(!fs::exists(root / "cache" / "baselines") || fs::is_empty(root / "cache" / "baselines", ec))
      << "a baseline timed beside busy cores was cached";
}

bool has_finding(const json& record, const std::string& rule, const std::string& cheat) {
  for (const auto& f : record["findings"])
    if (f["rule"] == rule && f["severity"] == "reject" && (cheat.empty() || f["cheat"] == cheat)) return true;
  return false;
}

// T23: a candidate that computes through the warm-up and the first 4 timed calls of a streak (earlier
// versions spot-checked the first 64), then returns uninitialised tensors. Spot checks cover every timed call
// and the recomputed calls are drawn over all of them.
TEST(Timing, SpotChecksCoverEveryTimedCall) {
  Outcome o = eval("examples/level1/19_ReLU/cpu_skip_after_checks.py", "cpu", {"--time-cap", "3"});
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "rejected") << o.record.dump(1);
  EXPECT_TRUE(has_finding(o.record, "spot_check_failed", "T5")) << o.record["findings"].dump(1);
  const json& t = o.record["timing"];
  const int timed = t["candidate"]["samples"].get<int>() + t["candidate"]["discarded"].get<int>();
  EXPECT_GT(timed, 20) << "the skip (after 4 calls of a streak) must cover most calls for the test to mean anything: "
                       << t["candidate"].dump();
  EXPECT_EQ(t["spot_checks"]["calls"].get<int>(), timed) << t["spot_checks"].dump();
  EXPECT_GT(t["spot_checks"]["failed"].get<int>(), 0) << t["spot_checks"].dump();
}

// The per-call bound's false alarms: the honest ReLU timed beside busy loops on this host is still
// correct, never a forged clock (T22). Beside two loops (and ctest's other tests) its short calls are
// those whose worker waited for a CPU, by the kernel's account; a host so busy that more than half
// the calls fall short that way is said, and no speedup is claimed (docs/TIMING.md, "Per-call
// outside bound"). Beside four to six loops on a 2-core host either outcome was seen.
TEST(Timing, HonestCallsFitTheirWindowsOnABusyHost) {
  for (const int loops : {2, 6}) {
    SCOPED_TRACE(std::to_string(loops) + " busy loops");
    Outcome o;
    {
      BusyLoops busy(loops);
      ASSERT_EQ(busy.pids.size(), static_cast<size_t>(loops));
      // One baseline: the per-call bound is judged on the candidate's calls alone, and every second
      // of the timing phase is a second of the busy loops' CPU too.
      o = eval("examples/level1/19_ReLU/cpu_honest.py", "cpu", {"--time-cap", "0.5", "--baselines", "fp32"},
               "problems/level1/19_ReLU.py", "-busy" + std::to_string(loops));
    }
    ASSERT_EQ(o.code, 0) << o.output;
    EXPECT_EQ(o.record["verdict"], "correct") << o.record["findings"].dump(1);
    ASSERT_TRUE(o.record.contains("timing")) << o.record.dump(1);
    const json& b = o.record["timing"]["call_bound"];
    ASSERT_TRUE(b.contains("judged")) << b.dump();
    // Waiting for a CPU is not CPU time: the CPU bound holds an honest run whatever the load.
    ASSERT_TRUE(b.contains("cpu")) << b.dump();
    EXPECT_TRUE(b["cpu"]["ok"].get<bool>()) << "an honest run shown as a forgery: " << b.dump();
    EXPECT_TRUE(b["cpu"]["beside_ok"].get<bool>()) << "an honest run shown as a forgery: " << b.dump();
    if (b["ok"].get<bool>()) {
      EXPECT_TRUE(b["judged"].get<bool>()) << b.dump();
      EXPECT_GT(o.record.value("runtime", -1.0), 0.0);
      continue;
    }
    EXPECT_FALSE(b["judged"].get<bool>()) << "an honest run shown as a forgery: " << b.dump();
    EXPECT_GT(b["waited_calls"].get<int>(), 0) << b.dump();
    EXPECT_EQ(o.record["timing"].value("error", ""), "the per-call outside bound could not be judged on this busy "
                                                    "host: no speedup is claimed")
        << o.record["timing"].dump(1);
    EXPECT_LT(o.record.value("runtime", -1.0), 0.0) << "no speedup claimed";
    bool said = false;
    for (const auto& f : o.record["findings"])
      said = said || (f["rule"] == "timing_host_busy" && f["message"].get<std::string>().find("(T22)") != std::string::npos);
    EXPECT_TRUE(said) << o.record["findings"].dump(1);
  }
}

// The per-call CPU bound (docs/TIMING.md): a clock rewritten inside the worker (its GOT slot of
// steady_clock::now, examples/level1/23_Softmax/cpu_plt_clock.py: a 1 ms call reported as 0.05)
// beside busy loops, where the wall-clock windows can no longer tell (on the CI machine its
// allowance grew past the calls: 0 of 131 short), is rejected: the worker's CPU time in each
// window, the kernel's account, is no waiting.
TEST(Timing, ARewrittenClockIsRejectedOnABusyHost) {
  Outcome o;
  {
    BusyLoops busy(2);
    ASSERT_EQ(busy.pids.size(), 2u);
    o = eval("examples/level1/23_Softmax/cpu_plt_clock.py", "cpu", {"--policy", "lenient", "--time-cap", "0.5"},
             "problems/level1/23_Softmax.py", "-busy");
  }
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "rejected") << o.record["findings"].dump(1);
  ASSERT_TRUE(o.record.contains("timing")) << o.record.dump(1);
  const json& b = o.record["timing"]["call_bound"];
  ASSERT_TRUE(b.contains("cpu")) << b.dump();
  EXPECT_FALSE(b["cpu"]["ok"].get<bool>()) << b.dump();
  EXPECT_GT(2 * b["cpu"]["over_calls"].get<int>(), b["cpu"]["checked"].get<int>()) << b.dump();
  EXPECT_TRUE(rejected_as_t22(o.record, "CPU time")) << o.record["findings"].dump(1);
}

// The same rewrite with the work handed to a helper process (cpu_plt_clock_helper.py): the worker's
// own CPU clock shows only the copies, and the busy host blurs the wall-clock windows. The CPU the
// candidate's other processes used while its calls were timed shows it (BesideCpu).
TEST(Timing, AClockRewriteWithAHelperProcessIsRejectedOnABusyHost) {
  Outcome o;
  {
    BusyLoops busy(2);
    ASSERT_EQ(busy.pids.size(), 2u);
    o = eval("examples/level1/23_Softmax/cpu_plt_clock_helper.py", "cpu", {"--policy", "lenient", "--time-cap", "0.5"},
             "problems/level1/23_Softmax.py", "-helper-busy");
  }
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "rejected") << o.record["findings"].dump(1);
  ASSERT_TRUE(o.record.contains("timing")) << o.record.dump(1);
  const json& cpu = o.record["timing"]["call_bound"]["cpu"];
  ASSERT_TRUE(cpu.contains("beside_ok")) << cpu.dump();
  EXPECT_FALSE(cpu["beside_ok"].get<bool>()) << cpu.dump();
  EXPECT_GT(cpu["beside_ms"].get<double>(), cpu["beside_allowance_ms"].get<double>()) << cpu.dump();
  EXPECT_TRUE(rejected_as_t22(o.record, "helper process")) << o.record["findings"].dump(1);
}

TEST(Timing, LaunchHoldOutOfRangeIsRefused) {
  fs::path out = scratch("hold-range") / "record.json";
  Outcome o = kbv_run({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                       (kSource / "examples/level1/19_ReLU/cpu_honest.py").string(), "--device", "cpu",
                       "--launch-hold-us", "20000", "--json", out.string()});
  EXPECT_NE(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("--launch-hold-us"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(out)) << "nothing is evaluated under a refused option";
}

// CPU thread parity (docs/TIMING.md "Thread parity"): the candidate and the baselines run on the
// same budget, chosen by kbv and recorded; each worker says what it ran with in its timing reply
// (the reference's in each baseline's stats, the candidate's in timing.candidate), and kbv checks
// the candidate's affinity from outside.
TEST(Timing, BothSidesRunOnTheThreadBudget) {
  const std::vector<int> own = kbv::affinity_of(0);
  ASSERT_FALSE(own.empty());
  for (const int asked : {1, 0}) {
    SCOPED_TRACE("--cpu-threads " + std::to_string(asked));
    Outcome o = eval("examples/level1/107_Tanh/cpu_honest.py", "cpu",
                     {"--time-cap", "0.2", "--baselines", "fp32", "--cpu-threads", std::to_string(asked)},
                     "problems/level1/107_Tanh.py", "-threads-" + std::to_string(asked));
    ASSERT_EQ(o.code, 0) << o.output;
    ASSERT_EQ(o.record["verdict"], "correct") << o.record.dump(1);
    EXPECT_EQ(o.record["protocol"]["timing"]["cpu_threads"].get<int>(), asked);
    const json& t = o.record["timing"];
    // 1: one CPU kbv may use (the highest-numbered one no other evaluation holds: util/sched.h
    // CpuLease); 0: all of them.
    const int threads = asked == 0 ? static_cast<int>(own.size()) : 1;
    ASSERT_TRUE(t.contains("threads") && t.contains("cpus")) << t.dump(1);
    std::string cpus = kbv::cpu_list_text(own);
    if (asked == 1) {
      cpus = t["cpus"].get<std::string>();
      bool one_of_own = false;
      for (int c : own) one_of_own = one_of_own || cpus == std::to_string(c);
      EXPECT_TRUE(one_of_own) << cpus << " is not one CPU of " << kbv::cpu_list_text(own);
    }
    EXPECT_EQ(t["threads"].get<int>(), threads);
    EXPECT_EQ(t["cpus"], cpus);
    EXPECT_EQ(t["candidate"]["threads"].get<int>(), threads) << t["candidate"].dump();
    EXPECT_EQ(t["candidate"]["cpus"], cpus) << t["candidate"].dump();
    EXPECT_EQ(t["baselines"]["fp32"]["threads"].get<int>(), threads) << t["baselines"].dump();
    EXPECT_EQ(t["baselines"]["fp32"]["cpus"], cpus) << t["baselines"].dump();
    // The per-call CPU bound allows the budget's CPUs their share of every sample.
    EXPECT_EQ(t["call_bound"]["cpu"]["threads"].get<int>(), threads) << t["call_bound"].dump();
    EXPECT_TRUE(t["call_bound"]["cpu"]["ok"].get<bool>()) << t["call_bound"].dump();
    for (const auto& f : o.record["findings"]) {
      EXPECT_NE(f["rule"], "thread_budget_escaped") << f.dump();
      EXPECT_NE(f["rule"], "cpu_budget_not_applied") << f.dump();
      EXPECT_NE(f["rule"], "reference_disturbed") << "the reference is expected on the budget: " << f.dump();
    }
  }
}

// T25: a candidate whose OpenMP team widens its own affinity to every CPU, to spread its work over
// more cores than its baselines had. Past the static rule (--policy lenient): under the sandbox
// seccomp refuses the call and the team shares the budget's CPU (correct); with --sandbox off the
// team's threads are found outside the budget after the timing (rejected).
TEST(Timing, AWidenedAffinityEscapesNoBudget) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU: nothing to widen to";
  const std::string solution = "examples/level1/107_Tanh/cpu_widen_affinity.py";
  const std::vector<std::string> lenient = {"--policy", "lenient", "--time-cap", "0.2", "--baselines", "fp32"};
  auto escaped = [](const Outcome& o) {
    for (const auto& f : o.record["findings"])
      if (f["rule"] == "thread_budget_escaped") return f;
    return json();
  };
  Outcome strict = eval(solution, "cpu", lenient, "problems/level1/107_Tanh.py", "-strict");
  ASSERT_EQ(strict.code, 0) << strict.output;
  EXPECT_EQ(strict.record["verdict"], "correct") << strict.record.dump(1);
  EXPECT_TRUE(escaped(strict).is_null()) << escaped(strict).dump();
  EXPECT_EQ(strict.record["timing"]["threads"].get<int>(), 1) << strict.record["timing"].dump(1);

  std::vector<std::string> off = lenient;
  off.insert(off.end(), {"--sandbox", "off"});
  Outcome o = eval(solution, "cpu", off, "problems/level1/107_Tanh.py", "-off");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "rejected") << o.record["findings"].dump(1);
  const json f = escaped(o);
  if (f.is_null() && !o.record.contains("timing")) {
    // The widened team's spinning in libgomp can drown the own share of the audit's samples first
    // (no_custom_compute, before any timing): rejected all the same, the budget check not reached.
    bool audit = false;
    for (const auto& g : o.record["findings"]) audit = audit || g["rule"] == "no_custom_compute";
    EXPECT_TRUE(audit) << o.record["findings"].dump(1);
    GTEST_SKIP() << "rejected by the audit before timing; the thread budget check was not reached this run";
  }
  ASSERT_FALSE(f.is_null()) << o.record["findings"].dump(1);
  EXPECT_EQ(f["severity"], "reject");
  EXPECT_EQ(f["cheat"], "T25");
  EXPECT_NE(f["message"].get<std::string>().find("affinity "), std::string::npos) << f["message"];
  EXPECT_FALSE(o.record["timing"].contains("threads")) << "the budget did not hold: " << o.record["timing"].dump(1);
}

}  // namespace timing_test
