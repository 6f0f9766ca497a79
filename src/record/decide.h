// Every verdict decision of an evaluation, in one place: what a failed worker call, a finding or
// the checks' outcome make of the record's verdict, message and metadata (docs/RECORD.md).
#pragma once
#include <optional>
#include <string>

#include "record/record.h"

namespace kbv {

// CUDA errors after which the context is unusable: the worker is lost even though it still runs.
bool is_sticky_cuda_error(const std::string& message);

// A worker call that did not succeed, as the supervisor read it from the reply.
struct WorkerFailure {
  enum class Status { failed, timeout, died, channel_error };
  Status status = Status::failed;
  std::string kind;     // failed: the worker's own kind ("" when it gave none)
  std::string message;  // failed: the worker's message
  std::string detail;   // timeout, died, channel_error: the channel's account
  std::optional<std::string> traceback;
  bool interrupted = false;  // kbv was being interrupted when the call ended
};

// What failed, as {kind, message}: the worker's kind (or `fallback_kind` when it named none), or
// timeout / crashed / interrupted from the channel.
struct FailureKind {
  std::string kind;
  std::string message;
};
// A worker's reply never names a kind that kbv alone decides (harness_error, interrupted: they take
// the sample out of judgement); such a reply is the fallback kind.
FailureKind classify(const WorkerFailure& failure, const std::string& fallback_kind);
// harness_error and interrupted: kinds only kbv's own observations give (a worker that could not
// start, kbv being interrupted), never a worker's reply nor a cached outcome.
bool decided_by_kbv_only(const std::string& kind);

// Sets verdict and message; `correctness` follows the verdict.
void set_verdict(Record& record, Verdict verdict, const std::string& message);

// The candidate's own call failed (load, a trial's run, an audit call): runtime_error, timeout,
// crashed (a lost CUDA context too), interrupted, or rejected (plain_output, T3). `context` goes
// before the message ("trial 0 D1 (x1)").
void fail_candidate(Record& record, const WorkerFailure& failure, const std::string& context);

// The candidate's timing request failed (docs/TIMING.md): timeout, crashed, interrupted or
// runtime_error, with "while timing the candidate: <message>".
void fail_timing(Record& record, const WorkerFailure& failure, const std::string& message);

// The problem (or the reference) failed: problem_error, or interrupted. Sets metadata.problem_error.
void fail_problem(Record& record, bool interrupted, const std::string& message);

// The build failed: compile_error, timeout, crashed, interrupted or harness_error from the build's kind.
void fail_build(Record& record, const std::string& kind, const std::string& message);

// The host failed kbv, not the candidate (a build, reference or candidate worker could not start:
// no Python, a sandbox layer that failed, fork refused): harness_error. Never stored: a queued job
// goes back to the queue, a run's sample stays to evaluate (docs/RECORD.md).
void fail_host(Record& record, const std::string& message);

// The reference worker could not load the problem: interrupted, harness_error (the worker could
// not start) or problem_error, from the failure's kind.
void fail_reference(Record& record, const FailureKind& failure);

// Findings with severity "reject" (static ones only under the strict policy; runtime ones always).
bool has_reject(const Record& record);
// When a finding rejects: verdict rejected with the first rejecting finding's message. True then.
bool reject_on_findings(Record& record);

// After the checks (and the audit and memory phases): rejected, correct ("passed N of M checks"),
// flaky (record.flaky holds a passing identical re-run of the first failed check: the message names
// the draw, the re-run that passed and those that failed) or wrong_output (the first failed check,
// and how many identical re-runs failed the same way when it was re-run).
void decide_checks(Record& record, int passed, int total, const std::string& first_failure);

}  // namespace kbv
