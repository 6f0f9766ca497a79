// The supervisor's side of the compile step (src/compile): a build worker per build, and the
// builds of a batch queued ahead of their evaluations.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "compile/build.h"
#include "compile/queue.h"
#include "problem/problem.h"
#include "supervisor/run.h"

namespace kbv {

// Compiles the candidate in its own (sandboxed) build worker into the content-addressed cache
// (options.cache_dir/build/<key>), or reuses an earlier build's outcome.
// The build as build_candidate asks for it (the toolchain as the build worker would see it).
BuildJob build_job_of(const SolutionSource& solution, const std::filesystem::path& solution_path,
                      const EvalOptions& options, const Environment& env);

BuildResult build_candidate(const SolutionSource& solution, const std::filesystem::path& solution_path,
                            const EvalOptions& options, const Environment& env);

struct BuildItem {
  SolutionSource solution;
  std::filesystem::path path;
  EvalOptions options;
  std::optional<bool> rejected;  // the static analysis' decision when the caller has it (else linted here)
};
// Builds the items on `jobs` threads, in order; a solution that does not read, or that the static
// analysis rejects, is never compiled (its result says so).
std::unique_ptr<BuildQueue> queue_builds(std::vector<BuildItem> items, const Environment& env, int jobs);

}  // namespace kbv
