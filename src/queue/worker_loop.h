// The loop a queue worker runs (`kbv worker`, and `kbv serve`'s in-process workers): lease a job,
// hand it to an executor while a second thread heartbeats the lease, complete the job with the
// executor's record (or fail it), and go on. The executor is injected, so tests drain a queue with
// a no-op executor and the evaluation itself stays out of this room.
// A database failure never ends the loop: it waits (backing off up to a few seconds) and tries
// again, and a finished record is kept and offered again until the database answers or the lease
// is known to be lost. An executor that throws is a failed attempt (the job is retried elsewhere,
// up to its attempts), never the end of the worker.
#pragma once
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "queue/queue.h"
#include "util/outcome.h"

namespace kbv::queue {

struct ExecResult {
  enum class Kind {
    done,         // `record` is the job's result (whatever its verdict)
    failed,       // the job cannot be evaluated (bad options, a problem that is not there): `error`
    retry,        // this worker could not do it now (a broken environment): back to the queue, `error`
    interrupted,  // the worker is stopping (SIGTERM): the lease is released, the job goes back
    built,        // the job's build stage is over (kbv worker --role build): queued for an eval worker
  } kind = Kind::done;
  nlohmann::json record;
  std::string error;
};

// Runs one job. May be called from one thread at a time; must not throw (a throw is caught and
// counted as a retry).
using Executor = std::function<ExecResult(const Job& job)>;

struct LoopOptions {
  std::string worker;              // the lease holder's name: host:pid[:gpuN]
  double lease_seconds = 60;       // a job not heartbeated for this long goes back to the queue
  double heartbeat_seconds = 10;   // at most lease_seconds / 3
  double idle_seconds = 0.5;       // wait between empty polls
  long long max_jobs = -1;         // stop after this many jobs handled (-1: no limit)
  bool until_empty = false;        // stop at the first empty poll (drain and exit)
  std::function<bool()> stop;      // polled between steps: true ends the loop (SIGTERM)
  std::string stage;               // lease only jobs in this stage (kStageBuild, kStageEval); "" = any
};

struct LoopStats {
  long long done = 0;        // completed with a record
  long long failed = 0;      // given up (failed, or retried through fail(retry))
  long long lost = 0;        // leases lost before the job could be completed
  long long db_errors = 0;   // database calls that failed (and were tried again)
  long long released = 0;    // leases released because the loop was stopping
  long long built = 0;       // build stages finished: the job went on to the eval stage
};

// Returns when `stop` says so, when max_jobs were handled, or (until_empty) when nothing is queued.
// Progress and database trouble go to `notify`.
LoopStats run_worker_loop(Queue& queue, const Executor& executor, const LoopOptions& options,
                          const Notify& notify = {});

// host:pid — the default lease holder's name.
std::string default_worker_name();

}  // namespace kbv::queue
