// `kbv eval --problems DIR --run DIR`: the batch loop over a run folder's samples (evaluate_run),
// each stored and resumable, with each level's eval_results.json kept current.
#include "supervisor/run.h"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "record/trust.h"
#include "formats/eval_results.h"
#include "store/store.h"
#include "supervisor/build_stage.h"
#include "supervisor/pair_parts.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/text.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

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

// The samples of a run still to evaluate, and each level's eval_results.json.
struct RunPlan {
  std::vector<std::unique_ptr<Job>> jobs;
  // Each level's eval_results.json: the latest record per sample of this protocol, loaded once
  // and kept current here entry by entry, so each new record rewrites its own level's file
  // without rereading the store or rebuilding the file from every record.
  std::map<int, EvalResultsFile> level_files;
  std::set<int> changed_levels;  // levels with a record decided without any worker
  std::set<int> levels;          // every level of the run, so the files' names do not depend on --only
  int skipped = 0;
  int unknown_problem = 0;  // samples naming a problem the dataset lacks (a problem_error each)
};

// What every part of one run works with.
struct RunContext {
  const RunOptions& opt;
  const EvalOptions& eval;
  const Environment& env;
  Store& store;
  const Notify& notify;
};

// After every stored record (an atomic replace: a crash leaves the file one sample behind the
// store at most, never holding less than before).
void write_level(const RunContext& c, RunPlan& plan, int level) {
  std::string e = write_file_atomic(c.opt.run_dir / level_file_name(level, plan.levels.size() > 1,
                                                                     c.eval.protocol.precision),
                                    plan.level_files[level].json().dump(2));
  if (!e.empty()) info(c.notify, e);
}

// Every sample of the run not stored yet for this protocol becomes a job: its solution read,
// hashed and linted once, its problem file read once for all its samples. A sample naming a
// problem the dataset lacks is stored as a problem_error. "" or why the store failed.
std::string plan_jobs(const RunContext& c, const RunDiscovery& run, const std::string& phash,
                      const std::map<std::pair<int, int>, const ProblemRef*>& problems,
                      const std::set<std::pair<int, int>>& left_out, RunPlan& plan) {
  for (const auto& r : c.store.latest(phash)) plan.level_files[r.level].put(r);
  std::map<fs::path, std::shared_ptr<const FileText>> problem_texts;
  for (const auto& s : run.samples) {
    plan.levels.insert(s.level);
    if (left_out.count({s.level, s.problem_id})) continue;
    auto job = std::make_unique<Job>();
    job->pair.solution_path = s.path;
    job->pair.level = s.level;
    job->pair.problem_id = s.problem_id;
    job->pair.sample_id = s.sample_id;
    job->candidate = read_candidate(s.path);  // linted below, once it is known to run
    job->key = {s.level, s.problem_id, s.sample_id, job->candidate.hash, phash};
    if (c.store.has(job->key)) {
      ++plan.skipped;
      continue;
    }
    auto it = problems.find({s.level, s.problem_id});
    if (it == problems.end()) {
      Record r = base_record(job->pair, c.eval, c.env);
      fail_problem(r, false,
                   fmt::format("{}: no problem with id {} in level {} under {}", s.path.string(), s.problem_id,
                               s.level, c.opt.problems_dir.string()));
      warn(c.notify, r.message);
      ++plan.unknown_problem;
      if (std::string e = c.store.put(job->key, r); !e.empty()) return e;
      plan.level_files[s.level].put(r);
      plan.changed_levels.insert(s.level);
      continue;
    }
    job->pair.problem_path = it->second->path;
    // Each problem file read once, for all its samples.
    auto& text = problem_texts[it->second->path];
    if (!text) text = std::make_shared<const FileText>(read_file(it->second->path));
    job->pair.problem_text = text;
    lint_prepared(job->candidate, s.path, c.eval);
    plan.jobs.push_back(std::move(job));
  }
  return "";
}

// What the evaluation threads share: the next job, the counters and the store's failure (under `mu`).
struct RunProgress {
  std::mutex mu;  // store, output files, counters
  std::atomic<bool> store_failed{false};
  std::atomic<size_t> next_eval{0};
  size_t done = 0, correct = 0;
  std::string store_error;
  std::vector<std::string> host_failures;  // samples the host failed (harness_error): left to a re-run
};

// One device's thread: takes the next job until none is left, the run is interrupted or a
// result cannot be stored; each record stored and its level's file rewritten.
void evaluate_jobs(const RunContext& c, RunPlan& plan, BuildQueue& builds, RunProgress& progress, int gpu) {
  EvalOptions mine = c.eval;
  if (gpu >= 0) mine.gpu = gpu;
  ReferenceHost reference;
  const size_t total = plan.jobs.size();
  for (;;) {
    size_t i = progress.next_eval++;
    if (i >= plan.jobs.size() || interrupted() || progress.store_failed) return;
    Job& job = *plan.jobs[i];
    item_started(c.notify, i, fmt::format("level {} problem {} sample {}", job.pair.level, job.pair.problem_id,
                                          job.pair.sample_id));
    BuildResult br = builds.get(i);
    reference.warm().expect_next(i + 1 < plan.jobs.size() &&
                                 plan.jobs[i + 1]->pair.problem_path == job.pair.problem_path);
    Record record = evaluate_pair(job.pair, mine, c.env, reference, &br, &job.candidate);
    if (record.verdict == Verdict::interrupted || interrupted()) return;
    std::lock_guard<std::mutex> lock(progress.mu);
    if (!record.judges_candidate()) {  // the host failed (harness_error): not stored, left to a re-run
      progress.host_failures.push_back(record.message);
      item_done(c.notify, i, false, fmt::format("level {} problem {} sample {}: not evaluated: {}", job.pair.level,
                                                job.pair.problem_id, job.pair.sample_id, first_line(record.message)));
      continue;
    }
    if (std::string e = c.store.put(job.key, record); !e.empty()) {
      // A result that cannot be stored stops the run: going on would evaluate samples whose
      // results are lost, and eval_results.json must only hold what the store holds.
      if (progress.store_error.empty()) progress.store_error = e;
      progress.store_failed = true;
      return;
    }
    plan.level_files[job.pair.level].put(record);
    write_level(c, plan, job.pair.level);
    ++progress.done;
    const bool ok = record.is_correct();
    if (ok) ++progress.correct;
    // A timed sample's speedups with their intervals, and its timing warnings (record/trust.h).
    const std::string timed = sample_line_suffix(record);
    item_done(c.notify, i, ok,
              fmt::format("[{}/{}] level {} problem {} sample {}: {} ({:.1f} s){}{}{}", progress.done, total,
                          job.pair.level, job.pair.problem_id, job.pair.sample_id, verdict_name(record.verdict),
                          record.seconds.value_or(0.0), ok ? "" : " - ", ok ? "" : first_line(record.message), timed));
  }
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

  const RunContext c{opt, eval, *env, *store, notify};
  RunPlan plan;
  if (std::string e = plan_jobs(c, run, phash, problems, left_out, plan); !e.empty())
    return Outcome::fail(Status::input_error, e + "; stopped, nothing evaluated");
  size_t total = plan.jobs.size();
  info(notify, fmt::format("{} sample(s) to evaluate on {}{}, {} already stored for this protocol", total,
                           env->device_name, opt.gpus.size() > 1 ? fmt::format(" x{}", opt.gpus.size()) : "",
                           plan.skipped));
  for (int level : plan.changed_levels) write_level(c, plan, level);
  if (total == 0 && plan.skipped == 0) {
    if (plan.unknown_problem > 0)
      return Outcome::fail(Status::input_error,
                           fmt::format("nothing to evaluate in {}: {} sample(s) name a problem {} lacks",
                                       opt.run_dir.string(), plan.unknown_problem, opt.problems_dir.string()));
    return Outcome::fail(Status::input_error, fmt::format("nothing to evaluate in {}: --only {} takes none of its samples",
                                                          opt.run_dir.string(), opt.only_spec));
  }

  // Builds run on CPU threads ahead of the evaluations.
  std::vector<BuildItem> items;
  for (const auto& job : plan.jobs)
    items.push_back({job->candidate.solution, job->pair.solution_path, eval,
                     job->candidate.solution.ok ? std::optional<bool>(job->candidate.lint.rejected()) : std::nullopt});
  std::unique_ptr<BuildQueue> builds = queue_builds(std::move(items), *env, opt.build_jobs);
  begin_items(notify, total);
  RunProgress progress;
  std::vector<std::thread> threads;
  std::vector<int> devices = opt.gpus.empty() ? std::vector<int>{-1} : opt.gpus;
  for (int gpu : devices) threads.emplace_back([&, gpu]() { evaluate_jobs(c, plan, *builds, progress, gpu); });
  for (auto& t : threads) t.join();
  end_items(notify);
  for (int level : plan.levels) write_level(c, plan, level);
  if (progress.store_failed)
    return Outcome::fail(Status::input_error, fmt::format("{}; stopped: {} of {} evaluated and stored ({} correct)",
                                                          progress.store_error, progress.done, total, progress.correct));
  if (interrupted())
    return Outcome::fail(Status::interrupted,
                         fmt::format("interrupted: {} of {} evaluated and stored ({} correct); run again to resume",
                                     progress.done, total, progress.correct));
  if (!progress.host_failures.empty())
    return Outcome::fail(Status::incomplete,
                         fmt::format("{} of {} sample(s) not evaluated: the host failed, not the candidate ({}{}); "
                                     "nothing is stored for them, run again to evaluate them ({} evaluated and "
                                     "stored, {} correct)",
                                     progress.host_failures.size(), total, first_line(progress.host_failures.front()),
                                     progress.host_failures.size() > 1 ? ", and more" : "", progress.done,
                                     progress.correct));
  info(notify, fmt::format("{} evaluated, {} correct; results in {}", progress.done, progress.correct,
                           (opt.run_dir / level_file_name(0, false, eval.protocol.precision)).string()));
  return Outcome::done();
}

}  // namespace kbv
