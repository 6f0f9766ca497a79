// One queued job evaluated as `kbv eval --problem P --solution S --json` would (src/queue's
// executor for `kbv worker` and `kbv serve`'s in-process workers): the job's problem and solution
// written into a scratch folder, its options turned into EvalOptions by the caller (the CLI parses
// them with kbv eval's own flags), evaluate_pair, and the record's JSON.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "queue/worker_loop.h"
#include "supervisor/run.h"

namespace kbv {

struct QueueJobContext {
  // The job's options (kbv eval's flags as JSON) -> EvalOptions, or nullopt with the reason.
  std::function<std::optional<EvalOptions>(const nlohmann::json& options, std::string& error)> options_of;
  // Problems and solutions are written here: problems content-addressed (the reference worker of
  // the same problem is reused from one job to the next), solutions per job and removed after.
  std::filesystem::path scratch_dir;
  // A job that names its problem but carries no source: looked up as DIR/<name>.py in these.
  std::vector<std::filesystem::path> problems_dirs;
  std::optional<int> gpu;  // CUDA_VISIBLE_DEVICES of this runner's evaluations
  // kbv worker --role: "all" (build and evaluate, as kbv eval), "build" (the job's build stage:
  // compile, publish the build to `queue`, or complete the job with its build's failure record),
  // "eval" (evaluate with the build from `queue`). With a queue, "all" and "eval" fetch a build
  // from it before compiling themselves.
  std::string role = "all";
  // Role build: put the build in the queue's storage for eval workers on other hosts. False for
  // `kbv serve --build-jobs`, whose eval workers share the builder's cache (the build is there).
  bool publish = true;
  queue::Queue* queue = nullptr;
  Notify notify;  // a build that could not be fetched (and is compiled here)
};

// What a runner did with builds (the worker's summary; the e2e tests read it).
struct HandoffStats {
  long long fetched = 0;    // builds taken from the queue instead of compiling
  long long compiled = 0;   // evaluations that compiled here (no build in the queue nor the cache)
  long long published = 0;  // builds put in the queue (role build)
  long long passed_on = 0;  // build stages handed on without a build (nothing this host can build)
  long long rebuilt = 0;    // fetched builds that ninja compiled again when the candidate loaded them
  long long ahead_compiled = 0;  // build stages that compiled (role build), kept or published
  long long ahead_cached = 0;    // build stages whose build was in this host's cache already
  double ahead_seconds = 0;      // their builds' wall seconds (BuildResult::seconds), summed
};

// Not shared between threads: one per worker loop.
class QueueJobRunner {
 public:
  explicit QueueJobRunner(QueueJobContext context);
  queue::ExecResult run(const queue::Job& job);
  const HandoffStats& handoff() const { return handoff_; }

 private:
  queue::ExecResult build_stage(const Pair& pair, const EvalOptions& options, const Environment& env);
  // The fetched entry's folder ("" when nothing was fetched).
  std::filesystem::path fetch_build_for(const Pair& pair, const EvalOptions& options, const Environment& env);

  HandoffStats handoff_;
  QueueJobContext context_;
  std::map<std::string, Environment> environments_;  // by the device a job asked for ("" = default)
  ReferenceHost reference_;
};

// A problem name a job may carry ("level1/19_ReLU", "19_ReLU.py"): nullopt when it is not a
// plain relative name (no "..", no absolute path, only letters, digits and "_-./").
std::optional<std::filesystem::path> safe_problem_name(const std::string& name);

// ".md" when the solution text is a model's raw Markdown answer (a line that opens a ``` fence),
// else ".py": the extension load_solution reads it by.
std::string solution_extension(const std::string& text);

}  // namespace kbv
