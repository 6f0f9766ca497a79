// Verdict decisions (decide.h).
#include "record/decide.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kbv {

bool is_sticky_cuda_error(const std::string& m) {
  for (const char* s : {"illegal memory access", "misaligned address", "unspecified launch failure",
                        "illegal instruction", "an illegal", "device-side assert", "launch timed out",
                        "hardware stack error", "uncorrectable ECC"})
    if (m.find(s) != std::string::npos) return true;
  return false;
}

bool decided_by_kbv_only(const std::string& kind) { return kind == "harness_error" || kind == "interrupted"; }

FailureKind classify(const WorkerFailure& f, const std::string& fallback_kind) {
  switch (f.status) {
    case WorkerFailure::Status::failed:
      // A reply is a claim (the candidate can write the worker's channel): a kind that would take
      // the sample out of judgement is the fallback's, and the message says what was claimed
      // (examples/level1/19_ReLU/cpu_forge_host_failure.py).
      if (decided_by_kbv_only(f.kind))
        return {fallback_kind, "the worker's reply claimed " + f.kind + ", which only kbv decides: " + f.message};
      return {f.kind.empty() ? fallback_kind : f.kind, f.message};
    case WorkerFailure::Status::timeout:
      return {"timeout", f.detail};
    case WorkerFailure::Status::died:
      return {"crashed", f.detail};
    case WorkerFailure::Status::channel_error:
      return {f.interrupted ? "interrupted" : "crashed", f.detail};
  }
  return {fallback_kind, f.detail};
}

void set_verdict(Record& record, Verdict verdict, const std::string& message) {
  record.verdict = verdict;
  record.message = message;
  record.correctness = verdict == Verdict::correct;
}

void fail_candidate(Record& record, const WorkerFailure& failure, const std::string& context) {
  FailureKind f = classify(failure, "runtime_error");
  // The candidate worker's own kinds (missing ModelNew, a failed import, a bad message) are
  // runtime errors of the candidate; a lost CUDA context is a crash.
  Verdict verdict = Verdict::runtime_error;
  if (f.kind == "timeout") verdict = Verdict::timeout;
  else if (f.kind == "crashed") verdict = Verdict::crashed;
  else if (f.kind == "interrupted") verdict = Verdict::interrupted;
  else if (f.kind == "rejected") verdict = Verdict::rejected;
  std::string message = f.message;
  if (verdict == Verdict::runtime_error && is_sticky_cuda_error(message)) {
    verdict = Verdict::crashed;
    message += " (the CUDA context is lost; this worker is discarded and the next candidate gets a fresh one)";
  }
  set_verdict(record, verdict, context.empty() ? message : context + ": " + message);
  if (verdict == Verdict::runtime_error || verdict == Verdict::crashed) record.metadata.runtime_error = record.message;
  if (failure.status == WorkerFailure::Status::failed && failure.traceback) record.traceback = failure.traceback;
  if (verdict == Verdict::rejected)
    record.findings.push_back(
        make_finding("plain_output", "reject", message, "output type seen by the candidate worker", "T3"));
}

void fail_timing(Record& record, const WorkerFailure& failure, const std::string& message) {
  Verdict verdict = failure.status == WorkerFailure::Status::timeout ? Verdict::timeout
                    : failure.status == WorkerFailure::Status::died  ? Verdict::crashed
                    : failure.interrupted                            ? Verdict::interrupted
                                                                     : Verdict::runtime_error;
  if (verdict == Verdict::runtime_error && is_sticky_cuda_error(message)) verdict = Verdict::crashed;
  set_verdict(record, verdict, message);
  if (verdict == Verdict::runtime_error || verdict == Verdict::crashed) record.metadata.runtime_error = message;
  if (failure.traceback) record.traceback = failure.traceback;
}

void fail_problem(Record& record, bool interrupted, const std::string& message) {
  set_verdict(record, interrupted ? Verdict::interrupted : Verdict::problem_error, message);
  record.metadata.problem_error = message;
}

void fail_host(Record& record, const std::string& message) { set_verdict(record, Verdict::harness_error, message); }

void fail_reference(Record& record, const FailureKind& failure) {
  if (failure.kind == "harness_error") return fail_host(record, failure.message);
  fail_problem(record, failure.kind == "interrupted", failure.message);
}

void fail_build(Record& record, const std::string& kind, const std::string& message) {
  if (kind == "interrupted") {
    set_verdict(record, Verdict::interrupted, message);
    return;
  }
  if (kind == "harness_error") return fail_host(record, message);
  set_verdict(record, kind == "timeout" ? Verdict::timeout : kind == "crashed" ? Verdict::crashed : Verdict::compile_error,
              message);
  record.metadata.compilation_error = message;
  if (kind == "needs_cuda") record.metadata.needs_cuda = true;
}

bool has_reject(const Record& record) {
  for (const auto& f : record.findings)
    if (f.rejects()) return true;
  return false;
}

bool reject_on_findings(Record& record) {
  for (const auto& f : record.findings)
    if (f.rejects()) {
      set_verdict(record, Verdict::rejected, f.message);
      record.metadata.correctness_issue = record.message;
      return true;
    }
  return false;
}

namespace {

std::string reason_text(const std::optional<nlohmann::json>& reason) {
  if (!reason) return "no reason given";
  return reason->is_string() ? reason->get<std::string>() : reason->dump();
}

// "re-run 1" / "re-runs 1, 2"
std::string reruns_text(const std::vector<FlakyAttempt>& attempts) {
  std::vector<int> n;
  for (const auto& a : attempts)
    if (a.attempt > 0) n.push_back(a.attempt);
  return fmt::format("re-run{} {}", n.size() == 1 ? "" : "s", fmt::join(n, ", "));
}

}  // namespace

void decide_checks(Record& record, int passed, int total, const std::string& first_failure) {
  if (reject_on_findings(record)) return;
  if (passed == total && total > 0) {
    set_verdict(record, Verdict::correct, fmt::format("passed {} of {} checks", passed, total));
    return;
  }
  const Flaky* f = record.flaky ? &*record.flaky : nullptr;
  if (f && !f->passed.empty() && !f->failed.empty()) {
    // The same draw (seed and scale) failed and passed: the candidate is unstable, not wrong.
    const FlakyAttempt& first = f->failed.front();
    const FlakyAttempt& ok = f->passed.front();
    const bool others = f->failed.size() > 1;
    std::string message = fmt::format(
        "trial {} {} (x{}) failed, then passed on identical re-run {} of at most {} (same seed, same inputs){}: "
        "unstable, not wrong on every run; the failure: {}",
        first.trial, first.distribution, first.scale, ok.attempt, f->reruns,
        others ? fmt::format("; {} failed again", reruns_text(f->failed)) : std::string(), reason_text(first.reason));
    set_verdict(record, Verdict::flaky, message);
    record.metadata.correctness_issue = message;
    return;
  }
  std::string message = first_failure;
  if (f && f->failed.size() > 1)
    message += fmt::format(" (failed again on {} identical re-run{}: same seed, same inputs)",
                           f->failed.size() - 1, f->failed.size() == 2 ? "" : "s");
  set_verdict(record, Verdict::wrong_output, message);
  record.metadata.correctness_issue = message;
}

}  // namespace kbv
