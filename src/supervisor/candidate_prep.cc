// A candidate read, hashed and linted (PreparedCandidate): done once per sample.
#include "supervisor/run.h"
#include "util/hash.h"

namespace kbv {
namespace fs = std::filesystem;

LintReport lint_candidate(const SolutionSource& solution, const fs::path& solution_path, Policy policy,
                          const std::string& precision) {
  LintOptions o;
  o.policy = policy;
  o.precision = precision;
  o.file = solution_path.string();
  o.base_dir = solution_path.parent_path();
  o.line_offset = solution.first_line - 1;
  return lint_solution(solution.code, o);
}

PreparedCandidate read_candidate(const fs::path& solution_path) {
  PreparedCandidate c;
  c.solution = load_solution(solution_path);
  c.hash = sha256_hex(c.solution.ok ? c.solution.code : "");
  return c;
}

void lint_prepared(PreparedCandidate& c, const fs::path& solution_path, const EvalOptions& options) {
  if (c.solution.ok)
    c.lint = lint_candidate(c.solution, solution_path, options.protocol.policy, options.protocol.precision);
}

PreparedCandidate prepare_candidate(const fs::path& solution_path, const EvalOptions& options) {
  PreparedCandidate c = read_candidate(solution_path);
  lint_prepared(c, solution_path, options);
  return c;
}

}  // namespace kbv
