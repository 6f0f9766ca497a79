// The command line as a user meets it: usage and input errors are one readable line naming the
// file or flag, and exit 2 (docs/CLI.md, "Exit codes"); a damaged store stops a command.
#include <gtest/gtest.h>

#include <fstream>

#include "store/store.h"
#include "support.h"

namespace kbv::e2e {
namespace cli_test {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Cli, BareKbvListsTheCommandsAndIsAUsageError) {
  Outcome o = run_kbv({}, {}, 30, "");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(has(o.output, "eval")) << o.output;
  EXPECT_TRUE(has(o.output, "lint-problems")) << o.output;
}

TEST(Cli, AnUnknownCommandIsNamedWithTheCommandsThatExist) {
  Outcome o = run_kbv({"evaluate"}, {}, 30, "");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(has(o.output, "unknown command 'evaluate'")) << o.output;
  EXPECT_TRUE(has(o.output, "eval, ")) << o.output;
}

TEST(Cli, AnOutOfRangeValueSaysWhatIsAllowedInOneLine) {
  Outcome o = run_kbv({"eval", "--trials", "0", "--problem", "p.py", "--solution", "s.py"}, {}, 30, "");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(has(o.output, "--trials: must be greater than 0, got 0")) << o.output;
  EXPECT_FALSE(has(o.output, "179769")) << o.output;  // CLI11's range up to DBL_MAX
  Outcome t = run_kbv({"eval", "--timeout-call", "-1", "--problem", "p.py", "--solution", "s.py"}, {}, 30, "");
  EXPECT_EQ(t.code, 2) << t.output;
  EXPECT_TRUE(has(t.output, "--timeout-call: must be greater than 0, got -1")) << t.output;
}

TEST(Cli, ParseErrorsExitWithTheUsageCodeNotCli11s) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"eval", "--bogus"}, {"eval", "--device", "tpu"}, {"report"}, {"eval", "--trials"}}) {
    Outcome o = run_kbv(args, {}, 30, "");
    EXPECT_EQ(o.code, 2) << args[1] << ": " << o.output;
    EXPECT_TRUE(has(o.output, "--help")) << o.output;
  }
}

TEST(Cli, AFileThatCannotBeReadIsAUsageErrorNamingIt) {
  const std::string problem = (kSource / "problems/level1/19_ReLU.py").string();
  const std::string solution = (kSource / "examples/level1/19_ReLU/cpu_honest.py").string();
  Outcome p = run_kbv({"eval", "--problem", "/nonexistent/19_ReLU.py", "--solution", solution}, {}, 30, "");
  EXPECT_EQ(p.code, 2) << p.output;
  EXPECT_TRUE(has(p.output, "--problem /nonexistent/19_ReLU.py: no such file")) << p.output;
  Outcome s = run_kbv({"eval", "--problem", problem, "--solution", "/nonexistent.py"}, {}, 30, "");
  EXPECT_EQ(s.code, 2) << s.output;
  EXPECT_TRUE(has(s.output, "--solution /nonexistent.py: no such file")) << s.output;
  Outcome d = run_kbv({"eval", "--problem", kSource.string(), "--solution", solution}, {}, 30, "");
  EXPECT_EQ(d.code, 2) << d.output;
  EXPECT_TRUE(has(d.output, "a directory")) << d.output;
  Outcome b = run_kbv({"build", "--solution", "/nonexistent.py"}, {}, 30, "");
  EXPECT_EQ(b.code, 2) << b.output;
  EXPECT_TRUE(has(b.output, "/nonexistent.py: no such file")) << b.output;
}

TEST(Cli, AReportFormatKbvDoesNotWriteIsRefused) {
  fs::path dir = scratch_dir("cli", "report_pdf");
  Outcome o = run_kbv({"report", dir.string(), "--out", (dir / "report.pdf").string()}, {}, 30, "");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(has(o.output, "report.pdf: kbv writes .md, .html, .csv or .json")) << o.output;
  EXPECT_FALSE(fs::exists(dir / "report.pdf"));
}

TEST(Cli, ARunFolderWithNothingToEvaluateIsAUsageError) {
  // A sample that names a problem the dataset lacks is recorded (problem_error) and said; with
  // nothing else to evaluate the command exits 2 instead of "0 evaluated".
  fs::path run = scratch_dir("cli", "nothing_to_evaluate");
  fs::copy_file(kSource / "examples/level1/19_ReLU/cpu_honest.py", run / "level_1_problem_999_sample_0_kernel.py");
  Outcome o = run_kbv({"eval", "--device", "cpu", "--problems", (kSource / "problems").string(), "--run", run.string()},
                      {}, 300);
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(has(o.output, "no problem with id 999 in level 1")) << o.output;
  EXPECT_TRUE(has(o.output, "nothing to evaluate")) << o.output;
}

TEST(Cli, ADamagedStoreStopsEvalAndReportAndKeepsTheResultsFile) {
  fs::path run = scratch_dir("cli", "damaged_store");
  fs::copy_file(kSource / "examples/level1/19_ReLU/cpu_honest.py", run / "level_1_problem_19_sample_0_kernel.py");
  {
    std::string error;
    auto store = Store::open(run / "kbv.sqlite", error);
    ASSERT_NE(store, nullptr) << error;
    for (int i = 0; i < 400; ++i)
      ASSERT_EQ(store->put(RecordKey{1, i, 0, "h", "p"},
                           record_from_json({{"level", 1}, {"problem_id", i}, {"pad", std::string(300, 'x')}}).record),
                "");
  }
  {
    std::fstream f(run / "kbv.sqlite", std::ios::in | std::ios::out | std::ios::binary);
    std::string garbage(8 * 4096, '\x5a');
    f.seekp(2 * 4096);
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  const std::string results = "[{\"kept\": true}]\n";
  { std::ofstream(run / "eval_results.json") << results; }
  Outcome e = run_kbv({"eval", "--device", "cpu", "--problems", (kSource / "problems").string(), "--run", run.string()},
                      {}, 300);
  EXPECT_EQ(e.code, 2) << e.output;
  EXPECT_TRUE(has(e.output, "the results store is damaged")) << e.output;
  EXPECT_EQ(read_file(run / "eval_results.json").text, results);
  Outcome r = run_kbv({"report", run.string()}, {}, 60, "");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "the results store is damaged")) << r.output;
}

TEST(Cli, HelpAndVersionExitZero) {
  EXPECT_EQ(run_kbv({"--help"}, {}, 30, "").code, 0);
  EXPECT_EQ(run_kbv({"eval", "--help"}, {}, 30, "").code, 0);
  EXPECT_EQ(run_kbv({"--version"}, {}, 30, "").code, 0);
}

}  // namespace cli_test
}  // namespace kbv::e2e
