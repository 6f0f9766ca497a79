#include "supervisor/run.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "util/clock.h"

#include "record/trust.h"
#include "report/kernelbench.h"
#include "store/store.h"
#include "supervisor/timing_phase.h"
#include "supervisor/memory_phase.h"
#include "supervisor/audit_stage.h"
#include "supervisor/build_stage.h"
#include "supervisor/precision.h"
#include "protocol/hidden.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/interrupt.h"
#include "util/sched.h"
#include "util/text.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;


double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::map<std::string, std::string> device_env(const EvalOptions& options) {
  std::map<std::string, std::string> env;
  if (options.gpu) env["CUDA_VISIBLE_DEVICES"] = std::to_string(*options.gpu);
  return env;
}

// CPU thread parity (docs/TIMING.md "Thread parity"): the reference and the candidate pinned to
// the same CPUs of the budget, before either runs a call of this pair. What could not be pinned is
// said; the record's timing then carries no `threads`.
void pin_to_budget(Record& record, WorkerProcess& w, const char* role, const EvalOptions& options,
                   const Environment& env, const CpuLease* lease) {
  if (env.device == "cuda" || !options.protocol.timing.enabled || !lease) return;
  const CpuBudget& budget = lease->budget();
  if (std::string e = w.pin_cpus(budget.cpus); !e.empty())
    record.findings.push_back(make_finding(
        "cpu_budget_not_applied", "warn",
        fmt::format("the {} worker could not be pinned to CPUs {} (--cpu-threads {}): {}; its times may use "
                    "another number of cores than the other side's",
                    role, cpu_list_text(budget.cpus),
                    options.protocol.timing.cpu_threads, e),
        "sched_setaffinity of the worker's threads", ""));
}

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

}  // namespace

json Environment::to_json() const {
  return json{{"torch_version", torch_version},
              {"python_version", python_version},
              {"device", device},
              {"device_name", device_name}};
}

std::optional<Environment> probe_environment(const EvalOptions& options, std::string& error,
                                             std::unique_ptr<WorkerProcess>* keep) {
  auto w = WorkerProcess::start("reference", options.worker, device_env(options), error);
  if (!w) return std::nullopt;
  Reply r = w->call(msg::to_json(msg::HelloRequest{}), ms(options.timeouts.load_s));
  std::optional<msg::HelloReply> hello = reply_as<msg::HelloReply>(r);
  if (!hello) {
    error = "cannot start a worker with " + options.worker.python + ": " +
            (r.detail.empty() ? r.body.dump() : r.detail);
    return std::nullopt;
  }
  Environment env;
  env.torch_version = hello->torch_version;
  env.python_version = hello->python_version;
  env.cuda_available = hello->cuda_available;
  env.device_count = hello->device_count.value_or(0);
  env.device = options.device.empty() ? (env.cuda_available ? "cuda" : "cpu") : options.device;
  if (env.device == "cuda" && !env.cuda_available) {
    error = "--device cuda, but torch sees no GPU on this machine (torch " + env.torch_version + ")";
    return std::nullopt;
  }
  if (env.device == "cuda" && !hello->cuda_built) {
    error = "--device cuda, but this kbv worker was built without CUDA support";
    return std::nullopt;
  }
  env.device_name = env.device == "cuda" ? hello->device_name : "cpu";
  if (keep) *keep = std::move(w);
  return env;
}

// ---------------------------------------------------------------------------------------------
ReferenceHost::~ReferenceHost() { reset(); }

void ReferenceHost::reset() {
  worker_.reset();
  problem_key_.clear();
}

void ReferenceHost::adopt(std::unique_ptr<WorkerProcess> idle) {
  worker_ = std::move(idle);
  problem_key_.clear();
}

WorkerProcess* ReferenceHost::get(const fs::path& problem, const EvalOptions& options, msg::LoadProblemReply& load_reply,
                                  FailureKind& failure, const FileText* given) {
  FileText text = given ? *given : read_file(problem);
  if (!text.ok) {
    failure = {"problem_error", text.error};
    return nullptr;
  }
  std::string key = sha256_hex_parts({python_path(problem), text.text, options.device, options.protocol.precision,
                                      options.protocol.reference_precision, options.cpu_sizes,
                                      options.protocol.cast_init_inputs ? "cast-init" : ""});
  if (worker_ && worker_->alive() && key == problem_key_) {
    load_reply = load_reply_;
    return worker_.get();
  }
  // An adopted idle worker (no problem loaded yet) is used as is; otherwise a fresh one.
  if (!(worker_ && worker_->alive() && problem_key_.empty())) reset();
  std::string error;
  if (!worker_) worker_ = WorkerProcess::start("reference", options.worker, device_env(options), error);
  if (!worker_) {
    failure = {"problem_error", "cannot start the reference worker: " + error};
    return nullptr;
  }
  msg::LoadRequest load;
  load.path = python_path(problem);
  load.code = text.text;
  load.device = options.device;
  if (options.protocol.timing.enabled) load.cpu_threads = cpu_budget(options.protocol.timing.cpu_threads).threads;
  load.precision = options.protocol.precision;
  load.reference_precision = options.protocol.reference_precision;
  load.seed = options.protocol.construction_seed;
  load.cpu_sizes = options.cpu_sizes;
  load.cast_init_inputs = options.protocol.cast_init_inputs;
  Reply r = worker_->call(msg::to_json(load), ms(options.timeouts.load_s));
  std::optional<msg::LoadProblemReply> loaded = reply_as<msg::LoadProblemReply>(r);
  if (!loaded) {
    failure = classify(worker_failure(r), "problem_error");
    std::string kind = failure.kind;
    if (kind != "interrupted") failure.kind = "problem_error";
    if (kind == "timeout" || kind == "crashed")
      failure.message = fmt::format("{}: loading the problem: {}", problem.string(), r.detail);
    reset();
    return nullptr;
  }
  problem_key_ = key;
  load_reply_ = *loaded;
  load_reply = *loaded;
  return worker_.get();
}

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------
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

Record evaluate_pair(const Pair& pair, const EvalOptions& options, const Environment& env,
                     ReferenceHost& reference, const BuildResult* prebuilt, const PreparedCandidate* prepared) {
  auto t0 = Clock::now();
  Record record = base_record(pair, options, env);
  // Wall seconds of each phase reached (where an evaluation's time goes); they add up to "seconds".
  auto t_phase = t0;
  auto phase_done = [&](const char* name) {
    auto now = Clock::now();
    if (!record.phase_seconds) record.phase_seconds.emplace();
    (*record.phase_seconds)[name] = std::chrono::duration<double>(now - t_phase).count();
    t_phase = now;
  };
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
  phase_done("lint");
  if (lint.rejected()) {
    set_verdict(record, Verdict::rejected, lint.rejection_message());
    record.metadata.correctness_issue = record.message;
    record.seconds = since(t0);
    return record;
  }

  // 1. Build, in its own process, into the content-addressed cache.
  BuildResult built = prebuilt ? *prebuilt : build_candidate(solution, pair.solution_path, options, env);
  record.build.emplace();
  record.build->seconds = built.seconds;
  record.build->cached = built.cached;
  phase_done("build");
  if (prebuilt) {
    // Built ahead on the build queue's thread: the phase is the build's own wall time, and the
    // evaluation's seconds include it (the phases add up to them).
    (*record.phase_seconds)["build"] = built.seconds;
    t0 -= std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(built.seconds));
  }
  if (!built.ok && built.kind != "missing_model_new") {
    fail_build(record, built.kind, built.message);
    if (built.kind != "interrupted" && !built.diagnostics.empty()) record.build->diagnostics = built.diagnostics;
    return record;
  }
  record.compiled = true;

  // 2. The reference worker, loaded with the problem.
  msg::LoadProblemReply load_reply;
  FailureKind failure;
  WorkerProcess* ref = reference.get(pair.problem_path, options, load_reply, failure, pair.problem_text.get());
  if (!ref) {
    fail_problem(record, failure.kind == "interrupted", failure.message);
    return record;
  }
  // The pair's CPUs, held until it is done (util/sched.h CpuLease: concurrent evaluations of this
  // host take different ones).
  std::optional<CpuLease> lease;
  if (env.device != "cuda" && options.protocol.timing.enabled) {
    lease.emplace(options.protocol.timing.cpu_threads);
    if (lease->shared() > 0)
      record.findings.push_back(make_finding(
          "cpu_budget_shared", "warn",
          fmt::format("{} of the CPUs {} this pair runs on are held by other kbv evaluations of this host (more "
                      "evaluations at once than CPUs for their budgets): its times share those CPUs",
                      lease->shared(), cpu_list_text(lease->budget().cpus)),
          "CPU leases (util/sched.h CpuLease)", ""));
  }
  pin_to_budget(record, *ref, "reference", options, env, lease ? &*lease : nullptr);
  if (!load_reply.overrides.empty()) record.problem_overrides = load_reply.overrides;

  // 3. The candidate worker, in its own process, with the extension cache of its build.
  std::string error;
  auto env_vars = device_env(options);
  env_vars["TORCH_EXTENSIONS_DIR"] = built.extensions_dir.string();
  for (const auto& [k, v] : built.env) env_vars[k] = v;  // the build's CXX: torch's up-to-date check holds
  if (env.device != "cuda" && options.protocol.timing.enabled) {
    // The thread budget for the candidate's own OpenMP and MKL teams too (their default is every CPU
    // the process saw when they started); the affinity set below bounds them either way.
    const std::string n = std::to_string(cpu_budget(options.protocol.timing.cpu_threads).threads);
    env_vars["OMP_NUM_THREADS"] = n;
    env_vars["MKL_NUM_THREADS"] = n;
  }
  auto cand = WorkerProcess::start("candidate", options.worker, env_vars, error, {pair.solution_path, ref, built.read});
  if (!cand) {
    set_verdict(record, Verdict::runtime_error, "cannot start the candidate worker: " + error);
    return record;
  }
  pin_to_budget(record, *cand, "candidate", options, env, lease ? &*lease : nullptr);
  record.sandbox = cand->sandbox_record();
  auto fail_from = [&](const Reply& r, const std::string& context) {
    fail_candidate(record, worker_failure(r), context);
  };
  // The load runs the extension's up-to-date check, which takes torch's lock file: under the
  // folder's kbv lock, a leftover one is removed first (build_candidate).
  std::optional<FileLock> ext_lock;
  ext_lock.emplace(built.extensions_dir.parent_path() / ".kbv-lock");
  if (ext_lock->ok()) remove_stale_torch_locks(built.extensions_dir);
  msg::LoadRequest load;
  load.path = python_path(pair.solution_path);
  load.code = solution.code;
  load.device = env.device;
  if (options.protocol.timing.enabled) load.cpu_threads = cpu_budget(options.protocol.timing.cpu_threads).threads;
  load.init_inputs = load_reply.init_inputs;
  load.precision = options.protocol.precision;
  load.seed = options.protocol.construction_seed;
  Reply r = cand->call(msg::to_json(load), ms(options.timeouts.load_s + options.timeouts.build_s));
  reply_as<msg::LoadCandidateReply>(r);
  ext_lock.reset();
  phase_done("load");
  if (r.status != Reply::Status::ok) {
    fail_from(r, "");
    if (record.verdict == Verdict::timeout) record.message = "constructing ModelNew: " + r.detail;
    record.seconds = since(t0);
    return record;
  }

  // 4. Trials x distributions, each a fresh draw from its own seed.
  const Protocol& p = options.protocol;
  std::vector<uint64_t> trial_seeds;
  if (p.trial_seeds == "kernelbench") {
    Reply s = ref->call(msg::to_json(msg::KernelbenchSeedsRequest{p.trials}), ms(options.timeouts.reference_s));
    if (auto ks = reply_as<msg::KernelbenchSeedsReply>(s)) trial_seeds = ks->seeds;
  }
  SeedSource seeds(p.seed);
  std::vector<TrialResult> dists;
  json reference_error;  // below fp32: the worst error of the reference itself, per output
  int passed = 0, total = 0;
  std::string first_failure;
  bool stopped = false;
  // One check: the reference draws the inputs of `seed` at the distribution's scale, the candidate
  // runs them, the reference compares. Attempt 0 is the check itself, 1.. its identical re-runs
  // (same seed, so the same inputs). Empty when the evaluation stops; the record says why.
  // A hidden config (protocol/hidden.h) is the draw `draws_before` + 1 of the seed's stream.
  struct Checked {
    msg::CheckReply reply;
    std::optional<json> reference_error;
    bool reference_failed = false;  // a hidden config the reference fails on, counted as passed
  };
  auto check_once = [&](int trial, const Distribution& d, uint64_t seed, int attempt,
                        int draws_before = -1) -> std::optional<Checked> {
    const bool hidden = draws_before >= 0;
    const std::string again = attempt > 0 ? fmt::format(" re-run {}", attempt) : std::string();
    msg::InputsRequest inputs;
    inputs.seed = seed;
    inputs.scale = d.scale;
    inputs.input_draw = p.input_draw;
    inputs.draws_before = hidden ? draws_before : 0;
    inputs.replace = d.replace;
    inputs.replace_arg = d.replace_arg;
    inputs.cast_integer_inputs = p.cast_integer_inputs;
    inputs.tolerance.atol = p.atol;
    inputs.tolerance.rtol = p.rtol;
    inputs.tolerance.rel_l2 = p.rel_l2;
    Reply in = ref->call(msg::to_json(inputs), ms(options.timeouts.reference_s));
    std::optional<msg::InputsReply> drawn = reply_as<msg::InputsReply>(in);
    if (!drawn) {
      FailureKind f = classify(worker_failure(in), "problem_error");
      if (hidden && p.hidden_reference_failure_passes && f.kind == "problem_error") {
        // KernelBench-Verified: "Reference failed -> skip this config (not a kernel issue)".
        Checked skipped;
        skipped.reply.passed = true;
        skipped.reply.reason = "the reference failed on this hidden config (counted as passed, as upstream): " +
                               f.message;
        skipped.reference_failed = true;
        return skipped;
      }
      std::string msg = fmt::format("{}: the reference failed on trial {} {} (x{}){}: {}", pair.problem_path.string(),
                                    trial, d.name, d.scale, again, f.message);
      fail_problem(record, f.kind == "interrupted", msg);
      reference.reset();
      return std::nullopt;
    }
    Reply out = cand->call(msg::to_json(msg::RunRequest{drawn->args}), ms(options.timeouts.call_s));
    std::optional<msg::RunReply> ran = reply_as<msg::RunReply>(out);
    if (!ran) {
      const std::string where = fmt::format("trial {} {} (x{}){}", trial, d.name, d.scale, again);
      fail_from(out, where);
      if (record.verdict == Verdict::runtime_error)
        if (auto m = dtype_fallback_message(msg::failure_of(out.body).message, p.precision, drawn->args)) {
          record.message = where + ": " + *m;
          record.metadata.runtime_error = record.message;
          record.metadata.dtype_fallback = true;
        }
      ref->call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.reference_s));
      return std::nullopt;
    }
    Reply chk = ref->call(msg::to_json(msg::CheckRequest{ran->outputs, p.wire_tolerance()}),
                          ms(options.timeouts.reference_s));
    cand->call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.call_s));
    ref->call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.reference_s));
    std::optional<msg::CheckReply> checked = reply_as<msg::CheckReply>(chk);
    if (!checked) {
      FailureKind f = classify(worker_failure(chk), "runtime_error");
      // A malformed output handle is the candidate's doing; a dead reference is not.
      std::string kind = f.kind;
      set_verdict(record,
                  kind == "interrupted"     ? Verdict::interrupted
                  : kind == "runtime_error" ? Verdict::runtime_error
                                            : Verdict::problem_error,
                  fmt::format("checking trial {} {}{}: {}", trial, d.name, again, f.message));
      if (kind != "runtime_error") reference.reset();
      return std::nullopt;
    }
    if (!checked->mutated_inputs.empty() && !has_reject(record))
      record.findings.push_back(make_finding(
          "input_mutation", "reject",
          fmt::format("the candidate changed input(s) {} which the reference leaves unchanged",
                      json(checked->mutated_inputs).dump()),
          fmt::format("trial {} {}{}", trial, d.name, again), "T8"));
    return Checked{std::move(*checked), drawn->reference_error};
  };
  std::optional<uint64_t> last_seed;  // the last check's seed: the hidden configs' stream
  for (int trial = 0; trial < p.trials && !stopped; ++trial) {
    for (const auto& d : p.distributions) {
      uint64_t seed = p.trial_seeds == "kernelbench" && trial < static_cast<int>(trial_seeds.size())
                          ? trial_seeds[trial]
                          : seeds.next();
      last_seed = seed;
      TrialResult entry;
      entry.trial = trial;
      entry.distribution = d.name;
      entry.scale = d.scale;
      if (p.seed || p.trial_seeds == "kernelbench") entry.seed = seed;
      std::optional<Checked> c = check_once(trial, d, seed, 0);
      if (!c) {
        stopped = true;
        break;
      }
      if (c->reference_error) {
        entry.reference_error = *c->reference_error;
        merge_reference_error(reference_error, *c->reference_error, d.name);
      }
      ++total;
      const msg::CheckReply& checked = c->reply;
      bool ok = checked.passed;
      entry.passed = ok;
      entry.comparisons = checked.comparisons;
      if (!ok) entry.reason = checked.reason;
      if (!checked.mutated_inputs.empty()) entry.mutated_inputs = checked.mutated_inputs;
      if (ok) ++passed;
      if (!ok && first_failure.empty()) {
        first_failure = fmt::format("trial {} {} (x{}): {}", trial, d.name, d.scale, checked.reason);
        // The first failed check, re-run as it was (DESIGN.md, Flaky): a pass on the same inputs
        // says the candidate is unstable, not wrong. Stops at the first re-run that passes.
        if (p.flaky_reruns > 0) {
          Flaky f;
          f.reruns = p.flaky_reruns;
          f.failed.push_back({trial, d.name, d.scale, 0, json(checked.reason), {}});
          for (int attempt = 1; attempt <= p.flaky_reruns && !stopped; ++attempt) {
            std::optional<Checked> again = check_once(trial, d, seed, attempt);
            if (!again) {
              stopped = true;
              break;
            }
            if (again->reply.passed) {
              f.passed.push_back({trial, d.name, d.scale, attempt, std::nullopt, {}});
              break;
            }
            f.failed.push_back({trial, d.name, d.scale, attempt, json(again->reply.reason), {}});
          }
          record.flaky = std::move(f);
        }
      }
      dists.push_back(entry);
      if (stopped) break;
    }
  }
  // 4b. Hidden configs (KernelBench-Verified, protocol/hidden.h), once every trial passed: config
  // i is the i-th draw after seeding with the last trial's seed, as get_hidden_inputs() draws them
  // right after the standard trials. Not re-run: upstream has no re-runs.
  if (!stopped && p.hidden_configs == "kernelbench-verified" && passed == total && total > 0 && last_seed) {
    int level = pair.level;
    const std::string folder = pair.problem_path.parent_path().filename().string();
    if (level == 0 && folder.rfind("level", 0) == 0) level = std::atoi(folder.c_str() + 5);
    const std::vector<Distribution> configs =
        verified_hidden_configs(level, pair.problem_path.filename().string());
    const uint64_t seed = *last_seed;
    for (size_t i = 0; i < configs.size(); ++i) {
      const Distribution& d = configs[i];
      std::optional<Checked> c = check_once(p.trials, d, seed, 0, static_cast<int>(i));
      if (!c) {
        stopped = true;
        break;
      }
      TrialResult entry;
      entry.trial = p.trials;
      entry.distribution = d.name;
      entry.scale = d.scale;
      entry.seed = seed;
      entry.unknown.extra["hidden_config"] = fmt::format("config_{}", i + 1);  // upstream's label
      entry.unknown.extra["draws_before"] = i;
      if (!d.replace.empty()) entry.unknown.extra["replace"] = {{"arg", d.replace_arg}, {"with", d.replace}};
      if (c->reference_failed) entry.unknown.extra["reference_failed"] = true;
      ++total;
      entry.passed = c->reply.passed;
      entry.comparisons = c->reply.comparisons;
      if (!c->reply.passed || c->reference_failed) entry.reason = c->reply.reason;
      if (!c->reply.mutated_inputs.empty()) entry.mutated_inputs = c->reply.mutated_inputs;
      if (c->reply.passed) ++passed;
      else if (first_failure.empty())
        first_failure = fmt::format("hidden config_{} {} (x{}): {}", i + 1, d.name, d.scale, c->reply.reason);
      dists.push_back(entry);
    }
  }
  record.distributions = std::move(dists);
  if (!reference_error.is_null()) record.reference_error = reference_error;
  record.metadata.correctness_trials = fmt::format("({} / {})", passed, total);
  record.seconds = since(t0);
  phase_done("checks");
  if (stopped) return record;
  // 5. Runtime audits (docs/POLICY.md) once every check passed: what ran, threads, aliasing,
  // determinism on fresh poisoned buffers, same storage with new values.
  // Not under the upstream protocols, which reproduce upstream (no runtime audits there).
  if (!p.runtime_audit && passed == total && total > 0)
    record.audit = json{{"skipped", "--protocol " + p.name + " reproduces upstream, which has no runtime audits"}};
  if (p.runtime_audit && !has_reject(record) && passed == total && total > 0) {
    AuditOutcome audit = run_runtime_audit(*ref, *cand, options, env.device, seeds.next(), seeds.next());
    record.audit = audit.details;
    if (!audit.compute.is_null()) record.compute = audit.compute;
    for (const auto& f : audit.findings) record.findings.push_back(f);
    record.seconds = since(t0);
    phase_done("audit");
    if (audit.candidate_failure) {
      fail_from(*audit.candidate_failure, audit.failure_context);
      return record;
    }
  }
  // 5b. Memory and kernel attribution of untimed calls (docs/MEMORY.md), once every check passed.
  if (!has_reject(record) && passed == total && total > 0) {
    measure_phase(record, *cand, *ref, options, seeds.next());
    phase_done("memory");
  }
  decide_checks(record, passed, total, first_failure);
  // 6. Timing (src/supervisor/timing_phase.h): only a correct candidate is timed.
  if (record.verdict == Verdict::correct && p.timing.enabled) {
    timing_phase(record, pair, options, env, *ref, *cand);
    phase_done("timing");
  }
  record.seconds = since(t0);  // the memory phase's too when nothing is timed
  return record;
}

// ---------------------------------------------------------------------------------------------
namespace {

struct Job {
  Pair pair;
  PreparedCandidate candidate;  // read, hashed and linted once
  RecordKey key;
};

// fp32 writes KernelBench's names; another precision gets its own file beside them
// (eval_results_bf16.json), so one run folder can hold both (docs/PRECISION.md).
std::string level_file_name(int level, bool several_levels, const std::string& precision) {
  std::string suffix = precision == "fp32" ? "" : "_" + precision;
  return several_levels ? fmt::format("eval_results_level{}{}.json", level, suffix)
                        : fmt::format("eval_results{}.json", suffix);
}

}  // namespace

std::string eval_results_name(int level, bool several_levels, const std::string& precision) {
  return level_file_name(level, several_levels, precision);
}

std::string check_gpus(const std::vector<int>& gpus, const Environment& env) {
  if (gpus.empty()) return "";
  std::string list;
  for (int g : gpus) list += (list.empty() ? "" : ",") + std::to_string(g);
  if (env.device != "cuda")
    return env.cuda_available ? fmt::format("--gpus {}: the device is {} (--device); drop --gpus or use --device cuda",
                                            list, env.device)
                              : fmt::format("--gpus {}: torch sees no GPU on this machine; drop --gpus to evaluate on "
                                            "the CPU",
                                            list);
  std::set<int> seen;
  for (int g : gpus) {
    if (g < 0 || g >= env.device_count)
      return fmt::format("--gpus {}: there is no GPU {}; torch sees {} GPU(s), 0 to {}", list, g, env.device_count,
                         env.device_count - 1);
    if (!seen.insert(g).second) return fmt::format("--gpus {}: GPU {} is named twice", list, g);
  }
  return "";
}

Outcome evaluate_run(const RunOptions& opt, const Notify& notify) {
  Discovery dataset = discover_dataset(opt.problems_dir, opt.level);
  if (!dataset.error.empty()) return Outcome::fail(Status::input_error, dataset.error);
  RunDiscovery run = discover_run(opt.run_dir, opt.level);
  if (!run.error.empty()) return Outcome::fail(Status::input_error, run.error);
  for (const auto& w : dataset.warnings) warn(notify, w);
  for (const auto& w : run.warnings) warn(notify, w);

  EvalOptions eval = opt.eval;
  std::string error;
  // Probed with every GPU visible, so that --gpus is checked against the devices torch sees.
  std::optional<Environment> env = probe_environment(eval, error);
  if (!env) return Outcome::fail(Status::input_error, error);
  if (std::string e = check_gpus(opt.gpus, *env); !e.empty()) return Outcome::fail(Status::input_error, e);
  if (!opt.gpus.empty()) eval.gpu = opt.gpus.front();
  eval.device = env->device;
  std::string phash = protocol_hash(eval.protocol, env->to_json());

  std::string store_error;
  std::unique_ptr<Store> store = Store::open(opt.run_dir / "kbv.sqlite", store_error);
  if (!store) return Outcome::fail(Status::input_error, store_error);

  std::map<std::pair<int, int>, const ProblemRef*> problems;
  for (const auto& p : dataset.problems)
    if (opt.only.takes(p)) problems[{p.level, p.id}] = &p;
  std::set<std::pair<int, int>> left_out;  // problems --only does not take
  for (const auto& p : dataset.problems)
    if (!opt.only.takes(p)) left_out.insert({p.level, p.id});
  if (!opt.only.empty() && problems.empty())
    return Outcome::fail(Status::input_error, fmt::format("--only {}: no problem of {} matches", opt.only_spec,
                                                          opt.problems_dir.string()));

  std::vector<std::unique_ptr<Job>> jobs;
  // Each level's eval_results.json: the latest record per sample of this protocol, loaded once
  // and kept current here entry by entry, so each new record rewrites its own level's file
  // without rereading the store or rebuilding the file from every record.
  std::map<int, EvalResultsFile> level_files;
  for (const auto& r : store->latest(phash)) level_files[r.level].put(r);
  std::set<int> changed_levels;  // levels with a record decided without any worker
  std::map<fs::path, std::shared_ptr<const FileText>> problem_texts;
  int skipped = 0;
  int unknown_problem = 0;  // samples naming a problem the dataset lacks (a problem_error each)
  std::set<int> levels;
  for (const auto& s : run.samples) {
    levels.insert(s.level);  // every level of the run, so the files' names do not depend on --only
    if (left_out.count({s.level, s.problem_id})) continue;
    auto job = std::make_unique<Job>();
    job->pair.solution_path = s.path;
    job->pair.level = s.level;
    job->pair.problem_id = s.problem_id;
    job->pair.sample_id = s.sample_id;
    job->candidate = read_candidate(s.path);  // linted below, once it is known to run
    job->key = {s.level, s.problem_id, s.sample_id, job->candidate.hash, phash};
    if (store->has(job->key)) {
      ++skipped;
      continue;
    }
    auto it = problems.find({s.level, s.problem_id});
    if (it == problems.end()) {
      Record r = base_record(job->pair, eval, *env);
      fail_problem(r, false,
                   fmt::format("{}: no problem with id {} in level {} under {}", s.path.string(), s.problem_id,
                               s.level, opt.problems_dir.string()));
      warn(notify, r.message);
      ++unknown_problem;
      if (std::string e = store->put(job->key, r); !e.empty())
        return Outcome::fail(Status::input_error, e + "; stopped, nothing evaluated");
      level_files[s.level].put(r);
      changed_levels.insert(s.level);
      continue;
    }
    job->pair.problem_path = it->second->path;
    // Each problem file read once, for all its samples.
    auto& text = problem_texts[it->second->path];
    if (!text) text = std::make_shared<const FileText>(read_file(it->second->path));
    job->pair.problem_text = text;
    lint_prepared(job->candidate, s.path, eval);
    jobs.push_back(std::move(job));
  }
  size_t total = jobs.size();
  info(notify, fmt::format("{} sample(s) to evaluate on {}{}, {} already stored for this protocol", total,
                           env->device_name, opt.gpus.size() > 1 ? fmt::format(" x{}", opt.gpus.size()) : "",
                           skipped));

  std::mutex mu;  // store, output files, counters
  std::atomic<bool> store_failed{false};
  std::atomic<size_t> next_eval{0};
  size_t done = 0, correct = 0;
  // After every stored record (an atomic replace: a crash leaves the file one sample behind the
  // store at most, never holding less than before).
  auto write_level = [&](int level) {
    std::string e = write_file_atomic(opt.run_dir / level_file_name(level, levels.size() > 1, eval.protocol.precision),
                                      level_files[level].json().dump(2));
    if (!e.empty()) info(notify, e);
  };
  for (int level : changed_levels) write_level(level);
  if (total == 0 && skipped == 0) {
    if (unknown_problem > 0)
      return Outcome::fail(Status::input_error,
                           fmt::format("nothing to evaluate in {}: {} sample(s) name a problem {} lacks",
                                       opt.run_dir.string(), unknown_problem, opt.problems_dir.string()));
    return Outcome::fail(Status::input_error, fmt::format("nothing to evaluate in {}: --only {} takes none of its samples",
                                                          opt.run_dir.string(), opt.only_spec));
  }

  // Builds run on CPU threads ahead of the evaluations.
  std::vector<BuildItem> items;
  for (const auto& job : jobs)
    items.push_back({job->candidate.solution, job->pair.solution_path, eval,
                     job->candidate.solution.ok ? std::optional<bool>(job->candidate.lint.rejected()) : std::nullopt});
  std::unique_ptr<BuildQueue> builds = queue_builds(std::move(items), *env, opt.build_jobs);
  begin_items(notify, total);
  std::vector<std::thread> threads;
  std::vector<int> devices = opt.gpus.empty() ? std::vector<int>{-1} : opt.gpus;
  for (int gpu : devices)
    threads.emplace_back([&, gpu]() {
      EvalOptions mine = eval;
      if (gpu >= 0) mine.gpu = gpu;
      ReferenceHost reference;
      for (;;) {
        size_t i = next_eval++;
        if (i >= jobs.size() || interrupted() || store_failed) return;
        Job& job = *jobs[i];
        item_started(notify, i, fmt::format("level {} problem {} sample {}", job.pair.level, job.pair.problem_id,
                                        job.pair.sample_id));
        BuildResult br = builds->get(i);
        Record record = evaluate_pair(job.pair, mine, *env, reference, &br, &job.candidate);
        if (record.verdict == Verdict::interrupted || interrupted()) return;
        std::lock_guard<std::mutex> lock(mu);
        if (std::string e = store->put(job.key, record); !e.empty()) {
          // A result that cannot be stored stops the run: going on would evaluate samples whose
          // results are lost, and eval_results.json must only hold what the store holds.
          if (store_error.empty()) store_error = e;
          store_failed = true;
          return;
        }
        level_files[job.pair.level].put(record);
        write_level(job.pair.level);
        ++done;
        const bool ok = record.is_correct();
        if (ok) ++correct;
        // A timed sample's speedups with their intervals, and its timing warnings (record/trust.h).
        const std::string timed = sample_line_suffix(record);
        item_done(notify, i, ok,
                          fmt::format("[{}/{}] level {} problem {} sample {}: {} ({:.1f} s){}{}{}", done, total,
                                      job.pair.level, job.pair.problem_id, job.pair.sample_id,
                                      verdict_name(record.verdict), record.seconds.value_or(0.0),
                                      ok ? "" : " - ", ok ? "" : first_line(record.message), timed));
      }
    });
  for (auto& t : threads) t.join();
  end_items(notify);
  for (int level : levels) write_level(level);
  if (store_failed)
    return Outcome::fail(Status::input_error, fmt::format("{}; stopped: {} of {} evaluated and stored ({} correct)",
                                                          store_error, done, total, correct));
  if (interrupted())
    return Outcome::fail(Status::interrupted,
                         fmt::format("interrupted: {} of {} evaluated and stored ({} correct); run again to resume",
                                     done, total, correct));
  info(notify, fmt::format("{} evaluated, {} correct; results in {}", done, correct,
                           (opt.run_dir / level_file_name(0, false, eval.protocol.precision)).string()));
  return Outcome::done();
}

}  // namespace kbv
