// `kbv lint-problems`: finds problems that cannot judge a kernel, before anyone relies on them.
// The reference worker computes statistics of the problem's outputs (op "lint", in C++); this
// module turns them into findings. Rules (docs/PROBLEMS.md):
//   insensitive        another draw's output passes as this draw's: a replayed output passes
//   zeros              an all-zero output passes the protocol's check
//   constant           one constant (the mean of another draw's output) passes
//   nonfinite          NaN or Inf in the reference's output
//   overflow           --precision bf16/fp16: Inf/NaN where the fp32 reference is finite
//   nondeterministic   two calls on the same inputs disagree beyond the tolerance
//   ill_conditioned    the float32 reference fails against the same model in float64
//   dropout            a dropout module in training mode (a new mask every call)
//   integer_valued_float  whole numbers in a floating input: the distributions scale them
//   problem_error      the reference fails (to load, or under a distribution)
//   output_count       two calls return different numbers of outputs
// Notes (never unclean): integer inputs (never scaled, never cast), zeros that pass elementwise
// and fail only the relative-L2 floor, bitwise differences within tolerance, an output that is
// one value throughout under some (not all) distributions (ReLU under D4), a float64 cross-check
// that could not run.
// A problem silences a finding with a stated reason: KBV_LINT_ALLOW = {"rule": "reason"}.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor/run.h"
#include "util/outcome.h"

namespace kbv {

struct ProblemFinding {
  std::string rule;
  std::string severity;                    // "finding" or "note"
  std::vector<std::string> distributions;  // where it was seen ("D1".."D4"); empty: not per distribution
  std::string message;                     // names the file, the distribution and the numbers
  std::string allowed;                     // the problem's stated reason (KBV_LINT_ALLOW), if any
  nlohmann::json to_json() const;
};

// One distribution's lint reply from the reference worker (op "lint"), or its failure.
struct ProblemDraw {
  Distribution distribution;
  nlohmann::json reply;   // the worker's {"ok": true, ...}; empty when it failed
  std::string failure;    // the worker's failure message when it failed
};

// Pure: the findings for one problem from its draws (in protocol order). `path` is how the
// problem is named in messages.
std::vector<ProblemFinding> problem_findings(const std::string& path, const std::vector<ProblemDraw>& draws);

// y = coefficient * x^exponent fitted by least squares on (log x, log y) over positive points;
// `max_residual`: the largest |log y - fitted log y| (natural log). Not ok with fewer than two
// distinct positive x.
struct PowerFit {
  bool ok = false;
  double exponent = 0, coefficient = 0, max_residual = 0;
  double at(double x) const;
};
PowerFit fit_power(const std::vector<std::pair<double, double>>& points);

// True when every finding of severity "finding" carries an allowed reason.
bool problems_clean(const std::vector<ProblemFinding>& findings);

struct ProblemLintOptions {
  std::filesystem::path target;   // a dataset root (level1/...), or one problem file
  std::optional<int> level;
  EvalOptions eval;               // device, worker, timeouts; protocol: tolerance and distributions
  uint64_t seed = 1;              // draws are reproducible: the lint is not adversarial
  int jobs = 1;                   // problems linted at once (one reference worker each)
};

struct ProblemLintResult {
  Outcome outcome;        // input_error: nothing could be linted (bad folder, no worker);
                          // incomplete: some problem has findings; interrupted
  nlohmann::json report;  // {"device", "tolerance", "seed", "problems": [...], "summary": {...}}; null on input_error
};

// Lints every problem; sends each problem's line and findings, and the summary line, through
// `notify` (progress lines).
ProblemLintResult lint_problems(const ProblemLintOptions& options, const Notify& notify);

}  // namespace kbv
