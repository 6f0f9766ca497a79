// One pair's evaluation (evaluate_pair): lint, build, the reference and candidate workers, the
// correctness checks (pair_checks.cc), runtime audits, memory and timing, each phase's wall time.
#include <chrono>
#include <optional>

#include <fmt/format.h>

#include "record/trust.h"
#include "supervisor/audit_stage.h"
#include "supervisor/build_stage.h"
#include "supervisor/memory_phase.h"
#include "supervisor/pair_parts.h"
#include "supervisor/precision.h"
#include "supervisor/timing_phase.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/sched.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

// CPU thread parity (docs/TIMING.md "Thread parity"): the reference and the candidate pinned to
// the same CPUs of the budget (options.cpu, the pair's lease), before either runs a call of this
// pair. What could not be pinned is said; the record's timing then carries no `threads`.
void pin_to_budget(Record& record, WorkerProcess& w, const char* role, const EvalOptions& options) {
  const CpuBudget& budget = options.cpu;
  if (budget.cpus.empty()) return;  // no lease: the GPU, or timing off
  if (std::string e = w.pin_cpus(budget.cpus); !e.empty())
    record.findings.push_back(make_finding(
        "cpu_budget_not_applied", "warn",
        fmt::format("the {} worker could not be pinned to CPUs {} (--cpu-threads {}): {}; its times may use "
                    "another number of cores than the other side's",
                    role, cpu_list_text(budget.cpus),
                    options.protocol.timing.cpu_threads, e),
        "sched_setaffinity of the worker's threads", ""));
}

// Wall seconds of each phase reached (where an evaluation's time goes); they add up to "seconds".
struct PhaseClock {
  Clock::time_point t0 = Clock::now();
  Clock::time_point t_phase = t0;
  void done(Record& record, const char* name) {
    auto now = Clock::now();
    if (!record.phase_seconds) record.phase_seconds.emplace();
    (*record.phase_seconds)[name] = std::chrono::duration<double>(now - t_phase).count();
    t_phase = now;
  }
  // The evaluation's wall seconds so far.
  double seconds() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }
};

// The pair's CPUs, held until it is done (util/sched.h CpuLease: concurrent evaluations of this
// host take different ones): the one place a pair's CPU budget is resolved. None on the GPU or
// with timing off.
void lease_cpus(const EvalOptions& options, const Environment& env, std::optional<CpuLease>& lease) {
  if (env.device != "cuda" && options.protocol.timing.enabled) lease.emplace(options.protocol.timing.cpu_threads);
}

// Said when CPUs of the pair's lease are another evaluation's too.
void note_shared_cpus(Record& record, const std::optional<CpuLease>& lease) {
  if (lease && lease->shared() > 0)
    record.findings.push_back(make_finding(
        "cpu_budget_shared", "warn",
        fmt::format("{} of the CPUs {} this pair runs on are held by other kbv evaluations of this host (more "
                    "evaluations at once than CPUs for their budgets): its times share those CPUs",
                    lease->shared(), cpu_list_text(lease->budget().cpus)),
        "CPU leases (util/sched.h CpuLease)", ""));
}

// A candidate-kind worker for this pair, the candidate's own or the baselines' twin, made alike: a
// pre-started one of the reference's pool when one is waiting (--warm-workers, `warm` says so), else a
// new one; the device's environment, the build's folder and variables, the pair's thread budget, and
// pinned to the budget's CPUs. Null, with `error`, when it cannot start.
std::unique_ptr<WorkerProcess> take_candidate_kind(Record& record, const char* role, const Pair& pair,
                                                   const EvalOptions& options, const BuildResult& built,
                                                   ReferenceHost& reference, WorkerProcess* ref, bool& warm,
                                                   std::string& error) {
  auto env_vars = device_env(options);
  env_vars["TORCH_EXTENSIONS_DIR"] = built.extensions_dir.string();
  for (const auto& [k, v] : built.env) env_vars[k] = v;  // the build's CXX: torch's up-to-date check holds
  WorkerTarget target{pair.solution_path, ref, built.read};
  target.threads = worker_threads(options, options.device);
  target.start_cpus = options.cpu.cpus;
  auto w = reference.warm().take(options.worker, env_vars, target, ms(options.timeouts.load_s), warm, error);
  if (w) pin_to_budget(record, *w, role, options);
  return w;
}

// 3. The candidate worker, in its own process, with the extension cache of its build; null (the
// record says why) when it cannot start.
std::unique_ptr<WorkerProcess> start_candidate_worker(Record& record, const Pair& pair, const EvalOptions& options,
                                                      const BuildResult& built, ReferenceHost& reference,
                                                      WorkerProcess* ref) {
  std::string error;
  bool warm = false;
  auto cand = take_candidate_kind(record, "candidate", pair, options, built, reference, ref, warm, error);
  if (!cand) {
    fail_host(record, "cannot start the candidate worker: " + error);
    return nullptr;
  }
  record.warm_worker = warm;
  record.sandbox = cand->sandbox_record();
  return cand;
}

// What a candidate worker is loaded with: `code` as module `path`, ModelNew built as the reference's Model was.
msg::LoadRequest load_request(const std::string& path, const std::string& code, const EvalOptions& options,
                              const Environment& env, const msg::LoadProblemReply& load_reply) {
  msg::LoadRequest load;
  load.path = path;
  load.code = code;
  load.device = env.device;
  load.cpu_threads = options.cpu.threads;  // the pair's budget (0: none, as they are)
  load.init_inputs = load_reply.init_inputs;
  load.precision = options.protocol.precision;
  load.seed = options.protocol.construction_seed;
  return load;
}

// The candidate's code loaded into its worker (ModelNew constructed); the worker's reply.
Reply load_candidate_worker(WorkerProcess& cand, const Pair& pair, const SolutionSource& solution,
                            const EvalOptions& options, const Environment& env, const BuildResult& built,
                            const msg::LoadProblemReply& load_reply) {
  // The load runs the extension's up-to-date check, which takes torch's lock file: under the
  // folder's kbv lock, a leftover one is removed first (build_candidate).
  std::optional<FileLock> ext_lock;
  ext_lock.emplace(built.extensions_dir.parent_path() / ".kbv-lock");
  if (ext_lock->ok()) remove_stale_torch_locks(built.extensions_dir);
  Reply r = cand.call(msg::to_json(load_request(python_path(pair.solution_path), solution.code, options, env, load_reply)),
                      ms(options.timeouts.load_s + options.timeouts.build_s));
  reply_as<msg::LoadCandidateReply>(r);
  return r;
}

// The baselines' twin (timing_phase.h BaselineTwin), for a candidate whose checks all passed: a
// candidate worker taken, pinned and loaded as the candidate's was (from the same pool, with the
// same environment and sandbox), its solution the problem's own source with `ModelNew` = `Model`.
// Null, with `error`, when it cannot start or load: the baselines are then the reference's.
std::unique_ptr<WorkerProcess> start_baseline_twin(Record& record, const Pair& pair, const EvalOptions& options,
                                                   const Environment& env, const BuildResult& built,
                                                   ReferenceHost& reference, WorkerProcess* ref,
                                                   const msg::LoadProblemReply& load_reply, std::string& error) {
  FileText problem = pair.problem_text ? *pair.problem_text : read_file(pair.problem_path);
  if (!problem.ok) {
    error = "reading the problem for its twin: " + problem.error;
    return nullptr;
  }
  bool warm = false;
  auto twin = take_candidate_kind(record, "baselines' twin", pair, options, built, reference, ref, warm, error);
  if (!twin) {
    error = "starting the baselines' twin: " + error;
    return nullptr;
  }
  const std::string code = problem.text + "\n\n# kbv: the baselines' twin (docs/TIMING.md)\nclass ModelNew(Model):\n    pass\n";
  Reply r = twin->call(msg::to_json(load_request(python_path(pair.problem_path), code, options, env, load_reply)),
                       ms(options.timeouts.load_s));
  if (!reply_as<msg::LoadCandidateReply>(r)) {
    const WorkerFailure f = worker_failure(r);
    error = "loading the problem's Model into its twin: " + (f.message.empty() ? f.detail : f.message);
    twin->stop();
    return nullptr;
  }
  return twin;
}

// 5. Runtime audits, 5b. memory and 6. timing, for a candidate whose every check passed.
void after_checks(Record& record, const Pair& pair, const EvalOptions& options, const Environment& env,
                  WorkerProcess& ref, WorkerProcess& cand, SeedSource& seeds, const CheckTally& t, PhaseClock& clock,
                  const BaselineTwin& twin) {
  const Protocol& p = options.protocol;
  const int passed = t.passed, total = t.total;
  // 5. Runtime audits (docs/POLICY.md) once every check passed: what ran, threads, aliasing,
  // determinism on fresh poisoned buffers, same storage with new values.
  // Not under the upstream protocols, which reproduce upstream (no runtime audits there).
  if (!p.runtime_audit && passed == total && total > 0)
    record.audit = json{{"skipped", "--protocol " + p.name + " reproduces upstream, which has no runtime audits"}};
  if (p.runtime_audit && !has_reject(record) && passed == total && total > 0) {
    AuditOutcome audit = run_runtime_audit(ref, cand, options, env.device, seeds.next(), seeds.next());
    record.audit = audit.details;
    if (!audit.compute.is_null()) record.compute = audit.compute;
    for (const auto& f : audit.findings) record.findings.push_back(f);
    record.seconds = clock.seconds();
    clock.done(record, "audit");
    if (audit.candidate_failure) {
      fail_candidate(record, worker_failure(*audit.candidate_failure), audit.failure_context);
      return;
    }
  }
  // 5b. Memory and kernel attribution of untimed calls (docs/MEMORY.md), once every check passed.
  if (!has_reject(record) && passed == total && total > 0) {
    measure_phase(record, cand, ref, options, seeds.next());
    clock.done(record, "memory");
  }
  decide_checks(record, passed, total, t.first_failure);
  // 6. Timing (src/supervisor/timing_phase.h): only a correct candidate is timed.
  if (record.verdict == Verdict::correct && p.timing.enabled) {
    timing_phase(record, pair, options, env, ref, cand, twin);
    clock.done(record, "timing");
  }
  record.seconds = clock.seconds();  // the memory phase's too when nothing is timed
}

// 3.-6. With the candidate's worker started.
void run_candidate(Record& record, const Pair& pair, const EvalOptions& options, const Environment& env,
                   ReferenceHost& reference, WorkerProcess& ref, WorkerProcess& cand,
                   const SolutionSource& solution, const BuildResult& built, const msg::LoadProblemReply& load_reply,
                   PhaseClock& clock) {
  Reply r = load_candidate_worker(cand, pair, solution, options, env, built, load_reply);
  clock.done(record, "load");
  if (r.status != Reply::Status::ok) {
    fail_candidate(record, worker_failure(r), "");
    if (record.verdict == Verdict::timeout) record.message = "constructing ModelNew: " + r.detail;
    record.seconds = clock.seconds();
    return;
  }

  // 4. Trials x distributions, each a fresh draw from its own seed (pair_checks.cc).
  SeedSource seeds(options.protocol.seed);
  const CheckTally checked = correctness_checks({record, pair, options, reference, ref, cand}, seeds);
  // The baselines' twin, taken before the pool settles: its replacement is started by then too.
  BaselineTwin twin;
  if (!checked.stopped && checked.passed == checked.total && checked.total > 0 && wants_baseline_twin(options, env))
    twin.worker = start_baseline_twin(record, pair, options, env, built, reference, &ref, load_reply, twin.error);
  if (!checked.stopped) reference.warm().settle(ms(options.timeouts.load_s));  // none starting while it is measured
  record.seconds = clock.seconds();
  clock.done(record, "checks");
  if (checked.stopped) return;
  after_checks(record, pair, options, env, ref, cand, seeds, checked, clock, twin);
  if (twin.worker) twin.worker->stop();
}

// A confined candidate killed for what its files held (supervisor/write_watch.h): rejected, whatever
// the call it was killed in made of it.
void reject_write_cap(Record& record, const WorkerProcess& cand) {
  const std::string& why = cand.write_cap_tripped();
  if (why.empty()) return;
  record.findings.push_back(make_finding("write_cap_exceeded", "reject", "the candidate's worker: " + why,
                                         "the write watch (--write-cap-mib)", ""));
  set_verdict(record, Verdict::rejected, "the candidate's worker: " + why);
  record.metadata.correctness_issue = record.message;
}

// 2.-6. The workers and what they measure, for a candidate that built: `options.cpu` is the pair's
// CPU budget, from its `lease`.
void run_workers(Record& record, const Pair& pair, const EvalOptions& options, const Environment& env,
                 ReferenceHost& reference, const SolutionSource& solution, const BuildResult& built,
                 const std::optional<CpuLease>& lease, PhaseClock& clock) {
  // 2. The reference worker, loaded with the problem.
  msg::LoadProblemReply load_reply;
  FailureKind failure;
  WorkerProcess* ref = reference.get(pair.problem_path, options, load_reply, failure, pair.problem_text.get());
  if (!ref) {
    fail_reference(record, failure);
    return;
  }
  note_shared_cpus(record, lease);
  pin_to_budget(record, *ref, "reference", options);
  if (!load_reply.overrides.empty()) record.problem_overrides = load_reply.overrides;

  std::unique_ptr<WorkerProcess> cand = start_candidate_worker(record, pair, options, built, reference, ref);
  if (!cand) return;
  run_candidate(record, pair, options, env, reference, *ref, *cand, solution, built, load_reply, clock);
  cand->stop();
  reject_write_cap(record, *cand);
}

}  // namespace

Record base_record(const Pair& pair, const EvalOptions& options, const Environment& env) {
  Record r;
  r.level = pair.level;
  r.problem_id = pair.problem_id;
  r.sample_id = pair.sample_id;
  r.precision = options.protocol.precision;
  r.problem = pair.problem_path.string();
  r.solution = pair.solution_path.string();
  r.metadata.hardware = env.device_name;
  r.metadata.device = env.device == "cuda" ? "cuda:0" : "cpu";
  r.protocol = protocol_from_json(options.protocol.to_json());
  r.protocol.torch_version = env.torch_version;
  r.protocol.python_version = env.python_version;
  r.protocol.device_name = env.device_name;
  r.protocol.kbv_version = KBV_VERSION;
  r.sandbox = json{{"mode", sandbox::mode_name(options.worker.sandbox)}};  // the candidate's, once it starts
  return r;
}

Record evaluate_pair(const Pair& pair, const EvalOptions& options, const Environment& env,
                     ReferenceHost& reference, const BuildResult* prebuilt, const PreparedCandidate* prepared) {
  PhaseClock clock;
  Record record = base_record(pair, options, env);
  std::optional<PreparedCandidate> own;
  if (!prepared) prepared = &own.emplace(prepare_candidate(pair.solution_path, options));
  const SolutionSource& solution = prepared->solution;
  if (!solution.ok) {
    fail_build(record, "compile_error", solution.error);
    return record;
  }
  record.solution_hash = prepared->hash;
  record.source_origin = solution.origin;

  // 0. Static analysis: under the strict policy a rejecting finding ends it before any build.
  const LintReport& lint = prepared->lint;
  record.findings = lint.findings;
  clock.done(record, "lint");
  if (lint.rejected()) {
    set_verdict(record, Verdict::rejected, lint.rejection_message());
    record.metadata.correctness_issue = record.message;
    record.seconds = clock.seconds();
    return record;
  }

  // 1. Build, in its own process, into the content-addressed cache.
  BuildResult built = prebuilt ? *prebuilt : build_candidate(solution, pair.solution_path, options, env);
  record.build.emplace();
  record.build->seconds = built.seconds;
  record.build->cached = built.cached;
  clock.done(record, "build");
  if (prebuilt) {
    // Built ahead on the build queue's thread: the phase is the build's own wall time, and the
    // evaluation's seconds include it (the phases add up to them).
    (*record.phase_seconds)["build"] = built.seconds;
    clock.t0 -= std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(built.seconds));
  }
  if (!built.ok && built.kind != "missing_model_new") {
    fail_build(record, built.kind, built.message);
    if (built.kind != "interrupted" && !built.diagnostics.empty()) record.build->diagnostics = built.diagnostics;
    return record;
  }
  record.compiled = true;

  // The pair's CPU budget, resolved once here (its lease) for every step that follows.
  std::optional<CpuLease> lease;
  lease_cpus(options, env, lease);
  EvalOptions budgeted = options;
  budgeted.cpu = lease ? lease->budget() : CpuBudget{};
  run_workers(record, pair, budgeted, env, reference, solution, built, lease, clock);
  return record;
}

}  // namespace kbv
