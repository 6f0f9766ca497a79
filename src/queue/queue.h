// The job queue between `kbv serve` / `kbv eval --queue` and `kbv worker`s (docs/QUEUE.md).
// One interface, one schema, two engines: SQLite (one host, the embedded default) and PostgreSQL
// (several hosts; leases with SELECT ... FOR UPDATE SKIP LOCKED). A job is leased by one worker
// at a time; the lease carries a fencing token, so a worker whose lease expired (no heartbeat)
// can no longer heartbeat, complete or fail the job once it was leased again. Timestamps come from
// the database's clock, so workers on hosts with skewed clocks agree on when a lease expired.
// Thread-safety: every call of one Queue is serialised by a mutex inside it (a worker heartbeats
// from a second thread while its first thread evaluates). Several processes may share one queue.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::queue {

struct JobSpec {                  // what a client asked for
  std::string problem_name;       // "level1/19_ReLU" (resolved by serve against --problems), or empty
  std::string problem_source;     // the problem's Python text
  std::string solution_source;    // Python source, or a model's raw Markdown answer
  nlohmann::json options = nlohmann::json::object();  // kbv eval's options as JSON
  // The run folder's sample id (kbv eval --run --queue): the record's sample_id, and kbv report
  // --queue's. Not in the key (the same evaluation of two samples is one job, the first's id).
  std::optional<int> sample_id;
  // sha256 over (problem_source, solution_source, canonical options), each part length-prefixed;
  // the problem's name does not enter it (the same text under two names is the same evaluation).
  std::string key() const;
};

enum class State { queued, running, done, failed };
const char* state_name(State state);                     // "queued" "running" "done" "failed"
std::optional<State> state_from_name(const std::string& name);

// Which worker role takes a queued job next (`kbv worker --role`): every job is submitted in
// stage `build` (a `--role build` worker compiles its candidate, publishes the build through the
// blobs and moves it on to `eval`, or completes it with the build's failure record); `--role eval`
// workers take jobs in stage `eval` only; `--role all` takes either and does what is left.
inline constexpr const char* kStageBuild = "build";
inline constexpr const char* kStageEval = "eval";

struct Job {
  std::string id;                 // opaque, URL-safe (32 hex digits)
  State state = State::queued;
  std::string stage = kStageBuild;  // kStageBuild | kStageEval
  JobSpec spec;
  int attempts = 0;               // leases taken so far
  int max_attempts = 3;
  std::string worker;             // who holds / held the lease
  nlohmann::json record;          // exactly what `kbv eval --json` writes (state done); null otherwise
  std::string error;              // state failed: why (attempts exhausted, the executor's message)
  double created_at = 0, updated_at = 0;  // unix seconds, the database's clock
};

struct Lease {
  std::string job_id;
  std::string worker;
  long long token = 0;            // fences a stale lease: bumped at every lease of the job
};

struct Counts {
  long long queued = 0, running = 0, done = 0, failed = 0;
};

// Jobs leased and not heartbeated for longer than their lease go back to `queued` at the next
// lease() call (any worker's), or to `failed` once they were leased max_attempts times.
constexpr int kDefaultMaxAttempts = 3;

class Queue {
 public:
  // "sqlite:/path/queue.db" (the file and its folder are created), or "postgresql://user@host:port/db"
  // / "postgres://..." (a libpq connection URI; the tables are created when missing). nullptr with
  // `error` set when it cannot be opened (the message names the URL and the cause).
  static std::unique_ptr<Queue> open(const std::string& url, std::string& error);
  virtual ~Queue();

  // Each call returns false / nullopt with `error` set on a database failure (after the engine's
  // reconnect attempt); none throws.

  // The new job's id. When a job with the same key is already done, its id is returned and nothing
  // is queued (the record is answered from the queue's store).
  virtual std::optional<std::string> submit(const JobSpec& spec, std::string& error) = 0;
  // nullopt with an empty error: no such job.
  virtual std::optional<Job> get(const std::string& id, std::string& error) = 0;
  // The oldest queued job, now running under this worker's lease; nullopt with an empty error:
  // nothing queued. Expired leases are returned to the queue (or failed) first.
  virtual std::optional<Lease> lease(const std::string& worker, double lease_seconds, std::string& error) = 0;
  // The same, only among queued jobs in `stage` (kStageBuild, kStageEval; "" = any stage, as lease).
  // The base answers lease() for "" and an error for a stage (a Queue without stages).
  virtual std::optional<Lease> lease_stage(const std::string& worker, double lease_seconds, const std::string& stage,
                                           std::string& error);
  // The build stage of a leased job is over (its build is in the queue, or nothing to build there):
  // the job goes back to `queued` in stage `eval`, its attempts counted afresh for the evaluation.
  // false with an empty error: the lease was lost.
  virtual bool to_eval(const Lease& lease, std::string& error);
  // The leased job; nullopt with an empty error: the lease was lost.
  virtual std::optional<Job> job_of(const Lease& lease, std::string& error) = 0;
  // Extends the lease to lease_seconds from now. false with an empty error: the lease was lost
  // (expired and leased again, or the job was failed); the worker must drop the job.
  virtual bool heartbeat(const Lease& lease, double lease_seconds, std::string& error) = 0;
  // Marks the job done with its record, in the same transaction. false with an empty error: the
  // lease was lost and the record was not stored (another worker owns the job now).
  virtual bool complete(const Lease& lease, const nlohmann::json& record, std::string& error) = 0;
  // Gives the job up: back to `queued` when `retry` and attempts remain, else `failed` with `why`.
  // false with an empty error: the lease was lost.
  virtual bool fail(const Lease& lease, const std::string& why, bool retry, std::string& error) = 0;
  virtual std::optional<Counts> counts(std::string& error) = 0;
  // Every done job with its record, in the order they were done (then by id): what `kbv report
  // --queue` reads. nullopt with `error` set on a database failure or a job that does not read.
  virtual std::optional<std::vector<Job>> done_jobs(std::string& error) {
    error = "this queue cannot list its done jobs";
    return std::nullopt;
  }

  // Content-addressed blobs (built extensions travel through the queue's own storage). put_blob
  // refuses bytes whose sha256 is not `sha256`; storing the same blob twice is a no-op.
  // get_blob: nullopt with an empty error when there is no such blob.
  virtual bool put_blob(const std::string& sha256, const std::string& bytes, std::string& error) = 0;
  virtual std::optional<std::string> get_blob(const std::string& sha256, std::string& error) = 0;

  // Built extensions by build key (compile/build.h build_key: the build cache's own key): the blob
  // that holds the cache entry, written by a build worker. A second put for a key keeps the first.
  // get_build: nullopt with an empty error when no build of that key is in the queue. The base
  // (a Queue without a build table) stores nothing and says so.
  virtual bool put_build(const std::string& build_key, const std::string& blob_sha256, std::string& error);
  virtual std::optional<std::string> get_build(const std::string& build_key, std::string& error);

  // The URL it was opened with, for messages ("" for a Queue that is not a database).
  virtual std::string url() const { return ""; }
};

// A fresh job id: 32 hex digits from the system's random source.
std::string new_job_id();

// The URL with its password hidden (user:***@host, password=***), for messages and logs.
std::string redact_url(const std::string& url);

}  // namespace kbv::queue
