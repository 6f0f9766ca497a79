// Evaluating one job of the queue in this process: the job's problem and solution written to
// files, its options applied to the server's EvalOptions, then evaluate_pair as `kbv eval` runs it.
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "queue/queue.h"
#include "supervisor/run.h"

namespace kbv::service {

struct JobFiles {
  std::filesystem::path problem, solution;
  std::string error;  // empty when both were written
};
// Writes the job's sources under `scratch`: the problem content-addressed
// (scratch/problems/<sha256>/<name>.py, so that consecutive jobs of one problem reuse a loaded
// reference worker and the record's level and id come from the name), the solution as
// scratch/jobs/<id>/solution.py, or .md when it reads as a model's raw answer (solution_is_markdown).
JobFiles write_job_files(const queue::Job& job, const std::filesystem::path& scratch);

struct Execution {
  bool ok = false;
  nlohmann::json record;   // `kbv eval --json`'s record (ok)
  std::string error;       // why there is no record (not ok)
  bool retry = false;      // not ok: another attempt may succeed (interrupted, a full disk)
};

// One per worker thread: keeps a reference worker loaded between jobs of the same problem and the
// environment probed per device. Not shared between threads.
class Executor {
 public:
  Executor(EvalOptions base, std::filesystem::path scratch) : base_(std::move(base)), scratch_(std::move(scratch)) {}
  Execution run(const queue::Job& job);

 private:
  EvalOptions base_;
  std::filesystem::path scratch_;
  ReferenceHost reference_;
  std::map<std::string, Environment> environments_;  // by device
};

}  // namespace kbv::service
