// Evaluating one (problem, solution) pair, and a whole KernelBench run folder.
#pragma once
#include <atomic>
#include <filesystem>
#include <memory>
#include <future>
#include <thread>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compile/build.h"
#include "lint/lint.h"
#include "problem/problem.h"
#include "record/decide.h"
#include "record/record.h"
#include "supervisor/session.h"
#include "supervisor/verdict.h"
#include "supervisor/warm_pool.h"
#include "util/fs.h"
#include "util/outcome.h"
#include "util/sched.h"

namespace kbv {

struct Timeouts {
  double build_s = 900;      // compiling the candidate (load_inline)
  double load_s = 300;       // loading a problem or constructing ModelNew
  double call_s = 120;       // one forward call of the candidate
  double reference_s = 300;  // one reference draw (inputs + expected outputs) or check
};

// What a result depends on besides the code; read from a reference worker's "hello".
struct Environment {
  std::string torch_version;
  std::string python_version;
  std::string device;        // "cpu" | "cuda"
  std::string device_name;   // "NVIDIA H200" or "cpu"
  bool cuda_available = false;
  int device_count = 0;
  nlohmann::json to_json() const;  // the parts that enter the protocol hash
};

struct EvalOptions {
  Protocol protocol;
  std::string device;                 // "cpu" | "cuda"; empty: cuda when a GPU is visible
  Timeouts timeouts;
  std::filesystem::path cache_dir;    // build cache and logs
  WorkerConfig worker;
  std::optional<int> gpu;             // CUDA_VISIBLE_DEVICES for the workers of this evaluation
  bool fast_build = true;             // --fast-build (compile/pch.h)
  std::string cpu_sizes;              // reference: "" | "auto" | a factor (lint-problems --cpu-sizes)
  // The CPU thread budget (util/sched.h), resolved once where an evaluation begins (evaluate_pair
  // from its pair's CPU lease, a command from its own) and read by every later step: the workers'
  // ATen threads and OpenMP/MKL teams, their CPUs, the timing requests, the baseline key and the
  // record's timing.threads. Empty (0 threads): not resolved, or nothing to budget (timing off,
  // the GPU); the workers' threads are then left as they are.
  CpuBudget cpu;
  bool meta_model = false;            // reference: shapes only, the Model on the meta device (kbv problems)
};

// The CPU budget of a command that loads references outside an evaluation (kbv baseline's
// import/export, lint-problems, list-problems --shapes): this process's affinity, read once.
CpuBudget resolve_cpu_budget(const EvalOptions& options);

// The thread budget every worker of an evaluation on `device` starts with (WorkerTarget::threads):
// that of `options.cpu` once resolved, else the one its CPU lease will have; 0 on the GPU, with
// timing off or with the device not yet known ("").
int worker_threads(const EvalOptions& options, const std::string& device);

// Starts a reference worker once to learn the torch version and whether a GPU is visible.
// With `keep`, the worker is handed back (idle, no problem loaded) to serve as a reference.
std::optional<Environment> probe_environment(const EvalOptions& options, std::string& error,
                                             std::unique_ptr<WorkerProcess>* keep = nullptr);

struct Pair {
  std::filesystem::path problem_path;
  std::filesystem::path solution_path;
  int level = 0;
  int problem_id = 0;
  int sample_id = 0;
  // The problem file's text when the caller read it already (batch mode reads each problem once
  // for all its samples); null: read from problem_path.
  std::shared_ptr<const FileText> problem_text;
};

// Keeps one reference worker loaded with one problem, so consecutive samples of the same
// problem reuse it. Not shared between threads.
class ReferenceHost {
 public:
  ~ReferenceHost();
  // The loaded worker for this problem (started and loaded if needed), or nullptr with the
  // failure in `failure` (kind problem_error or interrupted).
  // `text`: the problem file's text when the caller has it (null: read here).
  WorkerProcess* get(const std::filesystem::path& problem, const EvalOptions& options,
                     msg::LoadProblemReply& load_reply, FailureKind& failure, const FileText* text = nullptr);
  void reset();
  // Takes an idle reference worker (from probe_environment) to load the next problem into.
  void adopt(std::unique_ptr<WorkerProcess> idle);
  // The pre-started candidate workers of this reference (--warm-workers), cleared with it.
  WarmPool& warm() { return warm_; }

 private:
  std::unique_ptr<WorkerProcess> worker_;
  std::string problem_key_;
  msg::LoadProblemReply load_reply_;
  WarmPool warm_;
};

// Static analysis of a candidate (src/lint) as `kbv eval` runs it: evidence names the solution
// file, lines of a Markdown answer's block are the answer file's lines.
LintReport lint_candidate(const SolutionSource& solution, const std::filesystem::path& solution_path, Policy policy,
                          const std::string& precision);

// A candidate read, hashed and linted: done once per sample (batch mode does it before the
// builds, which skip what the lint rejects, and hands it to evaluate_pair).
struct PreparedCandidate {
  SolutionSource solution;
  std::string hash;  // sha256 of the code ("" hashed when it cannot be read), the store key's
  LintReport lint;   // empty when the solution cannot be read
};
PreparedCandidate prepare_candidate(const std::filesystem::path& solution_path, const EvalOptions& options);
// The two halves: read and hash (enough to look the sample up in the store), then lint.
PreparedCandidate read_candidate(const std::filesystem::path& solution_path);
void lint_prepared(PreparedCandidate& candidate, const std::filesystem::path& solution_path, const EvalOptions& options);

// One pair: lint, build, load, trials x distributions, verdict. Never throws; every failure is a record.
// `prepared`: the candidate already read and linted (else done here).
Record evaluate_pair(const Pair& pair, const EvalOptions& options, const Environment& env,
                     ReferenceHost& reference, const BuildResult* prebuilt = nullptr,
                     const PreparedCandidate* prepared = nullptr);

// `kbv eval --problems DIR --run DIR`: every sample of the run, stored and resumable.
struct RunOptions {
  std::filesystem::path problems_dir;
  std::filesystem::path run_dir;
  std::optional<int> level;
  ProblemSelection only;   // --only: samples of other problems are left out
  std::string only_spec;
  std::vector<int> gpus;   // empty: one device (cuda:0 or the CPU)
  int build_jobs = 1;
  EvalOptions eval;
};
// Ok when every pair was evaluated, whatever the verdicts; input_error for an unusable dataset,
// run folder, --only, --gpus or store (also when a result cannot be stored: the run stops);
// interrupted on Ctrl-C. Each sample is a run item (util/outcome.h) for the progress display.
Outcome evaluate_run(const RunOptions& options, const Notify& notify);

// The name of a level's eval_results file in a run folder: eval_results.json, or
// eval_results_level<L>.json when the run has several levels; "_bf16" before ".json" for bf16.
std::string eval_results_name(int level, bool several_levels, const std::string& precision);

// "" when every index of --gpus names a distinct GPU torch sees (env from a probe with every GPU
// visible), else what is wrong with the list.
std::string check_gpus(const std::vector<int>& gpus, const Environment& env);

}  // namespace kbv
