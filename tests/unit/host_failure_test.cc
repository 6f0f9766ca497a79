// A host failure is never the candidate's result (docs/RECORD.md, harness_error): a build,
// reference or candidate worker that cannot start makes a harness_error record, which nothing
// stores, instead of a compile_error, problem_error or runtime_error of the candidate. Without
// Python: the build comes in already failed, as the build queue hands it over.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "record/decide.h"
#include "record/record.h"
#include "supervisor/run.h"

namespace kbv {
namespace host_failure_test {
namespace fs = std::filesystem;

TEST(HostFailure, IsItsOwnVerdictThatJudgesNoCandidate) {
  EXPECT_STREQ(verdict_name(Verdict::harness_error), "harness_error");
  EXPECT_EQ(parse_verdict("harness_error").value_or(Verdict::pending), Verdict::harness_error);
  Record r;
  fail_build(r, "harness_error", "cannot start the build worker: fork: Resource temporarily unavailable");
  EXPECT_EQ(r.verdict, Verdict::harness_error);
  EXPECT_FALSE(r.correctness);
  EXPECT_FALSE(r.judges_candidate());
  EXPECT_FALSE(r.metadata.compilation_error.has_value()) << "not the candidate's compile error";
  Record ref;
  fail_reference(ref, {"harness_error", "cannot start the reference worker: no python"});
  EXPECT_EQ(ref.verdict, Verdict::harness_error);
  EXPECT_FALSE(ref.metadata.problem_error.has_value()) << "not the problem's error";
  Record problem;
  fail_reference(problem, {"problem_error", "19_ReLU.py: loading the problem: NameError"});
  EXPECT_EQ(problem.verdict, Verdict::problem_error);
  EXPECT_TRUE(problem.judges_candidate());
  Record compiled;
  fail_build(compiled, "compile_error", "s.py:3: error: expected ';'");
  EXPECT_EQ(compiled.verdict, Verdict::compile_error);
  EXPECT_TRUE(compiled.judges_candidate());
}

// A worker's reply is a claim the candidate can forge (its code runs in the worker and can write
// the reply channel): a failed reply that names harness_error or interrupted does not take the
// sample out of judgement (examples/level1/19_ReLU/cpu_forge_host_failure.py, cpu_forge_interrupted.py).
TEST(HostFailure, AReplyCannotClaimTheHostsFailureOrAnInterrupt) {
  for (const char* claimed : {"harness_error", "interrupted"}) {
    WorkerFailure forged;
    forged.kind = claimed;
    forged.message = "cannot start the build worker: fork: Resource temporarily unavailable";
    FailureKind built = classify(forged, "compile_error");
    EXPECT_EQ(built.kind, "compile_error") << claimed;
    EXPECT_NE(built.message.find(std::string("claimed ") + claimed), std::string::npos) << built.message;
    Record b;
    fail_build(b, built.kind, built.message);
    EXPECT_EQ(b.verdict, Verdict::compile_error) << claimed;
    EXPECT_TRUE(b.judges_candidate());
    Record c;
    fail_candidate(c, forged, "trial 0 D1 (x1)");
    EXPECT_EQ(c.verdict, Verdict::runtime_error) << claimed;
    EXPECT_TRUE(c.judges_candidate());
  }
  // kbv's own observations still say so: an interrupted channel, a worker that could not start.
  WorkerFailure cut;
  cut.status = WorkerFailure::Status::channel_error;
  cut.interrupted = true;
  EXPECT_EQ(classify(cut, "compile_error").kind, "interrupted");
  WorkerFailure plain;
  plain.kind = "protocol_error";
  EXPECT_EQ(classify(plain, "runtime_error").kind, "protocol_error");
}

// The batch path: the build queue's result of a build worker that could not start reaches
// evaluate_pair, which ends there with harness_error (no reference worker is started for it).
TEST(HostFailure, ABuildWorkerThatCouldNotStartEndsThePairAsAHostFailure) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_host_failure_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path solution = dir / "level_1_problem_19_sample_0_kernel.py";
  std::ofstream(solution) << "import torch\n\n\nclass ModelNew(torch.nn.Module):\n"
                             "    def forward(self, x):\n        return torch.relu(x)\n";
  Pair pair;
  pair.problem_path = dir / "missing_problem.py";  // never read: the pair ends at the build
  pair.solution_path = solution;
  EvalOptions options;
  options.protocol.policy = Policy::lenient;
  Environment env;
  env.device = "cpu";
  env.device_name = "cpu";
  PreparedCandidate prepared = prepare_candidate(solution, options);
  ASSERT_TRUE(prepared.solution.ok) << prepared.solution.error;
  ASSERT_FALSE(prepared.lint.rejected());
  BuildResult built;
  built.kind = "harness_error";
  built.message = "cannot start the build worker: cannot run python in the sandbox (--sandbox strict): the "
                  "mount_namespace layer failed: No such file or directory";
  ReferenceHost reference;
  Record r = evaluate_pair(pair, options, env, reference, &built, &prepared);
  EXPECT_EQ(r.verdict, Verdict::harness_error) << r.message;
  EXPECT_NE(r.message.find("cannot start the build worker"), std::string::npos) << r.message;
  EXPECT_FALSE(r.judges_candidate());
  EXPECT_FALSE(r.compiled);
  EXPECT_FALSE(r.metadata.compilation_error.has_value());
  fs::remove_all(dir);
}

}  // namespace host_failure_test
}  // namespace kbv
