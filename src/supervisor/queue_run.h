// `kbv eval --problems DIR --run DIR --queue URL`: every sample of a run folder submitted to the
// job queue as one job each, evaluated by `kbv worker`s (or kbv serve's own), and their records
// written where `kbv eval --run` writes its own: RUN/kbv.sqlite (the same keys, so either command
// picks up the other's results) and eval_results.json (docs/QUEUE.md, "A run folder through the
// queue").
#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "supervisor/run.h"
#include "util/outcome.h"

namespace kbv {

struct QueueRunOptions {
  RunOptions run;                 // problems_dir, run_dir, level, only; run.eval: the options' Protocol
  std::string queue_url;          // sqlite:PATH or postgresql://...
  nlohmann::json job_options;     // the canonical options every job carries (kbv eval's flags)
  double poll_seconds = 0.5;      // between two looks at the jobs in flight
};

// The file in RUN_DIR that remembers the jobs submitted for its samples (job key -> job id), so a
// run stopped while its jobs were in the queue picks up their results when it is run again.
inline constexpr const char* kQueueJobsFile = "kbv_queue_jobs.json";

// Ok when every sample has a record (stored); incomplete when some jobs failed (no record: they
// are submitted again by the next run); input_error for an unusable dataset, run folder, queue
// or store; interrupted on Ctrl-C (the jobs stay in the queue). Each sample is a run item
// (util/outcome.h) for the progress display; the queue's counts are notified as they change.
Outcome evaluate_run_through_queue(const QueueRunOptions& options, const Notify& notify);

// The environment a record was evaluated in, as Environment::to_json() gives it (the part of the
// store's protocol hash that the evaluating host decides): from the record's protocol and
// metadata.
nlohmann::json record_environment(const Record& record);

}  // namespace kbv
