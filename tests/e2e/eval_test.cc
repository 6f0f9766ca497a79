// End-to-end: the kbv binary on the built-in problems and the example corpus.
// CPU entries run everywhere; CUDA entries run on a GPU machine and skip visibly elsewhere.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <set>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <map>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace eval_test {

using kbv::e2e::gpu_visible;
using kbv::e2e::kSource;
using kbv::e2e::renamed_example;
using kbv::e2e::Outcome;
using kbv::e2e::run_kbv;

fs::path temp_dir(const std::string& name) { return kbv::e2e::scratch_dir("eval", name); }

struct Entry {
  std::string problem, solution, device, expected, pending, policy, precision;
  std::vector<std::string> fails_only;
  std::string audit;              // the runtime-audit rule that must reject it (docs/POLICY.md)
  std::vector<std::string> also;  // other verdicts the entry may get (memory-dependent cheats)
  std::string name;
  int trials = 2;          // the entry's "trials", else 2
  int flaky_reruns = -1;   // the entry's "flaky_reruns", else the protocol's
  std::string protocol = "";  // the entry's "protocol" (--protocol), else kbv's
  int write_cap_mib = -1;     // the entry's "write_cap_mib" (--write-cap-mib), else the default
};

void PrintTo(const Entry& e, std::ostream* os) {
  *os << e.solution << " on " << e.device << " (" << e.policy << ", " << e.precision << ")";
}

std::vector<Entry> manifest() {
  std::vector<Entry> entries;
  kbv::FileText t = kbv::read_file(kSource / "examples" / "manifest.json");
  if (!t.ok) return entries;
  json m = json::parse(t.text, nullptr, false);
  if (!m.is_array()) return entries;
  for (const auto& e : m) {
    Entry x{e.value("problem", ""), e.value("solution", ""), e.value("device", "cpu"), e.value("expected", ""),
            e.value("pending", ""), e.value("policy", "strict"), e.value("precision", "fp32"), {}, "", {}, ""};
    if (e.contains("fails_only") && e["fails_only"].is_array())
      for (const auto& d : e["fails_only"]) x.fails_only.push_back(d);
    x.audit = e.value("audit", "");
    if (e.contains("trials") && e["trials"].is_number_integer()) x.trials = e["trials"];
    if (e.contains("flaky_reruns") && e["flaky_reruns"].is_number_integer()) x.flaky_reruns = e["flaky_reruns"];
    x.protocol = e.value("protocol", "");
    if (e.contains("write_cap_mib") && e["write_cap_mib"].is_number_integer()) x.write_cap_mib = e["write_cap_mib"];
    if (e.contains("also") && e["also"].is_array())
      for (const auto& v : e["also"])
        if (v.is_string() && v != "correct") x.also.push_back(v);
    std::string n = x.device + "_" + fs::path(x.solution).parent_path().filename().string() + "_" +
                    fs::path(x.solution).stem().string() + (x.policy == "strict" ? "" : "_" + x.policy) +
                    (x.precision == "fp32" ? "" : "_" + x.precision) + (x.protocol.empty() ? "" : "_" + x.protocol);
    for (char& c : n)
      if (!isalnum(static_cast<unsigned char>(c))) c = '_';
    x.name = n;
    entries.push_back(x);
  }
  return entries;
}

// GPU evaluations of large problems take tens of GiB: one at a time across test processes.
// Compiling needs no GPU, so callers build first (in parallel) and take the lock to evaluate.
class GpuLock {
 public:
  GpuLock() {
    fd_ = ::open("/tmp/kbv-e2e-gpu.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~GpuLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

void prebuild(const std::string& solution, const std::string& device) {
  Outcome o = run_kbv({"build", "--solution", (kSource / solution).string(), "--device", device});
  EXPECT_EQ(o.code, 0) << "building " << solution << ": " << o.output;
}

// A KernelBench run folder's name for sample `i` of problem `id` of `level`.
std::string fmt_sample(const std::string& level, const std::string& id, size_t i) {
  return "level_" + level + "_problem_" + id + "_sample_" + std::to_string(i) + "_kernel.py";
}

// The latest record of each sample of a run folder's store, as JSON by sample id; `error` says why
// none could be read.
std::map<int, json> run_records(const fs::path& run, std::string& error) {
  std::map<int, json> records;
  auto store = kbv::Store::open(run / "kbv.sqlite", error, kbv::Store::Mode::read_only);
  if (store)
    for (const kbv::Record& r : store->latest()) records[r.sample_id] = kbv::to_json(r);
  return records;
}

// The entries of one problem that run with the same flags, in runs of at most this many: one
// `kbv eval --run` evaluates them (one kbv, one reference, one zygote), as a batch user's samples.
constexpr size_t kChunk = 6;

// The flags an entry is evaluated with, besides its problem and solution.
std::vector<std::string> entry_flags(const Entry& e) {
  std::vector<std::string> args = {"--device", e.device, "--trials", std::to_string(e.trials), "--timeout-call", "10",
                                   "--policy", e.policy, "--precision", e.precision};
  if (e.flaky_reruns >= 0) args.insert(args.end(), {"--flaky-reruns", std::to_string(e.flaky_reruns)});
  if (!e.protocol.empty()) args.insert(args.end(), {"--protocol", e.protocol});
  if (e.write_cap_mib >= 0) args.insert(args.end(), {"--write-cap-mib", std::to_string(e.write_cap_mib)});
  return args;
}

// CPU entries that share their problem and flags with another, in runs of kChunk at most, in the
// manifest's order. Entries of a known gap (`pending`) and CUDA entries are evaluated one by one.
std::vector<std::vector<Entry>> chunks() {
  std::map<std::string, std::vector<Entry>> groups;
  std::vector<std::string> order;
  for (const Entry& e : manifest()) {
    if (e.device != "cpu" || !e.pending.empty()) continue;
    std::string key = e.problem;
    for (const auto& f : entry_flags(e)) key += " " + f;
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(e);
  }
  std::vector<std::vector<Entry>> out;
  for (const auto& key : order) {
    const auto& g = groups[key];
    if (g.size() < 2) continue;
    const size_t n = (g.size() + kChunk - 1) / kChunk;  // runs of even size
    for (size_t i = 0; i < n; ++i)
      out.emplace_back(g.begin() + static_cast<long>(i * g.size() / n), g.begin() + static_cast<long>((i + 1) * g.size() / n));
  }
  return out;
}

// The entries evaluated one by one (`kbv eval --problem --solution`).
std::vector<Entry> singles() {
  std::set<std::string> chunked;
  for (const auto& c : chunks())
    for (const auto& e : c) chunked.insert(e.name);
  std::vector<Entry> out;
  for (const Entry& e : manifest())
    if (!chunked.count(e.name)) out.push_back(e);
  return out;
}

// What an entry's record must show. Returns "" or, for a known gap still open, why it is skipped.
std::string check_record(const Entry& e, const json& record) {
  if (!e.pending.empty() && record["verdict"] != e.expected)
    return "known gap: " + e.solution + " got " + record["verdict"].dump() + ", must become " + e.expected +
           " once the defence exists (" + e.pending + ")";
  const std::string got = record["verdict"];
  const bool alternative = std::find(e.also.begin(), e.also.end(), got) != e.also.end();
  if (!alternative) {
    EXPECT_EQ(got, e.expected) << e.solution << ": " << record["message"];
  }
  EXPECT_EQ(record["correctness"], got == "correct");
  EXPECT_FALSE(record["message"].get<std::string>().empty()) << "every verdict carries a message";
  if (!e.fails_only.empty() && !alternative) {
    std::set<std::string> failed, expected(e.fails_only.begin(), e.fails_only.end());
    for (const auto& d : record["distributions"])
      if (!d["passed"].get<bool>()) failed.insert(d["distribution"]);
    EXPECT_EQ(failed, expected) << record["distributions"].dump();
  }
  if (got == "flaky") {
    // The record says which re-run of the failed check passed (docs/RECORD.md).
    EXPECT_TRUE(record.contains("flaky")) << record.dump(2);
    if (record.contains("flaky")) {
      EXPECT_FALSE(record["flaky"]["passed"].empty()) << record["flaky"].dump();
      EXPECT_EQ(record["flaky"]["failed"][0]["attempt"], 0) << record["flaky"].dump();
    }
  }
  if (!e.audit.empty()) {
    bool by_rule = false;
    for (const auto& f : record["findings"])
      by_rule = by_rule || (f.value("rule", "") == e.audit && f.value("severity", "") == "reject");
    EXPECT_TRUE(by_rule) << e.solution << " must be rejected by the runtime audit " << e.audit << ": "
                         << record["findings"].dump(2);
  }
  if (e.expected == "correct" && e.device == "cpu") {
    // Every correct CPU record carries the runtime audit's attribution, with own code in it.
    EXPECT_TRUE(record.contains("compute")) << record.dump(2);
    if (record.contains("compute")) {
      EXPECT_EQ(record["compute"]["method"], "cpu-sampling") << record["compute"].dump(2);
      EXPECT_GT(record["compute"]["own_share"].get<double>(), 0.0) << record["compute"].dump(2);
    }
  }
  return "";
}

class Corpus : public ::testing::TestWithParam<Entry> {};

TEST_P(Corpus, VerdictAsExpected) {
  const Entry& e = GetParam();
  if (e.device == "cuda" && !gpu_visible()) GTEST_SKIP() << "needs a GPU: " << e.solution;
  std::optional<GpuLock> lock;
  if (e.device == "cuda") {
    if (e.expected != "compile_error" && !(e.expected == "rejected" && e.policy == "strict"))
      prebuild(e.solution, e.device);
    lock.emplace();
  }
  fs::path out = temp_dir(e.name) / "record.json";
  std::vector<std::string> args = {"eval", "--problem", (kSource / e.problem).string(), "--solution",
                                   (kSource / e.solution).string(), "--json", out.string()};
  for (const auto& f : entry_flags(e)) args.push_back(f);
  Outcome o = run_kbv(args, out);
  ASSERT_EQ(o.code, 0) << o.output;
  ASSERT_TRUE(o.record.is_object()) << o.output;
  if (std::string gap = check_record(e, o.record); !gap.empty()) GTEST_SKIP() << gap;
}

INSTANTIATE_TEST_SUITE_P(Examples, Corpus, ::testing::ValuesIn(singles()),
                         [](const ::testing::TestParamInfo<Entry>& i) { return i.param.name; });

// A run of entries of one problem and flags: each sample's stored record as its entry expects.
class CorpusRun : public ::testing::TestWithParam<std::vector<Entry>> {};

void PrintTo(const std::vector<Entry>& c, std::ostream* os) {
  *os << c.size() << " samples of " << c.front().problem;
}

TEST_P(CorpusRun, VerdictsAsExpected) {
  const std::vector<Entry>& c = GetParam();
  const Entry& first = c.front();
  const fs::path problem = first.problem;
  const std::string level = problem.parent_path().filename().string().substr(5);  // "level1"
  const std::string id = problem.stem().string().substr(0, problem.stem().string().find('_'));
  const fs::path run = temp_dir("run_" + first.name);
  for (size_t i = 0; i < c.size(); ++i)
    fs::copy_file(kSource / c[i].solution, run / fmt_sample(level, id, i));
  std::vector<std::string> args = {"eval", "--problems", (kSource / "problems").string(), "--run", run.string(),
                                   "--level", level};
  for (const auto& f : entry_flags(first)) args.push_back(f);
  Outcome o = run_kbv(args);
  ASSERT_EQ(o.code, 0) << o.output;
  std::string error;
  std::map<int, json> records = run_records(run, error);
  ASSERT_EQ(error, "");
  for (size_t i = 0; i < c.size(); ++i) {
    SCOPED_TRACE(c[i].name + " (sample " + std::to_string(i) + ")");
    ASSERT_TRUE(records.count(static_cast<int>(i))) << o.output;
    EXPECT_EQ(check_record(c[i], records[static_cast<int>(i)]), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, CorpusRun, ::testing::ValuesIn(chunks()),
                         [](const ::testing::TestParamInfo<std::vector<Entry>>& i) {
                           return i.param.front().name + "_and_" + std::to_string(i.param.size() - 1);
                         });

TEST(Eval, CompileErrorNamesFileAndLine) {
  fs::path out = temp_dir("compile_error") / "r.json";
  Outcome o = run_kbv({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                       (kSource / "examples/level1/19_ReLU/cpu_compile_error.py").string(), "--device", "cpu",
                       "--json", out.string()},
                      out);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "compile_error");
  EXPECT_FALSE(o.record["compiled"].get<bool>());
  ASSERT_TRUE(o.record["build"].contains("diagnostics")) << o.record.dump(2);
  const json& d = o.record["build"]["diagnostics"][0];
  EXPECT_GT(d["line"].get<int>(), 0);
  EXPECT_NE(d["file"].get<std::string>().find("main.cpp"), std::string::npos) << d.dump();
  // The first error points at the line of the .py the user wrote (the string's line 12 there),
  // with the compiler's message on the message's first line.
  EXPECT_EQ(d.value("solution_line", 0), 12) << d.dump();
  const std::string message = o.record["message"];
  const std::string first = message.substr(0, message.find('\n'));
  EXPECT_EQ(first.rfind((kSource / "examples/level1/19_ReLU/cpu_compile_error.py").string() + ":12: error: ", 0), 0u)
      << message;
  EXPECT_NE(first.find("before"), std::string::npos) << "the compiler's own words: " << first;
}

// In a run folder, the console line of a compile error carries the compiler's first message at the
// solution's line (it used to stop at the cache path, 80 characters in).
TEST(Run, ACompileErrorsConsoleLineShowsTheFirstErrorAtTheSolutionsLine) {
  fs::path run = temp_dir("compile_error_run");
  const fs::path sample = run / "level_1_problem_19_sample_0_kernel.py";
  fs::copy_file(kSource / "examples/level1/19_ReLU/cpu_compile_error.py", sample);
  Outcome o = run_kbv({"eval", "--problems", (kSource / "problems").string(), "--run", run.string(), "--level", "1",
                       "--device", "cpu"});
  EXPECT_NE(o.code, -1) << o.output;
  const std::string line = "level 1 problem 19 sample 0: compile_error";
  const size_t at = o.output.find(line);
  ASSERT_NE(at, std::string::npos) << o.output;
  const std::string rest = o.output.substr(at, o.output.find('\n', at) - at);
  EXPECT_NE(rest.find(sample.string() + ":12: error: expected"), std::string::npos) << rest;
  EXPECT_EQ(rest.find("cache/build"), std::string::npos) << rest;
}

// torch's build.ninja names the folder the build was made in: /tmp/kbv-ext for a sandboxed build
// worker, the cache entry's own folder under --sandbox off. Loaded at the other path, torch compiles
// it again, and without the sandbox it rewrites the entry for every later sandboxed load to compile
// again. So a build for --sandbox off is cached apart from the sandboxed one, and leaves it whole.
TEST(Eval, ABuildForSandboxOffIsCachedApartFromTheSandboxedOne) {
  fs::path dir = temp_dir("in_place_build");
  const std::string name = "kbv_in_place_" + std::to_string(::getpid());
  const std::string source =
      renamed_example(kSource / "examples/level1/19_ReLU/cpu_honest.py", "kbv_ex_l1_19_relu_cpu_honest", name);
  ASSERT_FALSE(source.empty());
  const fs::path solution = dir / "kernel.py";
  ASSERT_EQ(kbv::write_file_atomic(solution, source), "");
  auto eval = [&](const std::string& sandbox) {
    const fs::path out = dir / (sandbox + ".json");
    return run_kbv({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                    solution.string(), "--device", "cpu", "--trials", "1", "--timing", "off", "--sandbox", sandbox,
                    "--json", out.string()},
                   out);
  };
  // The cache entries of this source, by the folder their build.ninja names.
  auto entries = [&] {
    std::map<std::string, std::vector<fs::path>> by_folder;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(KBV_TEST_CACHE) / "build", ec)) {
      kbv::FileText ninja = kbv::read_file(e.path() / "ext" / name / "build.ninja");
      if (!ninja.ok) continue;
      const bool bound = ninja.text.find("/tmp/kbv-ext/" + name + "/main.cpp") != std::string::npos;
      const bool own = ninja.text.find((e.path() / "ext" / name / "main.cpp").string()) != std::string::npos;
      by_folder[bound && !own ? "bound" : own && !bound ? "own" : "neither"].push_back(e.path());
    }
    return by_folder;
  };

  Outcome strict = eval("strict");
  if (strict.code == 2 && strict.output.find("--sandbox strict") != std::string::npos)
    GTEST_SKIP() << "no strict sandbox on this host: " << strict.output;
  ASSERT_EQ(strict.code, 0) << strict.output;
  ASSERT_EQ(strict.record["verdict"], "correct") << strict.output;
  EXPECT_FALSE(strict.record["build"]["cached"].get<bool>()) << "a source of its own";
  auto made = entries();
  ASSERT_EQ(made["bound"].size(), 1u) << strict.output;

  Outcome off = eval("off");
  ASSERT_EQ(off.code, 0) << off.output;
  ASSERT_EQ(off.record["verdict"], "correct") << off.output;
  EXPECT_FALSE(off.record["build"]["cached"].get<bool>()) << "the sandboxed build was taken for --sandbox off";
  auto after = entries();
  EXPECT_EQ(after["bound"], made["bound"]) << "the sandboxed build was rewritten";
  EXPECT_EQ(after["own"].size(), 1u);
  EXPECT_TRUE(after["neither"].empty());
}

// Issue 27: two evaluations of one source that no cache holds, started together, build it once into
// one cache entry, and both load that build and pass.
TEST(Eval, TwoEvaluationsOfOneFreshSourceAtOnceBuildItOnceAndBothLoadIt) {
  fs::path dir = temp_dir("concurrent_build");
  const fs::path solution = dir / "kernel.py";
  // ReLU's honest solution under an extension name of its own (this process's, and the time): a
  // source no earlier run built, whose cache entries are found by that name in the tests' shared
  // cache. Shared, so that its build has the precompiled header (in a cache of this test's own it
  // compiled without, twice the CPU); the entry lock that lets only one of the two build is the same.
  const std::string name = "kbv_concurrent_" + std::to_string(::getpid()) + "_" +
                           std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  const std::string source =
      renamed_example(kSource / "examples/level1/19_ReLU/cpu_honest.py", "kbv_ex_l1_19_relu_cpu_honest", name);
  ASSERT_FALSE(source.empty());
  ASSERT_EQ(kbv::write_file_atomic(solution, source), "");
  Outcome o[2];
  auto eval = [&](int i) {
    const fs::path out = dir / ("r" + std::to_string(i) + ".json");
    o[i] = run_kbv({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                    solution.string(), "--device", "cpu", "--trials", "1", "--timing", "off", "--json", out.string()},
                   out, 900);
  };
  std::thread first(eval, 0), second(eval, 1);
  first.join();
  second.join();
  int built = 0;
  for (const Outcome& x : o) {
    ASSERT_EQ(x.code, 0) << x.output;
    EXPECT_EQ(x.record["verdict"], "correct") << x.record["message"];
    built += x.record["build"]["cached"].get<bool>() ? 0 : 1;
  }
  EXPECT_EQ(built, 1) << "one built, the other took its entry";
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(fs::path(KBV_TEST_CACHE) / "build"))
    if (fs::exists(e.path() / "ext" / name)) ++entries;
  EXPECT_EQ(entries, 1u);
}

// Two copies of one failing solution share a cached build; each record names its own file.
TEST(Eval, ACachedBuildFailureNamesTheFileBeingEvaluated) {
  fs::path dir = temp_dir("compile_error_twice");
  const fs::path src = kSource / "examples/level1/19_ReLU/cpu_compile_error.py";
  for (const char* run : {"model_a", "model_b"}) {
    fs::create_directories(dir / run);
    fs::copy_file(src, dir / run / "kernel.py", fs::copy_options::overwrite_existing);
  }
  for (const char* run : {"model_a", "model_b"}) {
    const fs::path solution = dir / run / "kernel.py";
    Outcome o = run_kbv({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                         solution.string(), "--device", "cpu", "--json", (dir / run / "r.json").string()},
                        dir / run / "r.json");
    ASSERT_EQ(o.code, 0) << o.output;
    EXPECT_EQ(o.record["verdict"], "compile_error");
    const std::string message = o.record["message"];
    EXPECT_EQ(message.rfind(solution.string() + ":12: error: ", 0), 0u) << message;
    EXPECT_EQ(message.find(run == std::string("model_a") ? "model_b" : "model_a"), std::string::npos) << message;
    if (run != std::string("model_a")) continue;
    // The entry as a kbv from before the mapping cached it (no solution_line): still mapped, from
    // the generated file in the cache.
    int stripped = 0;
    for (const auto& e : fs::directory_iterator(fs::path(KBV_TEST_CACHE) / "build")) {
      json r = json::parse(kbv::read_file(e.path() / "result.json").text, nullptr, false);
      if (!r.is_object() || r.value("kind", "") != "compile_error" ||
          r.dump().find("kbv_ex_l1_19_relu_cpu_compile_error/main.cpp") == std::string::npos)
        continue;  // not this code's entry (the key is the code's hash, so every copy shares it)
      for (auto& d : r["diagnostics"]) d.erase("solution_line");  // absent already in an entry an older kbv wrote
      std::ofstream(e.path() / "result.json") << r.dump(2);
      ++stripped;
    }
    EXPECT_GT(stripped, 0) << "the solution's cache entry not found";
  }
}

TEST(Eval, CudaSolutionOnCpuRunSaysSo) {
  fs::path out = temp_dir("needs_cuda") / "r.json";
  Outcome o = run_kbv({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                       (kSource / "examples/level1/19_ReLU/cuda_honest.py").string(), "--device", "cpu", "--json",
                       out.string()},
                      out);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "compile_error");
  EXPECT_NE(o.record["message"].get<std::string>().find("--device cuda"), std::string::npos) << o.record["message"];
}

TEST(Eval, MarkdownAnswerUsesFirstBlock) {
  fs::path dir = temp_dir("markdown");
  kbv::FileText py = kbv::read_file(kSource / "examples/level1/19_ReLU/cpu_identity.py");
  ASSERT_TRUE(py.ok);
  std::ofstream(dir / "answer.md") << "Here is my kernel.\n\n```python\n" << py.text << "```\n\nand\n```\nnot this\n```\n";
  Outcome o = run_kbv({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                       (dir / "answer.md").string(), "--device", "cpu", "--trials", "1", "--json",
                       (dir / "r.json").string()},
                      dir / "r.json");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "wrong_output");
  EXPECT_NE(o.record["source_origin"].get<std::string>().find("block 1 of 2"), std::string::npos)
      << o.record["source_origin"];
}

TEST(Eval, BrokenProblemIsAResultNotACrash) {
  fs::path dir = temp_dir("broken_problem");
  std::ofstream(dir / "1_Broken.py") << "import torch\nclass Model(torch.nn.Module):\n    pass\n";
  Outcome o = run_kbv({"eval", "--problem", (dir / "1_Broken.py").string(), "--solution",
                       (kSource / "examples/level1/19_ReLU/cpu_identity.py").string(), "--device", "cpu", "--json",
                       (dir / "r.json").string()},
                      dir / "r.json");
  // The problem cannot judge anything: a usage error (exit 2), with the record still written.
  ASSERT_EQ(o.code, 2) << o.output;
  EXPECT_EQ(o.record["verdict"], "problem_error");
  EXPECT_NE(o.record["message"].get<std::string>().find("get_inputs"), std::string::npos) << o.record["message"];
  EXPECT_NE(o.record["message"].get<std::string>().find("1_Broken.py"), std::string::npos);
}

TEST(Eval, ReferenceRaisingOnAHiddenDistributionIsAProblemError) {
  fs::path dir = temp_dir("reference_raises");
  std::ofstream(dir / "7_Sqrt.py") << "import torch\n"
                                      "class Model(torch.nn.Module):\n"
                                      "    def forward(self, x):\n"
                                      "        if (x < 0).any():\n"
                                      "            raise ValueError('negative input')\n"
                                      "        return x.sqrt()\n"
                                      "def get_inputs():\n    return [torch.rand(4, 4)]\n"
                                      "def get_init_inputs():\n    return []\n";
  Outcome o = run_kbv({"eval", "--problem", (dir / "7_Sqrt.py").string(), "--solution",
                       (kSource / "examples/level1/19_ReLU/cpu_identity.py").string(), "--device", "cpu", "--json",
                       (dir / "r.json").string()},
                      dir / "r.json");
  ASSERT_EQ(o.code, 2) << o.output;
  EXPECT_EQ(o.record["verdict"], "problem_error") << o.record.dump(2);
  std::string m = o.record["message"];
  EXPECT_NE(m.find("7_Sqrt.py"), std::string::npos) << m;
  EXPECT_NE(m.find("D4"), std::string::npos) << m;
  EXPECT_NE(m.find("negative input"), std::string::npos) << m;
}

TEST(Eval, FixedSeedIsReproducibleAndRecorded) {
  fs::path dir = temp_dir("seed");
  std::vector<std::string> args = {"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(),
                                   "--solution", (kSource / "examples/level1/19_ReLU/cpu_abs.py").string(),
                                   "--device", "cpu", "--trials", "1", "--seed", "7", "--json"};
  auto a = args, b = args;
  a.push_back((dir / "a.json").string());
  b.push_back((dir / "b.json").string());
  Outcome oa = run_kbv(a, dir / "a.json"), ob = run_kbv(b, dir / "b.json");
  ASSERT_EQ(oa.code, 0) << oa.output;
  EXPECT_EQ(oa.record["protocol"]["seed"], 7);
  EXPECT_EQ(oa.record["protocol"]["seed_policy"], "fixed");
  EXPECT_EQ(oa.record["distributions"], ob.record["distributions"]);
}

// Instability told apart from failure (DESIGN.md, Flaky): a candidate wrong on a random 30% of its
// calls gets `flaky`, the re-run that passed named; with 10 trials x 4 distributions and 10 re-runs
// another verdict has odds 0.7^40 + 0.3^10, under 1e-5.
TEST(Eval, AFlakyCandidateIsFlakyNotWrongOutput) {
  fs::path dir = temp_dir("flaky");
  Outcome o = run_kbv({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                       (kSource / "examples/level1/19_ReLU/cpu_flaky.py").string(), "--device", "cpu", "--trials",
                       "10", "--flaky-reruns", "10", "--seed", "11", "--json", (dir / "r.json").string()},
                      dir / "r.json");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "flaky") << o.record["message"];
  EXPECT_EQ(o.record["correctness"], false);
  EXPECT_EQ(o.record["protocol"]["flaky_reruns"], 10);
  ASSERT_TRUE(o.record.contains("flaky")) << o.record.dump(2);
  const json& f = o.record["flaky"];
  EXPECT_EQ(f["reruns"], 10);
  ASSERT_EQ(f["passed"].size(), 1u) << f.dump();
  ASSERT_GE(f["failed"].size(), 1u) << f.dump();
  const json& first = f["failed"][0];
  EXPECT_EQ(first["attempt"], 0);
  EXPECT_TRUE(first["reason"].is_string()) << f.dump();
  // Every attempt is the same draw; the one that passed comes after the failed ones.
  for (const auto& a : f["failed"]) {
    EXPECT_EQ(a["trial"], first["trial"]);
    EXPECT_EQ(a["distribution"], first["distribution"]);
  }
  EXPECT_EQ(f["passed"][0]["trial"], first["trial"]);
  EXPECT_EQ(f["passed"][0]["distribution"], first["distribution"]);
  EXPECT_EQ(f["passed"][0]["attempt"].get<int>(), static_cast<int>(f["failed"].size())) << f.dump();
  const std::string m = o.record["message"];
  const std::string draw =
      "trial " + std::to_string(first["trial"].get<int>()) + " " + first["distribution"].get<std::string>();
  EXPECT_NE(m.find(draw), std::string::npos) << m;
  EXPECT_NE(m.find("re-run"), std::string::npos) << m;
  // The distributions list is the checks as first run: the failed one stays failed there.
  bool listed_failed = false;
  for (const auto& d : o.record["distributions"])
    if (d["trial"] == first["trial"] && d["distribution"] == first["distribution"]) listed_failed = !d["passed"].get<bool>();
  EXPECT_TRUE(listed_failed) << o.record["distributions"].dump();
}

// A consistently wrong candidate fails every identical re-run: wrong_output as before, the re-runs
// recorded; one wrong only on D4 (the hidden distribution's catch) stays wrong_output too. Under
// --protocol kernelbench (upstream) nothing is re-run.
TEST(Eval, AConsistentlyWrongCandidateStaysWrongOutputAfterReruns) {
  fs::path dir = temp_dir("consistently_wrong");
  for (const char* s : {"examples/level1/19_ReLU/cpu_off_by_one.py", "examples/level1/19_ReLU/cpu_abs.py"}) {
    Outcome o = run_kbv({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                         (kSource / s).string(), "--device", "cpu", "--trials", "1", "--json",
                         (dir / "r.json").string()},
                        dir / "r.json");
    ASSERT_EQ(o.code, 0) << o.output;
    EXPECT_EQ(o.record["verdict"], "wrong_output") << s << ": " << o.record["message"];
    EXPECT_EQ(o.record["protocol"]["flaky_reruns"], 2) << "the kbv protocol's default";
    ASSERT_TRUE(o.record.contains("flaky")) << o.record.dump(2);
    EXPECT_TRUE(o.record["flaky"]["passed"].empty()) << o.record["flaky"].dump();
    ASSERT_EQ(o.record["flaky"]["failed"].size(), 3u) << "the check and its 2 re-runs: " << o.record["flaky"].dump();
    for (int a = 0; a < 3; ++a) EXPECT_EQ(o.record["flaky"]["failed"][a]["attempt"], a);
    const std::string m = o.record["message"];
    EXPECT_NE(m.find("failed again on 2 identical re-runs"), std::string::npos) << m;
    EXPECT_EQ(o.record["metadata"]["correctness_issue"], m);
  }
  Outcome k = run_kbv({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                       (kSource / "examples/level1/19_ReLU/cpu_off_by_one.py").string(), "--device", "cpu",
                       "--protocol", "kernelbench", "--json", (dir / "k.json").string()},
                      dir / "k.json");
  ASSERT_EQ(k.code, 0) << k.output;
  EXPECT_EQ(k.record["verdict"], "wrong_output") << k.record["message"];
  EXPECT_EQ(k.record["protocol"]["flaky_reruns"], 0);
  EXPECT_FALSE(k.record.contains("flaky")) << k.record.dump(2);
}

// --protocol kernelbench reproduces upstream: cheats that the hidden distributions and the L2
// floor catch pass there (the mirage KernelBench-Verified measured).
TEST(Eval, KernelBenchProtocolLetsTheMiragePass) {
  fs::path dir = temp_dir("kernelbench_protocol");
  for (const char* s : {"examples/level1/19_ReLU/cpu_identity.py", "examples/level1/23_Softmax/cpu_zeros.py"}) {
    std::string problem = std::string(s).find("Softmax") != std::string::npos ? "problems/level1/23_Softmax.py"
                                                                              : "problems/level1/19_ReLU.py";
    Outcome o = run_kbv({"eval", "--problem", (kSource / problem).string(), "--solution", (kSource / s).string(),
                         "--device", "cpu", "--protocol", "kernelbench", "--json", (dir / "r.json").string()},
                        dir / "r.json");
    ASSERT_EQ(o.code, 0) << o.output;
    EXPECT_EQ(o.record["verdict"], "correct") << s << ": " << o.record["message"];
    EXPECT_EQ(o.record["protocol"]["name"], "kernelbench-paper") << "kernelbench is the paper protocol's alias";
    EXPECT_EQ(o.record["protocol"]["atol"], 1e-2);
    EXPECT_EQ(o.record["distributions"].size(), 5u) << "5 trials of D1 only";
    EXPECT_EQ(o.record["metadata"]["correctness_trials"], "(5 / 5)");
  }
}

// --protocol kernelbench-verified: the 5 standard trials from seed 42 pass an identity "ReLU" (its
// inputs are positive), then the hidden configs, drawn from the last trial's stream, catch it at D4
// (x-1), as KernelBench-Verified does. The record carries the protocol's knobs and upstream's labels.
TEST(Eval, KernelBenchVerifiedProtocolRunsTheHiddenConfigs) {
  fs::path dir = temp_dir("kernelbench_verified_protocol");
  const std::string problem = (kSource / "problems/level1/19_ReLU.py").string();
  Outcome honest = run_kbv({"eval", "--problem", problem, "--solution",
                            (kSource / "examples/level1/19_ReLU/cpu_honest.py").string(), "--device", "cpu",
                            "--protocol", "kernelbench-verified", "--timing", "off", "--json",
                            (dir / "honest.json").string()},
                           dir / "honest.json");
  ASSERT_EQ(honest.code, 0) << honest.output;
  const json& r = honest.record;
  EXPECT_EQ(r["verdict"], "correct") << r["message"];
  const json& p = r["protocol"];
  EXPECT_EQ(p["name"], "kernelbench-verified");
  EXPECT_EQ(p["version"], "3fdf6fe");
  EXPECT_EQ(p["atol"], 1e-3);
  EXPECT_EQ(p["rtol"], 1e-3);
  EXPECT_TRUE(p["rel_l2"].is_null());
  EXPECT_EQ(p["hidden_configs"], "kernelbench-verified");
  EXPECT_EQ(p["hidden_reference_failure_passes"], true);
  EXPECT_EQ(p["cast_integer_inputs"], true);
  EXPECT_EQ(p["reference_precision"], "torch-default");
  EXPECT_EQ(p["runtime_audit"], "none");
  EXPECT_EQ(p["seed_policy"], "kernelbench (trial seeds drawn from seed 42)");
  ASSERT_EQ(r["distributions"].size(), 9u) << "5 standard trials, then D1..D4";
  for (int i = 0; i < 5; ++i) EXPECT_EQ(r["distributions"][i]["distribution"], "D1");
  const json last_seed = r["distributions"][4]["seed"];
  ASSERT_TRUE(last_seed.is_number());
  for (int i = 0; i < 4; ++i) {
    const json& h = r["distributions"][5 + i];
    EXPECT_EQ(h["trial"], 5);
    EXPECT_EQ(h["distribution"], std::string("D") + std::to_string(i + 1));
    EXPECT_EQ(h["hidden_config"], "config_" + std::to_string(i + 1));
    EXPECT_EQ(h["draws_before"], i);
    EXPECT_EQ(h["seed"], last_seed) << "hidden configs continue the last trial's stream";
    EXPECT_EQ(h["passed"], true);
  }
  EXPECT_EQ(r["metadata"]["correctness_trials"], "(9 / 9)");

  Outcome identity = run_kbv({"eval", "--problem", problem, "--solution",
                              (kSource / "examples/level1/19_ReLU/cpu_identity.py").string(), "--device", "cpu",
                              "--protocol", "kernelbench-verified", "--timing", "off", "--json",
                              (dir / "identity.json").string()},
                             dir / "identity.json");
  ASSERT_EQ(identity.code, 0) << identity.output;
  const json& w = identity.record;
  EXPECT_EQ(w["verdict"], "wrong_output");
  ASSERT_EQ(w["distributions"].size(), 9u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(w["distributions"][i]["passed"], true) << i;
  EXPECT_EQ(w["distributions"][8]["passed"], false) << "D4 (x-1): relu(-x) is not -x";
  EXPECT_NE(w["message"].get<std::string>().find("hidden config_4 D4"), std::string::npos) << w["message"];
}

// Ctrl-C: the run stops, says where it stands, and what was stored stays stored.
TEST(Run, InterruptStopsCleanlyAndKeepsWhatFinished) {
  fs::path run = temp_dir("interrupt");
  fs::copy_file(kSource / "examples/level1/19_ReLU/cpu_identity.py", run / "level_1_problem_19_sample_0_kernel.py");
  fs::copy_file(kSource / "examples/level1/19_ReLU/cpu_abs.py", run / "level_1_problem_19_sample_1_kernel.py");
  fs::copy_file(kSource / "examples/level1/19_ReLU/cpu_infinite_loop.py", run / "level_1_problem_19_sample_2_kernel.py");
  kbv::SpawnOptions so;
  so.argv = {KBV_BINARY, "eval", "--problems", (kSource / "problems").string(), "--run", run.string(), "--device",
             "cpu", "--trials", "1"};
  so.env_set = {{"KBV_CACHE_DIR", KBV_TEST_CACHE}};
  so.protocol_pipes = false;
  so.log_path = run / "log.txt";
  std::string err;
  auto child = kbv::spawn(so, err);
  ASSERT_TRUE(child) << err;
  // Wait until the second sample is reported (its record is stored before the line is printed, and
  // the hang starts right after it), then interrupt while the hang is in flight. Watching only
  // eval_results.json raced: it is written before the next sample starts, so a Ctrl-C sent then
  // found nothing in flight (seen in CI).
  bool sent = false;
  for (int i = 0; i < 1200 && !sent; ++i) {
    if (kbv::tail_file(run / "log.txt", 8000).find("[2/3] level 1 problem 19") != std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      ::kill(child->pid, SIGINT);
      sent = true;
    }
    if (!sent) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(sent) << kbv::tail_file(run / "log.txt", 4000);
  auto status = kbv::wait_for(child->pid, std::chrono::seconds(20));
  ASSERT_TRUE(status) << "kbv did not stop within 20 s of Ctrl-C";
  EXPECT_TRUE(status->exited);
  EXPECT_EQ(status->code, 130);
  std::string log = kbv::tail_file(run / "log.txt", 4000);
  EXPECT_NE(log.find("interrupted: 2 of 3 evaluated and stored"), std::string::npos) << log;
  EXPECT_NE(log.find("abandoned, not stored: level 1 problem 19 sample 2"), std::string::npos) << log;
  json results = json::parse(kbv::read_file(run / "eval_results.json").text);
  EXPECT_EQ(results["19"].size(), 2u) << "the pair in flight is not recorded";
}

// A run folder: eval_results.json in KernelBench's shape, resumable after a kill.
// Two run folders with the same failing source: the second reuses the first's cached build
// outcome, and its message names its own file, not the other run's ("cache the outcome, not the
// message"). In batch mode the build's wall time is the record's build phase too.
TEST(Run, ACachedBuildFailureNamesTheFileBeingEvaluated) {
  const std::string name = "level_1_problem_19_sample_0_kernel.py";
  std::vector<fs::path> runs = {temp_dir("cached_failure_a"), temp_dir("cached_failure_b")};
  std::vector<kbv::Record> records;
  // A source of this test's own (a comment makes its hash new), so the first run really compiles
  // whatever other tests left in the shared build cache.
  const std::string source = kbv::read_file(kSource / "examples/level1/19_ReLU/cpu_compile_error.py").text +
                             "\n# Run.ACachedBuildFailureNamesTheFileBeingEvaluated " +
                             std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) + "\n";
  for (const auto& run : runs) {
    ASSERT_EQ(kbv::write_file_atomic(run / name, source), "");
    Outcome o = run_kbv({"eval", "--problems", (kSource / "problems").string(), "--run", run.string(), "--level", "1",
                         "--device", "cpu", "--trials", "1"});
    ASSERT_EQ(o.code, 0) << o.output;
    json results = json::parse(kbv::read_file(run / "eval_results.json").text, nullptr, false);
    ASSERT_TRUE(results.is_object()) << o.output;
    const std::string error = results["19"][0]["metadata"].value("compilation_error", "");
    EXPECT_NE(error.find((run / name).string()), std::string::npos) << error;
    for (const auto& other : runs) {
      if (other != run) {
        EXPECT_EQ(error.find(other.filename().string()), std::string::npos) << error;
      }
    }
    std::string e;
    auto store = kbv::Store::open(run / "kbv.sqlite", e, kbv::Store::Mode::read_only);
    ASSERT_TRUE(store) << e;
    std::vector<kbv::Record> latest = store->latest();
    ASSERT_EQ(latest.size(), 1u);
    records.push_back(latest[0]);
  }
  ASSERT_TRUE(records[0].build && records[1].build);
  EXPECT_TRUE(records[1].build->cached);
  for (const auto& r : records) {
    EXPECT_NE(r.message.find(r.solution), std::string::npos) << r.message;
    ASSERT_TRUE(r.phase_seconds && r.phase_seconds->count("build"));
    EXPECT_DOUBLE_EQ(r.phase_seconds->at("build"), r.build->seconds) << "the build queue's time is the build phase";
  }
  EXPECT_GT(records[0].build->seconds, 1.0) << "a real compile, not the queue's hand-over";
}

// On the CPU, kbv's builds queued ahead of later samples do not run beside the timing of this one
// (util/pause.h, docs/TIMING.md "kbv's own builds"): they are stopped while it is timed. Sample 1's
// module body, which its build worker runs, waits until its process is continued (SIGCONT) or 300 s
// have passed; sample 0 (the problem's Model: nothing to compile; under the upstream protocol,
// which has no runtime audit to reject it) is evaluated and timed meanwhile.
// Its record says one build was stopped, and the continue that ended the timing let sample 1 build.
TEST(Run, BuildsQueuedAheadAreStoppedWhileACpuSampleIsTimed) {
  const fs::path run = temp_dir("builds_stopped");
  const std::string as_candidate = kbv::e2e::model_as_candidate(kSource / "problems/level1/19_ReLU.py");
  ASSERT_FALSE(as_candidate.empty());
  // Only the build waits: it leaves a file in its build folder, which the candidate's load sees.
  const std::string waits =
      as_candidate +
      "\nimport os, signal, time\n"
      "_ext = os.environ.get('TORCH_EXTENSIONS_DIR', '')\n"
      "if _ext and not os.path.exists(os.path.join(_ext, 'continued')):\n"
      "    _continued = []\n"
      "    signal.signal(signal.SIGCONT, lambda *_: _continued.append(1))\n"
      "    _start = time.monotonic()\n"
      "    while not _continued and time.monotonic() - _start < 300:\n"
      "        time.sleep(0.05)\n"
      "    open(os.path.join(_ext, 'continued'), 'w').close()\n"
      "# " + std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) +  // a fresh build
      "\n";
  ASSERT_EQ(kbv::write_file_atomic(run / fmt_sample("1", "19", 0), as_candidate), "");
  ASSERT_EQ(kbv::write_file_atomic(run / fmt_sample("1", "19", 1), waits), "");
  const auto began = std::chrono::steady_clock::now();
  Outcome o = run_kbv({"eval", "--problems", (kSource / "problems").string(), "--run", run.string(), "--level", "1",
                       "--device", "cpu", "--trials", "1", "--policy", "lenient", "--protocol", "kernelbench",
                       "--time-cap", "0.2", "--build-jobs", "2"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  ASSERT_EQ(o.code, 0) << o.output;
  std::string e;
  std::map<int, json> records = run_records(run, e);
  ASSERT_EQ(e, "");
  ASSERT_EQ(records.size(), 2u) << o.output;
  const json& first = records[0];
  ASSERT_EQ(first["verdict"], "correct") << first.dump(1);
  ASSERT_TRUE(first.contains("timing")) << first.dump(1);
  EXPECT_EQ(first["timing"].value("builds_stopped", 0), 1) << "sample 1's build ran beside the timing: "
                                                           << first["timing"].dump(1);
  EXPECT_EQ(records[1]["verdict"], "correct") << records[1].dump(1);
  EXPECT_FALSE(records[1]["timing"].contains("builds_stopped")) << "nothing was left to build";
  EXPECT_LT(took, 240) << "sample 1's build waited for a continue that never came";
}

// kbv selftest (the README's first command ends with it) evaluates an entry under the protocol the
// entry names, as the corpus tests do: cpu_fixed_loop_short.py forges the call count that only
// kernelbench-verified fixes, so under kbv's own protocol it was judged correct (the CPU main job,
// 2026-12-07). A protocol kbv does not know is the manifest's error, named, before anything runs.
TEST(Selftest, AnEntrysProtocolAppliesToThatEntry) {
  const fs::path root = temp_dir("selftest_protocol");
  std::error_code ec;
  for (const char* folder : {"problems", "examples"}) fs::create_directory_symlink(kSource / folder, root / folder, ec);
  fs::create_directories(root / "corpus");
  json entry = {{"problem", "problems/level1/19_ReLU.py"},
                {"solution", "examples/level1/19_ReLU/cpu_fixed_loop_short.py"},
                {"device", "cpu"},
                {"protocol", "kernelbench-verified"},
                {"expected", "rejected"},
                {"cheat", "T14"},
                {"audit", "timing_mismatch"}};
  ASSERT_EQ(kbv::write_file_atomic(root / "corpus" / "manifest.json", json::array({entry}).dump(1)), "");
  const fs::path summary = root / "summary.json";
  Outcome o = run_kbv({"selftest", "--manifest", (root / "corpus" / "manifest.json").string(), "--device", "cpu",
                       "--time-cap", "0.5", "--json", summary.string()},
                      summary);
  EXPECT_EQ(o.code, 0) << o.output;
  ASSERT_TRUE(o.record.is_object()) << o.output;
  ASSERT_EQ(o.record["entries"].size(), 1u) << o.record.dump(1);
  const json& row = o.record["entries"][0];
  EXPECT_EQ(row["protocol"], "kernelbench-verified") << row.dump(1);
  EXPECT_EQ(row["got"], "rejected") << row.dump(1);
  EXPECT_TRUE(row["match"].get<bool>()) << row.dump(1);
  EXPECT_NE(o.output.find("cpu_fixed_loop_short.py (kernelbench-verified)"), std::string::npos) << o.output;

  entry["protocol"] = "kernelbench-nightly";
  ASSERT_EQ(kbv::write_file_atomic(root / "corpus" / "manifest.json", json::array({json::object(), entry}).dump(1)), "");
  o = run_kbv({"selftest", "--manifest", (root / "corpus" / "manifest.json").string(), "--device", "cpu"});
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("entry 2 (examples/level1/19_ReLU/cpu_fixed_loop_short.py): protocol:"), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("kernelbench-nightly"), std::string::npos) << o.output;
}

// A host failure is never the candidate's result (docs/RECORD.md, harness_error). As root under
// --sandbox strict, a sample file that uid 65534 cannot read cannot be handed to a confined build
// worker: the worker cannot start. That was stored as the candidate's compile_error; now the sample
// is left for a re-run (exit 1, nothing stored), kbv eval of the pair exits 3 writing no record,
// and once the host can run it the re-run evaluates and stores it.
TEST(Run, ABuildWorkerThatCannotStartIsLeftForARerunNotStoredAsTheCandidates) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only then does the sandbox run workers as uid 65534";
  const fs::path run = temp_dir("host_failure");
  const fs::path sample = run / "level_1_problem_19_sample_0_kernel.py";
  const std::string source = kbv::read_file(kSource / "examples/level1/19_ReLU/cpu_honest.py").text +
                             "\n# Run.ABuildWorkerThatCannotStart " +
                             std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) + "\n";
  ASSERT_EQ(kbv::write_file_atomic(sample, source), "");
  fs::permissions(sample, fs::perms::owner_read | fs::perms::owner_write);
  const std::vector<std::string> args = {"eval", "--problems", (kSource / "problems").string(), "--run",
                                         run.string(), "--level", "1", "--device", "cpu", "--trials", "1",
                                         "--timing", "off", "--sandbox", "strict"};
  Outcome o = run_kbv(args);
  if (o.code == 2 && o.output.find("--sandbox strict") != std::string::npos)
    GTEST_SKIP() << "no strict sandbox on this host: " << o.output;
  EXPECT_EQ(o.code, 1) << o.output;
  EXPECT_NE(o.output.find("not evaluated"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("cannot start the build worker"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("compile_error"), std::string::npos) << o.output;
  auto stored = [&run] {
    std::string e;
    auto store = kbv::Store::open(run / "kbv.sqlite", e, kbv::Store::Mode::read_only);
    return store ? store->latest() : std::vector<kbv::Record>{};
  };
  EXPECT_TRUE(stored().empty()) << "the host's failure was stored as the candidate's result";

  const fs::path out = run / "record.json";
  Outcome one = run_kbv({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                         sample.string(), "--device", "cpu", "--trials", "1", "--timing", "off", "--sandbox",
                         "strict", "--json", out.string()});
  EXPECT_EQ(one.code, 3) << one.output;
  EXPECT_NE(one.output.find("the host failed, not the candidate"), std::string::npos) << one.output;
  EXPECT_FALSE(fs::exists(out)) << "a record was written for the host's failure";

  fs::permissions(sample, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                              fs::perms::others_read);
  Outcome again = run_kbv(args);
  EXPECT_EQ(again.code, 0) << again.output;
  std::vector<kbv::Record> latest = stored();
  ASSERT_EQ(latest.size(), 1u) << again.output;
  EXPECT_EQ(latest[0].verdict, kbv::Verdict::correct) << latest[0].message;
}

TEST(Run, EvalResultsAndResumeAfterKill) {
  fs::path run = temp_dir("run");
  auto copy = [&](const std::string& from, const std::string& to) {
    fs::copy_file(kSource / from, run / to, fs::copy_options::overwrite_existing);
  };
  copy("examples/level1/19_ReLU/cpu_identity.py", "level_1_problem_19_sample_0_kernel.py");
  copy("examples/level1/19_ReLU/cpu_abs.py", "level_1_problem_19_sample_1_kernel.py");
  copy("examples/level1/23_Softmax/cpu_zeros.py", "level_1_problem_23_sample_0_kernel.py");
  copy("examples/level1/19_ReLU/cpu_raises.py", "level_1_problem_2_sample_0_kernel.py");
  std::vector<std::string> args = {"eval", "--problems", (kSource / "problems").string(), "--run", run.string(),
                                   "--level", "1", "--device", "cpu", "--trials", "1"};

  // Start, kill it as soon as the first record is stored, then resume.
  std::vector<std::string> argv = {KBV_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  kbv::SpawnOptions so;
  so.argv = argv;
  so.env_set = {{"KBV_CACHE_DIR", KBV_TEST_CACHE}};
  so.protocol_pipes = false;
  so.log_path = run / "first.log";
  std::string err;
  auto child = kbv::spawn(so, err);
  ASSERT_TRUE(child) << err;
  bool killed = false;
  for (int i = 0; i < 1200; ++i) {
    if (kbv::try_wait(child->pid)) break;
    if (fs::exists(run / "eval_results.json")) {
      kbv::FileText t = kbv::read_file(run / "eval_results.json");
      json j = json::parse(t.text, nullptr, false);
      if (j.is_object() && !j.empty()) {
        kbv::kill_group(child->pid);
        killed = true;
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(killed) << kbv::tail_file(run / "first.log", 4000);
  json partial = json::parse(kbv::read_file(run / "eval_results.json").text);
  size_t first_count = 0;
  for (auto& [pid, samples] : partial.items()) first_count += samples.size();
  ASSERT_GE(first_count, 1u);

  Outcome o = run_kbv(args);
  ASSERT_EQ(o.code, 0) << o.output;
  // The store is written just before eval_results.json, so a kill between the two leaves one more
  // stored than the file shows; never fewer.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.output, m, std::regex("(\\d+) already stored"))) << o.output;
  EXPECT_GE(std::stoul(m[1].str()), first_count) << o.output;
  EXPECT_LE(std::stoul(m[1].str()), first_count + 1) << o.output;
  nlohmann::ordered_json results = nlohmann::ordered_json::parse(kbv::read_file(run / "eval_results.json").text);
  // Keys sorted numerically: 2 before 19 before 23.
  std::vector<std::string> keys;
  for (auto& [k, v] : results.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"2", "19", "23"}));
  ASSERT_EQ(results["19"].size(), 2u);
  for (const auto& s : results["19"]) {
    EXPECT_EQ(s["compiled"], true);
    EXPECT_EQ(s["correctness"], false);
    for (const char* k : {"sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"})
      EXPECT_TRUE(s.contains(k)) << k;
  }
  EXPECT_EQ(results["19"][0]["sample_id"], 0);
  EXPECT_EQ(results["19"][1]["sample_id"], 1);
  // Problem 2 does not exist in problems/level1: a result, and the batch went on.
  EXPECT_EQ(results["2"][0]["correctness"], false);
  EXPECT_NE(results["2"][0]["metadata"].dump().find("no problem with id 2"), std::string::npos);

  // A third run does nothing new.
  Outcome again = run_kbv(args);
  ASSERT_EQ(again.code, 0);
  EXPECT_NE(again.output.find("0 sample(s) to evaluate"), std::string::npos) << again.output;
}

// GPU: a candidate with an illegal memory access poisons its CUDA context; the next candidate,
// evaluated right after it in the same run, must still pass.
TEST(Gpu, IllegalMemoryAccessDoesNotAffectTheNextCandidate) {
  if (!gpu_visible()) GTEST_SKIP() << "needs a GPU";
  prebuild("examples/level1/19_ReLU/cuda_illegal_access.py", "cuda");
  prebuild("examples/level1/19_ReLU/cuda_honest.py", "cuda");
  GpuLock lock;
  fs::path run = temp_dir("gpu_run");
  fs::copy_file(kSource / "examples/level1/19_ReLU/cuda_illegal_access.py", run / "level_1_problem_19_sample_0_kernel.py");
  fs::copy_file(kSource / "examples/level1/19_ReLU/cuda_honest.py", run / "level_1_problem_19_sample_1_kernel.py");
  Outcome o = run_kbv({"eval", "--problems", (kSource / "problems").string(), "--run", run.string(), "--level", "1",
                       "--gpus", "0", "--trials", "2"});
  ASSERT_EQ(o.code, 0) << o.output;
  json results = json::parse(kbv::read_file(run / "eval_results.json").text);
  ASSERT_EQ(results["19"].size(), 2u) << results.dump(2);
  EXPECT_EQ(results["19"][0]["correctness"], false);
  EXPECT_NE(results["19"][0]["metadata"].dump().find("illegal"), std::string::npos) << results["19"][0].dump(2);
  EXPECT_EQ(results["19"][1]["correctness"], true) << results["19"][1].dump(2);
}

// Three problems, not the suite (a worker each: the whole level 1 took 110 s of CI time; every
// problem of the suite is instantiated at its CPU sizes by LintProblems.BuiltInSuite...).
TEST(Problems, ListsShapesAtCpuSizes) {
  fs::path dir = temp_dir("problems_cpu_sizes");
  for (const char* level : {"level1", "level2"}) fs::create_directories(dir / level);
  for (const char* f : {"26_GELU_.py", "95_CrossEntropyLoss.py", "1_Square_matrix_multiplication_.py"})
    fs::copy_file(kSource / "problems/level1" / f, dir / "level1" / f);
  fs::copy_file(kSource / "problems/level2/101_Gemm_Add_ReLU.py",
                dir / "level2/101_Gemm_Add_ReLU.py");
  Outcome o = run_kbv({"problems", dir.string(), "--level", "1", "--device", "cpu"});
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("26_GELU_.py"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("float32["), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("int64["), std::string::npos) << "CrossEntropy targets stay integers: " << o.output;
  EXPECT_EQ(o.output.find("101_Gemm_Add_ReLU"), std::string::npos) << "--level 1 lists level 1 only: " << o.output;
}

TEST(Problems, JsonListForScripts) {
  fs::path dir = temp_dir("problems_json");
  fs::create_directories(dir / "level1");
  fs::copy_file(kSource / "problems/level1/26_GELU_.py", dir / "level1/26_GELU_.py");
  std::ofstream(dir / "level1/3_Broken.py") << "raise SyntaxError('no')\n";
  Outcome o = run_kbv({"problems", dir.string(), "--device", "cpu", "--json"});
  ASSERT_EQ(o.code, 0) << o.output;
  json rows = json::parse(o.output.substr(o.output.find('[')), nullptr, false);
  ASSERT_TRUE(rows.is_array()) << o.output;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["id"], 3);
  EXPECT_TRUE(rows[0].contains("error")) << "a broken problem is listed with its error";
  EXPECT_EQ(rows[1]["name"], "26_GELU_.py");
  EXPECT_EQ(rows[1]["inputs"][0]["dtype"], "float32");
}

// tests/data/shapes: a 4 PiB input listed from a meta-device draw (a real draw cannot be made),
// a get_inputs() that needs values drawn for real with the reason, and --cpu-sizes.
TEST(Problems, ListsShapesWithoutAllocatingAndSaysWhenItDrawsValues) {
  Outcome o = run_kbv({"problems", (kSource / "tests/data/shapes").string(), "--device", "cpu", "--json"});
  ASSERT_EQ(o.code, 0) << o.output;
  json rows = json::parse(o.output.substr(o.output.find('[')), nullptr, false);
  ASSERT_TRUE(rows.is_array()) << o.output;
  std::map<std::string, json> by_name;
  for (const auto& r : rows) by_name[r["name"].get<std::string>()] = r;
  const json& huge = by_name["1_Huge_input_ReLU.py"];
  ASSERT_TRUE(huge.contains("inputs")) << huge.dump(2);
  EXPECT_EQ(huge["inputs"][0]["sizes"], json::array({int64_t{1} << 40, 1024})) << huge.dump(2);
  EXPECT_EQ(huge["draw"], "meta") << huge.dump(2);
  const json& ce = by_name["3_Cross_entropy_integer_targets.py"];
  EXPECT_EQ(ce["inputs"][1]["dtype"], "int64") << ce.dump(2);
  EXPECT_EQ(ce["draw"], "meta");
  const json& values = by_name["4_Data_dependent_inputs.py"];
  EXPECT_EQ(values["draw"], "real") << values.dump(2);
  EXPECT_NE(values.value("draw_note", "").find(".item()"), std::string::npos) << values.dump(2);
  EXPECT_EQ(values["inputs"][0]["sizes"][1], 16) << values.dump(2);
  // The Model is built on the meta device (a 4 TiB Linear lists without its weight), for real only
  // where that fails, and the row says why.
  EXPECT_EQ(huge["model"], "meta") << huge.dump(2);
  const json& weight = by_name["8_Huge_weight.py"];
  EXPECT_EQ(weight["model"], "meta") << weight.dump(2);
  EXPECT_EQ(weight["inputs"][0]["sizes"], json::array({2, 1 << 20})) << weight.dump(2);
  const json& init_values = by_name["7_Huge_weight_and_init_values.py"];
  EXPECT_FALSE(init_values.contains("inputs")) << init_values.dump(2);
  EXPECT_NE(init_values.value("error", "").find("building the reference Model failed (for real, after the Model "
                                                 "does not build on the meta device"),
            std::string::npos)
      << init_values.dump(2);

  // Reduced sizes: the batch shrinks, the softmax's row stays.
  Outcome r = run_kbv({"problems", (kSource / "tests/data/shapes").string(), "--device", "cpu",
                       "--json", "--cpu-sizes", "auto"});
  ASSERT_EQ(r.code, 0) << r.output;
  json reduced = json::parse(r.output.substr(r.output.find('[')), nullptr, false);
  ASSERT_TRUE(reduced.is_array()) << r.output;
  for (const auto& row : reduced) {
    if (row["name"] != "2_Softmax_wide_rows.py") continue;
    EXPECT_EQ(row["inputs"][0]["sizes"], json::array({32, 65536})) << row.dump(2);
    EXPECT_NE(row.value("sizes", "").find("kept: dim=65536 (_softmax)"), std::string::npos) << row.dump(2);
  }
}

// Precision modes (docs/PRECISION.md), on the CPU: bf16 runs there.
// Untimed: the subject is the judgement of the checks; the corpus times the same bf16 evaluation
// (examples/manifest.json, cpu_any_dtype.py under bf16).
TEST(Precision, Bf16CandidateIsJudgedInBf16WithTheReferenceError) {
  fs::path out = temp_dir("bf16_any_dtype") / "r.json";
  Outcome o = run_kbv({"eval", "--problem", (kSource / "problems/level1/1_Square_matrix_multiplication_.py").string(),
                       "--solution", (kSource / "examples/level1/1_Square_matrix_multiplication_/cpu_any_dtype.py").string(),
                       "--device", "cpu", "--trials", "1", "--precision", "bf16", "--timing", "off", "--json",
                       out.string()},
                      out);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "correct") << o.record["message"];
  EXPECT_EQ(o.record["precision"], "bf16");
  EXPECT_EQ(o.record["protocol"]["precision"], "bf16");
  EXPECT_EQ(o.record["protocol"]["atol"], 1e-2);
  EXPECT_EQ(o.record["protocol"]["rel_l2"], 1e-2);
  ASSERT_TRUE(o.record.contains("reference_error")) << o.record.dump(2);
  const json& e = o.record["reference_error"][0];
  EXPECT_EQ(e["dtype"], "bfloat16");
  // A bf16 GEMM of 64-long dot products differs from fp32 by bf16 rounding: within the tolerance, not zero.
  EXPECT_GT(e["max_abs_error"].get<double>(), 0.0) << e.dump();
  EXPECT_LE(e["tolerance_used"].get<double>(), 1.0) << e.dump();
  for (const auto& d : o.record["distributions"]) {
    ASSERT_TRUE(d.contains("reference_error")) << d.dump();
    // The candidate's output is compared in bf16: the comparison saw bf16 values.
    EXPECT_TRUE(d["passed"].get<bool>()) << d.dump();
  }
}

TEST(Precision, Fp32OnlyKernelUnderBf16SaysItDoesNotAcceptBf16) {
  fs::path out = temp_dir("bf16_fp32_only") / "r.json";
  Outcome o = run_kbv({"eval", "--problem", (kSource / "problems/level1/1_Square_matrix_multiplication_.py").string(),
                       "--solution", (kSource / "examples/level1/1_Square_matrix_multiplication_/cpu_fp32_only.py").string(),
                       "--device", "cpu", "--trials", "1", "--precision", "bf16", "--json", out.string()},
                      out);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record["verdict"], "runtime_error");
  std::string m = o.record["message"];
  EXPECT_NE(m.find("does not accept bfloat16 inputs"), std::string::npos) << m;
  EXPECT_NE(m.find("expected scalar type Float"), std::string::npos) << "the original error is quoted: " << m;
  EXPECT_EQ(o.record["metadata"]["dtype_fallback"], true);
  // The same kernel in fp32: correct, no reference error (the reference is the fp32 computation).
  // Untimed: the corpus times this fp32 evaluation (examples/manifest.json).
  fs::path out32 = temp_dir("fp32_fp32_only") / "r.json";
  Outcome f = run_kbv({"eval", "--problem", (kSource / "problems/level1/1_Square_matrix_multiplication_.py").string(),
                       "--solution", (kSource / "examples/level1/1_Square_matrix_multiplication_/cpu_fp32_only.py").string(),
                       "--device", "cpu", "--trials", "1", "--timing", "off", "--json", out32.string()},
                      out32);
  ASSERT_EQ(f.code, 0) << f.output;
  EXPECT_EQ(f.record["verdict"], "correct") << f.record["message"];
  EXPECT_EQ(f.record["precision"], "fp32");
  EXPECT_FALSE(f.record.contains("reference_error"));
  EXPECT_EQ(f.record["protocol"]["atol"], 1e-3);
}

}  // namespace eval_test
