// End-to-end: `kbv lint` (exit codes, one finding per line, JSON) and the static analysis inside
// `kbv eval` (strict rejects before any build, lenient only records).
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support.h"
#include "util/fs.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace lint_test {

using kbv::e2e::kSource;
using kbv::e2e::Outcome;

Outcome kbv_cmd(const std::vector<std::string>& args) { return kbv::e2e::run_kbv(args); }

fs::path temp_dir(const std::string& name) { return kbv::e2e::scratch_dir("lint", name); }

std::string example(const std::string& rel) { return (kSource / "examples" / rel).string(); }

TEST(Lint, CleanFileExitsZero) {
  Outcome o = kbv_cmd({"lint", example("level1/19_ReLU/cpu_honest.py")});
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("cpu_honest.py: clean"), std::string::npos) << o.output;
}

TEST(Lint, RejectedFileExitsOneWithOneFindingPerLine) {
  std::string file = example("level1/19_ReLU/cpu_patch_timers.py");
  Outcome o = kbv_cmd({"lint", file});
  EXPECT_EQ(o.code, 1) << o.output;
  int findings = 0;
  size_t pos = 0;
  while ((pos = o.output.find(file + ":", pos)) != std::string::npos) {
    size_t end = o.output.find('\n', pos);
    std::string line = o.output.substr(pos, end - pos);
    if (line.find(": reject ") != std::string::npos) {
      ++findings;
      EXPECT_NE(line.find("patch_timer (T4): "), std::string::npos) << line;
    }
    pos = end;
  }
  EXPECT_EQ(findings, 5) << o.output;  // perf_counter, monotonic, time, perf_counter_ns, Event.elapsed_time
  EXPECT_NE(o.output.find(file + ":49: reject patch_timer (T4): replaces time.perf_counter"), std::string::npos) << o.output;
}

TEST(Lint, JsonAndLenientPolicy) {
  Outcome o = kbv_cmd({"lint", example("level1/19_ReLU/cpu_torch_relu.py"), "--json", "--policy", "lenient"});
  EXPECT_EQ(o.code, 0) << "lenient never rejects: " << o.output;
  json j = json::parse(o.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << o.output;
  EXPECT_EQ(j["policy"], "lenient");
  EXPECT_EQ(j["rejected"], false);
  ASSERT_EQ(j["findings"].size(), 1u) << j.dump(2);
  const json& f = j["findings"][0];
  EXPECT_EQ(f["rule"], "kernel_not_called");
  EXPECT_EQ(f["severity"], "warn");
  EXPECT_EQ(f["cheat"], "T11");
  EXPECT_NE(f["evidence"].get<std::string>().find("cpu_torch_relu.py:39: return torch.relu(x)"), std::string::npos)
      << f["evidence"];
  ASSERT_EQ(j["units"].size(), 1u);
}

TEST(Lint, UnreadableFileExitsTwo) {
  Outcome o = kbv_cmd({"lint", "/nonexistent/solution.py"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("kbv lint: cannot read /nonexistent/solution.py"), std::string::npos) << o.output;
  Outcome none = kbv_cmd({"lint"});
  EXPECT_EQ(none.code, 2);
  Outcome rules = kbv_cmd({"lint", "--rules"});
  EXPECT_EQ(rules.code, 0);
  EXPECT_NE(rules.output.find("aten_compute"), std::string::npos);
}

TEST(Lint, MarkdownAnswerLinesAreTheAnswerFilesLines) {
  fs::path dir = temp_dir("markdown");
  kbv::FileText py = kbv::read_file(example("level1/19_ReLU/cpu_aten_in_wrapper.py"));
  ASSERT_TRUE(py.ok);
  std::ofstream(dir / "answer.md") << "I wrote a kernel.\n\nHere it is:\n\n```python\n" << py.text << "```\n";
  Outcome o = kbv_cmd({"lint", (dir / "answer.md").string()});
  EXPECT_EQ(o.code, 1) << o.output;
  // at::relu is on line 16 of the .py file; the block starts on line 6 of the answer.
  EXPECT_NE(o.output.find("answer.md:21: reject aten_compute (T11)"), std::string::npos) << o.output;
}

TEST(Eval, StrictPolicyRejectsBeforeBuilding) {
  fs::path dir = temp_dir("strict");
  Outcome o = kbv_cmd({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                       example("level1/19_ReLU/cpu_try_fallback.py"), "--device", "cpu", "--json",
                       (dir / "r.json").string()});
  ASSERT_EQ(o.code, 0) << o.output;
  json r = json::parse(kbv::read_file(dir / "r.json").text, nullptr, false);
  ASSERT_TRUE(r.is_object()) << o.output;
  EXPECT_EQ(r["verdict"], "rejected");
  EXPECT_EQ(r["correctness"], false);
  EXPECT_EQ(r["compiled"], false);
  EXPECT_FALSE(r.contains("build")) << "a rejected candidate is never built";
  EXPECT_TRUE(r["distributions"].empty()) << "nor run";
  EXPECT_EQ(r["protocol"]["policy"], "strict");
  std::string m = r["message"];
  EXPECT_NE(m.find("cpu_try_fallback.py:43: try_fallback (T11)"), std::string::npos) << m;
  ASSERT_FALSE(r["findings"].empty());
  EXPECT_EQ(r["findings"][0]["cheat"], "T11");
}

TEST(Eval, LenientPolicyRunsTheCandidateAndKeepsTheWarnings) {
  fs::path dir = temp_dir("lenient");
  Outcome o = kbv_cmd({"eval", "--problem", (kSource / "problems/level1/19_ReLU.py").string(), "--solution",
                       example("level1/19_ReLU/cpu_try_fallback.py"), "--device", "cpu", "--trials", "1",
                       "--policy", "lenient", "--json", (dir / "r.json").string()});
  ASSERT_EQ(o.code, 0) << o.output;
  json r = json::parse(kbv::read_file(dir / "r.json").text, nullptr, false);
  ASSERT_TRUE(r.is_object()) << o.output;
  // The fallback computes with torch.relu, so the values are right and the static finding only
  // warns; the runtime audit, which no policy turns off, then sees no compute of its own.
  EXPECT_EQ(r["verdict"], "rejected") << r["message"];
  EXPECT_EQ(r["protocol"]["policy"], "lenient");
  ASSERT_EQ(r["findings"].size(), 2u) << r["findings"].dump(2);
  EXPECT_EQ(r["findings"][0]["rule"], "try_fallback");
  EXPECT_EQ(r["findings"][0]["severity"], "warn");
  EXPECT_EQ(r["findings"][1]["rule"], "no_custom_compute");
  EXPECT_EQ(r["findings"][1]["severity"], "reject");
}

}  // namespace lint_test
