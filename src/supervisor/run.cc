#include "supervisor/run.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "util/clock.h"

#include "report/kernelbench.h"
#include "store/store.h"
#include "supervisor/timing_phase.h"
#include "supervisor/memory_phase.h"
#include "supervisor/audit_stage.h"
#include "supervisor/build_stage.h"
#include "supervisor/precision.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/interrupt.h"
#include "util/progress.h"

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
                                  FailureKind& failure) {
  FileText text = read_file(problem);
  if (!text.ok) {
    failure = {"problem_error", text.error};
    return nullptr;
  }
  std::string key = sha256_hex_parts({python_path(problem), text.text, options.device, options.protocol.precision});
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
  load.precision = options.protocol.precision;
  load.seed = options.protocol.construction_seed;
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
Record evaluate_pair(const Pair& pair, const EvalOptions& options, const Environment& env,
                     ReferenceHost& reference, const BuildResult* prebuilt) {
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
  SolutionSource solution = load_solution(pair.solution_path);
  if (!solution.ok) {
    fail_build(record, "compile_error", solution.error);
    return record;
  }
  record.solution_hash = sha256_hex(solution.code);
  record.source_origin = solution.origin;

  // 0. Static analysis: under the strict policy a rejecting finding ends it before any build.
  LintReport lint =
      lint_candidate(solution, pair.solution_path, options.protocol.policy, options.protocol.precision);
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
  WorkerProcess* ref = reference.get(pair.problem_path, options, load_reply, failure);
  if (!ref) {
    fail_problem(record, failure.kind == "interrupted", failure.message);
    return record;
  }
  if (!load_reply.overrides.empty()) record.problem_overrides = load_reply.overrides;

  // 3. The candidate worker, in its own process, with the extension cache of its build.
  std::string error;
  auto env_vars = device_env(options);
  env_vars["TORCH_EXTENSIONS_DIR"] = built.extensions_dir.string();
  for (const auto& [k, v] : built.env) env_vars[k] = v;  // the build's CXX: torch's up-to-date check holds
  auto cand = WorkerProcess::start("candidate", options.worker, env_vars, error, {pair.solution_path, ref, built.read});
  if (!cand) {
    set_verdict(record, Verdict::runtime_error, "cannot start the candidate worker: " + error);
    return record;
  }
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
  if (p.name == "kernelbench") {
    Reply s = ref->call(msg::to_json(msg::KernelbenchSeedsRequest{p.trials}), ms(options.timeouts.reference_s));
    if (auto ks = reply_as<msg::KernelbenchSeedsReply>(s)) trial_seeds = ks->seeds;
  }
  SeedSource seeds(p.seed);
  std::vector<TrialResult> dists;
  json reference_error;  // below fp32: the worst error of the reference itself, per output
  int passed = 0, total = 0;
  std::string first_failure;
  bool stopped = false;
  for (int trial = 0; trial < p.trials && !stopped; ++trial) {
    for (const auto& d : p.distributions) {
      uint64_t seed = p.name == "kernelbench" && trial < static_cast<int>(trial_seeds.size()) ? trial_seeds[trial]
                                                                                            : seeds.next();
      TrialResult entry;
      entry.trial = trial;
      entry.distribution = d.name;
      entry.scale = d.scale;
      if (p.seed || p.name == "kernelbench") entry.seed = seed;
      msg::InputsRequest inputs;
      inputs.seed = seed;
      inputs.scale = d.scale;
      inputs.input_draw = p.input_draw;
      inputs.tolerance.atol = p.atol;
      inputs.tolerance.rtol = p.rtol;
      inputs.tolerance.rel_l2 = p.rel_l2;
      Reply in = ref->call(msg::to_json(inputs), ms(options.timeouts.reference_s));
      std::optional<msg::InputsReply> drawn = reply_as<msg::InputsReply>(in);
      if (!drawn) {
        FailureKind f = classify(worker_failure(in), "problem_error");
        std::string msg = fmt::format("{}: the reference failed on trial {} {} (x{}): {}",
                                      pair.problem_path.string(), trial, d.name, d.scale, f.message);
        fail_problem(record, f.kind == "interrupted", msg);
        reference.reset();
        stopped = true;
        break;
      }
      if (drawn->reference_error) {
        entry.reference_error = *drawn->reference_error;
        merge_reference_error(reference_error, *drawn->reference_error, d.name);
      }
      Reply out = cand->call(msg::to_json(msg::RunRequest{drawn->args}), ms(options.timeouts.call_s));
      std::optional<msg::RunReply> ran = reply_as<msg::RunReply>(out);
      if (!ran) {
        const std::string where = fmt::format("trial {} {} (x{})", trial, d.name, d.scale);
        fail_from(out, where);
        if (record.verdict == Verdict::runtime_error)
          if (auto m = dtype_fallback_message(msg::failure_of(out.body).message, p.precision, drawn->args)) {
            record.message = where + ": " + *m;
            record.metadata.runtime_error = record.message;
            record.metadata.dtype_fallback = true;
          }
        ref->call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.reference_s));
        stopped = true;
        break;
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
                    fmt::format("checking trial {} {}: {}", trial, d.name, f.message));
        if (kind != "runtime_error") reference.reset();
        stopped = true;
        break;
      }
      ++total;
      bool ok = checked->passed;
      entry.passed = ok;
      entry.comparisons = checked->comparisons;
      if (!ok) entry.reason = checked->reason;
      if (!checked->mutated_inputs.empty()) {
        entry.mutated_inputs = checked->mutated_inputs;
        if (!has_reject(record))
          record.findings.push_back(make_finding(
              "input_mutation", "reject",
              fmt::format("the candidate changed input(s) {} which the reference leaves unchanged",
                          entry.mutated_inputs->dump()),
              fmt::format("trial {} {}", trial, d.name), "T8"));
      }
      if (ok) ++passed;
      if (!ok && first_failure.empty())
        first_failure = fmt::format("trial {} {} (x{}): {}", trial, d.name, d.scale, checked->reason);
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
  // Not under --protocol kernelbench, which reproduces upstream (no runtime audits there).
  if (p.name == "kernelbench" && passed == total && total > 0)
    record.audit = json{{"skipped", "--protocol kernelbench reproduces upstream, which has no runtime audits"}};
  if (p.name != "kernelbench" && !has_reject(record) && passed == total && total > 0) {
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
  SolutionSource solution;
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

int evaluate_run(const RunOptions& opt) {
  Discovery dataset = discover_dataset(opt.problems_dir, opt.level);
  if (!dataset.error.empty()) {
    std::fprintf(stderr, "kbv: %s\n", dataset.error.c_str());
    return 2;
  }
  RunDiscovery run = discover_run(opt.run_dir, opt.level);
  if (!run.error.empty()) {
    std::fprintf(stderr, "kbv: %s\n", run.error.c_str());
    return 2;
  }
  for (const auto& w : dataset.warnings) std::fprintf(stderr, "kbv: warning: %s\n", w.c_str());
  for (const auto& w : run.warnings) std::fprintf(stderr, "kbv: warning: %s\n", w.c_str());

  EvalOptions eval = opt.eval;
  std::string error;
  // Probed with every GPU visible, so that --gpus is checked against the devices torch sees.
  std::optional<Environment> env = probe_environment(eval, error);
  if (!env) {
    std::fprintf(stderr, "kbv: %s\n", error.c_str());
    return 2;
  }
  if (std::string e = check_gpus(opt.gpus, *env); !e.empty()) {
    std::fprintf(stderr, "kbv: %s\n", e.c_str());
    return 2;
  }
  if (!opt.gpus.empty()) eval.gpu = opt.gpus.front();
  eval.device = env->device;
  std::string phash = protocol_hash(eval.protocol, env->to_json());

  std::string store_error;
  std::unique_ptr<Store> store = Store::open(opt.run_dir / "kbv.sqlite", store_error);
  if (!store) {
    std::fprintf(stderr, "kbv: %s\n", store_error.c_str());
    return 2;
  }

  std::map<std::pair<int, int>, const ProblemRef*> problems;
  for (const auto& p : dataset.problems)
    if (opt.only.takes(p)) problems[{p.level, p.id}] = &p;
  std::set<std::pair<int, int>> left_out;  // problems --only does not take
  for (const auto& p : dataset.problems)
    if (!opt.only.takes(p)) left_out.insert({p.level, p.id});
  if (!opt.only.empty() && problems.empty()) {
    std::fprintf(stderr, "kbv: --only %s: no problem of %s matches\n", opt.only_spec.c_str(),
                 opt.problems_dir.c_str());
    return 2;
  }

  std::vector<std::unique_ptr<Job>> jobs;
  // The latest record per (level, problem, sample) of this protocol: loaded once, kept current
  // here, so each new record rewrites only its own level's file without rereading the store.
  std::map<std::tuple<int, int, int>, Record> latest;
  for (auto& r : store->latest(phash)) {
    std::tuple<int, int, int> key{r.level, r.problem_id, r.sample_id};
    latest[key] = std::move(r);
  }
  std::set<int> changed_levels;  // levels with a record decided without any worker
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
    job->solution = load_solution(s.path);
    job->key = {s.level, s.problem_id, s.sample_id, sha256_hex(job->solution.ok ? job->solution.code : ""), phash};
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
      std::fprintf(stderr, "kbv: warning: %s\n", r.message.c_str());
      ++unknown_problem;
      if (std::string e = store->put(job->key, r); !e.empty()) {
        std::fprintf(stderr, "kbv: %s; stopped, nothing evaluated\n", e.c_str());
        return 2;
      }
      latest[{s.level, s.problem_id, s.sample_id}] = r;
      changed_levels.insert(s.level);
      continue;
    }
    job->pair.problem_path = it->second->path;
    jobs.push_back(std::move(job));
  }
  size_t total = jobs.size();
  std::fprintf(stderr, "kbv: %zu sample(s) to evaluate on %s%s, %d already stored for this protocol\n", total,
               env->device_name.c_str(), opt.gpus.size() > 1 ? fmt::format(" x{}", opt.gpus.size()).c_str() : "",
               skipped);

  std::mutex mu;  // store, output files, counters
  std::atomic<bool> store_failed{false};
  std::atomic<size_t> next_eval{0};
  size_t done = 0, correct = 0;
  auto write_level = [&](int level) {
    std::vector<Record> mine;
    for (const auto& [key, r] : latest)
      if (std::get<0>(key) == level) mine.push_back(r);
    std::string e = write_file_atomic(opt.run_dir / level_file_name(level, levels.size() > 1, eval.protocol.precision),
                                      kernelbench_eval_results(mine).dump(2));
    if (!e.empty()) std::fprintf(stderr, "kbv: %s\n", e.c_str());
  };
  for (int level : changed_levels) write_level(level);
  if (total == 0 && skipped == 0) {
    if (unknown_problem > 0)
      std::fprintf(stderr, "kbv: nothing to evaluate in %s: %d sample(s) name a problem %s lacks\n",
                   opt.run_dir.c_str(), unknown_problem, opt.problems_dir.c_str());
    else
      std::fprintf(stderr, "kbv: nothing to evaluate in %s: --only %s takes none of its samples\n",
                   opt.run_dir.c_str(), opt.only_spec.c_str());
    return 2;
  }

  // Builds run on CPU threads ahead of the evaluations.
  std::vector<BuildItem> items;
  for (const auto& job : jobs) items.push_back({job->solution, job->pair.solution_path, eval});
  std::unique_ptr<BuildQueue> builds = queue_builds(std::move(items), *env, opt.build_jobs);
  Progress progress(total, {});
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
        progress.started(i, fmt::format("level {} problem {} sample {}", job.pair.level, job.pair.problem_id,
                                        job.pair.sample_id));
        BuildResult br = builds->get(i);
        Record record = evaluate_pair(job.pair, mine, *env, reference, &br);
        if (record.verdict == Verdict::interrupted || interrupted()) return;
        std::lock_guard<std::mutex> lock(mu);
        if (std::string e = store->put(job.key, record); !e.empty()) {
          // A result that cannot be stored stops the run: going on would evaluate samples whose
          // results are lost, and eval_results.json must only hold what the store holds.
          if (store_error.empty()) store_error = e;
          store_failed = true;
          return;
        }
        latest[{job.pair.level, job.pair.problem_id, job.pair.sample_id}] = record;
        write_level(job.pair.level);
        ++done;
        const bool ok = record.is_correct();
        if (ok) ++correct;
        progress.finished(i, ok,
                          fmt::format("[{}/{}] level {} problem {} sample {}: {} ({:.1f} s){}{}", done, total,
                                      job.pair.level, job.pair.problem_id, job.pair.sample_id,
                                      verdict_name(record.verdict), record.seconds.value_or(0.0),
                                      ok ? "" : " - ", ok ? "" : record.message.substr(0, 160)));
      }
    });
  for (auto& t : threads) t.join();
  progress.stop();
  for (int level : levels) write_level(level);
  if (store_failed) {
    std::fprintf(stderr, "kbv: %s; stopped: %zu of %zu evaluated and stored (%zu correct)\n", store_error.c_str(), done,
                 total, correct);
    return 2;
  }
  if (interrupted()) {
    std::fprintf(stderr, "kbv: interrupted: %zu of %zu evaluated and stored (%zu correct); run again to resume\n",
                 done, total, correct);
    return 130;
  }
  std::fprintf(stderr, "kbv: %zu evaluated, %zu correct; results in %s\n", done, correct,
               (opt.run_dir / level_file_name(0, false, eval.protocol.precision)).string().c_str());
  return 0;
}

}  // namespace kbv
