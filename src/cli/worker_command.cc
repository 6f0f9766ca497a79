// `kbv worker --queue URL`: leases jobs and evaluates them until stopped (SIGTERM/SIGINT release
// the job in flight).
#include "cli/worker_command.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cli/common_flags.h"
#include "cli/output.h"
#include "cli/parse.h"
#include "queue/worker_loop.h"
#include "supervisor/queue_job.h"
#include "supervisor/timing_phase.h"
#include "record/record.h"
#include "util/fs.h"
#include "util/interrupt.h"

namespace kbv::cli {

namespace fs = std::filesystem;

std::optional<std::vector<std::string>> job_option_args(const nlohmann::json& options, std::string& error) {
  std::vector<std::string> args;
  if (options.is_null()) return args;
  if (!options.is_object()) {
    error = "expected a JSON object of kbv eval's flags, got " + std::string(options.type_name());
    return std::nullopt;
  }
  for (const auto& [key, value] : options.items()) {
    std::string flag;
    for (char c : key) {
      if (c == '_') c = '-';
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
        error = fmt::format("'{}' is not a flag name (lowercase letters, digits, '-' and '_')", key);
        return std::nullopt;
      }
      flag += c;
    }
    if (flag.empty() || flag.front() == '-') {
      error = fmt::format("'{}' is not a flag name (give it without dashes)", key);
      return std::nullopt;
    }
    if (std::find(std::begin(kHostFlags), std::end(kHostFlags), flag) != std::end(kHostFlags)) {
      error = fmt::format("'{}' is decided by the worker's host (kbv worker --{}), not by a job", key, flag);
      return std::nullopt;
    }
    std::string text;
    if (value.is_null()) continue;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_boolean()) {
      text = value.get<bool>() ? "on" : "off";
    } else if (value.is_number()) {
      text = value.dump();
    } else if (value.is_array()) {
      for (const auto& item : value) {
        if (!item.is_string() && !item.is_number()) {
          error = fmt::format("'{}': a list of strings or numbers was expected", key);
          return std::nullopt;
        }
        text += (text.empty() ? "" : ",") + (item.is_string() ? item.get<std::string>() : item.dump());
      }
    } else {
      error = fmt::format("'{}': expected a string, a number, true/false or a list, got an {}", key, value.type_name());
      return std::nullopt;
    }
    // One argument, "--name=value": a value that starts with dashes stays a value.
    args.push_back("--" + flag + "=" + text);
  }
  return args;
}

namespace {

struct WorkerFlags {
  std::string queue_url;
  std::string gpus;
  std::vector<std::string> problems;
  double lease_s = 120;
  double heartbeat_s = 15;
  bool drain = false;
  long long max_jobs = -1;
  std::string scratch;
  std::string role = "all";
  WorkerHost host;
};

std::optional<std::vector<int>> parse_gpus(const std::string& text, std::string& error) {
  std::vector<int> gpus;
  size_t pos = 0;
  while (!text.empty() && pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos) {
      error = fmt::format("--gpus: '{}' is not a GPU index", item);
      return std::nullopt;
    }
    gpus.push_back(std::stoi(item));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return gpus;
}

int run_worker(const WorkerFlags& flags, const WorkerHooks& hooks) {
  const std::string prefix = "kbv worker";
  Notify notify = printer(prefix);
  std::string error;
  auto gpus = parse_gpus(flags.gpus, error);
  if (!gpus) return finish(prefix, Outcome::fail(Status::input_error, error + " (kbv worker --help)"));
  if (flags.heartbeat_s * 2 > flags.lease_s) {
    return finish(prefix, Outcome::fail(Status::input_error,
                                        fmt::format("--heartbeat {:g} must be at most half of --lease {:g}",
                                                    flags.heartbeat_s, flags.lease_s)));
  }
  for (const auto& dir : flags.problems) {
    if (!fs::is_directory(dir)) {
      return finish(prefix, Outcome::fail(Status::input_error, fmt::format("--problems {}: not a folder", dir)));
    }
  }
  // The options every job starts from, checked once: a host that cannot run candidates says so
  // before it takes any job.
  auto defaults = hooks.parse_options({}, flags.host, error);
  if (!defaults) return finish(prefix, Outcome::fail(Status::input_error, error));
  // The cache folder is made here, as kbv eval makes its own: the sandbox binds it into the build
  // worker, which cannot start when it is missing.
  if (std::error_code ec; !fs::create_directories(defaults->cache_dir, ec) && ec)
    return finish(prefix, Outcome::fail(Status::input_error, fmt::format("--cache-dir {}: cannot create it: {}",
                                                                         defaults->cache_dir.string(), ec.message())));
  if (!hooks.preflight(*defaults)) return kExitUsage;
  const fs::path scratch = flags.scratch.empty() ? defaults->cache_dir / "worker" : fs::path(flags.scratch);

  // One loop per GPU (or one without --gpus), each with its own connection.
  std::vector<std::optional<int>> slots;
  for (int g : *gpus) slots.emplace_back(g);
  if (slots.empty()) slots.emplace_back(std::nullopt);
  std::vector<queue::LoopStats> stats(slots.size());
  std::vector<std::string> open_errors(slots.size());
  std::vector<HandoffStats> handoff(slots.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < slots.size(); ++i) {
    threads.emplace_back([&, i] {
      std::string why;
      auto q = queue::Queue::open(flags.queue_url, why);
      if (!q) {
        open_errors[i] = why;
        return;
      }
      QueueJobContext context;
      context.options_of = [&](const nlohmann::json& options, std::string& e) -> std::optional<EvalOptions> {
        auto args = job_option_args(options, e);
        if (!args) return std::nullopt;
        return hooks.parse_options(*args, flags.host, e);
      };
      context.scratch_dir = scratch / (slots[i] ? fmt::format("gpu{}", *slots[i]) : std::string("cpu"));
      for (const auto& d : flags.problems) context.problems_dirs.emplace_back(d);
      context.gpu = slots[i];
      context.role = flags.role;
      context.queue = q.get();
      context.notify = notify;
      QueueJobRunner runner(context);
      queue::LoopOptions loop;
      loop.worker = queue::default_worker_name() + (slots[i] ? fmt::format(":gpu{}", *slots[i]) : "");
      if (flags.role != "all") loop.worker += ":" + flags.role;
      loop.stage = flags.role == "build" ? queue::kStageBuild : flags.role == "eval" ? queue::kStageEval : "";
      loop.lease_seconds = flags.lease_s;
      loop.heartbeat_seconds = flags.heartbeat_s;
      loop.until_empty = flags.drain;
      loop.max_jobs = flags.max_jobs;
      loop.stop = [] { return interrupted(); };
      info(notify, fmt::format("{} takes {} from {}", loop.worker,
                               flags.role == "build" ? "build stages" : flags.role == "eval" ? "evaluations" : "jobs",
                               q->url()));
      stats[i] = queue::run_worker_loop(
          *q,
          [&](const queue::Job& job) {
            queue::ExecResult r = runner.run(job);
            if (r.kind == queue::ExecResult::Kind::done) {
              info(notify, fmt::format("job {} ({}): {}", job.id,
                                       job.spec.problem_name.empty() ? "problem from source" : job.spec.problem_name,
                                       r.record.value("verdict", std::string("?"))));
            }
            return r;
          },
          loop, notify);
      handoff[i] = runner.handoff();
    });
  }
  for (auto& t : threads) t.join();
  queue::LoopStats total;
  HandoffStats builds;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!open_errors[i].empty()) return finish(prefix, Outcome::fail(Status::input_error, open_errors[i]));
    builds.fetched += handoff[i].fetched;
    builds.compiled += handoff[i].compiled;
    builds.published += handoff[i].published;
    builds.passed_on += handoff[i].passed_on;
    builds.rebuilt += handoff[i].rebuilt;
    total.built += stats[i].built;
    total.done += stats[i].done;
    total.failed += stats[i].failed;
    total.lost += stats[i].lost;
    total.db_errors += stats[i].db_errors;
    total.released += stats[i].released;
  }
  info(notify, fmt::format("{} job(s) done, {} failed, {} lease(s) lost, {} released, {} database error(s)",
                           total.done, total.failed, total.lost, total.released, total.db_errors));
  if (flags.role == "build") {
    info(notify, fmt::format("{} build(s) put in the queue, {} handed on unbuilt (CUDA without TORCH_CUDA_ARCH_LIST), "
                             "{} job(s) sent to the eval stage",
                             builds.published, builds.passed_on, total.built));
  } else {
    info(notify, fmt::format("builds: {} from the queue, {} compiled here, {} from the queue compiled again at load",
                             builds.fetched, builds.compiled, builds.rebuilt));
  }
  if (interrupted()) return finish(prefix, Outcome::fail(Status::interrupted, "stopped (a job in flight, if any, went back to the queue)"));
  return finish(prefix, Outcome::done());
}

}  // namespace

int eval_through_queue(const CLI::App& eval, const nlohmann::json& options, const std::string& url,
                       const std::string& problem, const std::string& solution, const std::string& json_out) {
  const std::string prefix = "kbv eval";
  Notify notify = printer(prefix);
  // The evaluation's options travel canonical (`options`); the flags of the evaluating host do not.
  for (const char* name : kHostFlags) {
    if (eval.get_option(std::string("--") + name)->count() == 0) continue;
    return finish(prefix, Outcome::fail(Status::input_error,
                                        fmt::format("--{} is decided by the kbv worker that evaluates a queued job "
                                                    "(kbv worker --{}), not by kbv eval --queue",
                                                    name, name)));
  }
  FileText problem_text = read_file(problem), solution_text = read_file(solution);
  if (!problem_text.ok || !solution_text.ok) {
    return finish(prefix, Outcome::fail(Status::input_error, problem_text.ok ? solution_text.error : problem_text.error));
  }
  queue::JobSpec spec;
  // "level1/19_ReLU": the worker's record takes its level and problem id from the name.
  const fs::path path(problem);
  spec.problem_name = (path.parent_path().filename() / path.stem()).string();
  if (!safe_problem_name(spec.problem_name)) spec.problem_name = path.stem().string();
  if (!safe_problem_name(spec.problem_name)) spec.problem_name.clear();
  spec.problem_source = problem_text.text;
  spec.solution_source = solution_text.text;
  spec.options = options;
  std::string error;
  auto q = queue::Queue::open(url, error);
  if (!q) return finish(prefix, Outcome::fail(Status::input_error, error));
  auto id = q->submit(spec, error);
  if (!id) return finish(prefix, Outcome::fail(Status::internal, error));
  info(notify, fmt::format("job {} in {}; waiting for a kbv worker", *id, q->url()));
  std::optional<queue::Job> job;
  double backoff = 0.2;
  while (!interrupted()) {
    job = q->get(*id, error);
    if (!job && error.empty()) {
      return finish(prefix, Outcome::fail(Status::internal, fmt::format("job {} vanished from {}", *id, q->url())));
    }
    if (job && (job->state == queue::State::done || job->state == queue::State::failed)) break;
    if (!job) {
      warn(notify, fmt::format("{}; trying again in {:.1f} s", error, backoff));
      backoff = std::min(backoff * 2, 5.0);
    } else {
      backoff = 0.2;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
  }
  if (interrupted()) {
    return finish(prefix, Outcome::fail(Status::interrupted, fmt::format("interrupted; job {} stays in the queue", *id)));
  }
  if (job->state == queue::State::failed) {
    return finish(prefix, Outcome::fail(Status::incomplete, fmt::format("job {} failed: {}", *id, job->error)));
  }
  RecordRead read = record_from_json(job->record);
  if (!read.ok()) {
    return finish(prefix, Outcome::fail(Status::internal, fmt::format("job {}: its record does not read: {}", *id, read.error)));
  }
  info(notify, fmt::format("{}: {} (job {}, worker {})", fs::path(solution).filename().string(),
                           verdict_name(read.record.verdict), *id, job->worker));
  info(notify, read.record.message);
  if (std::string t = timing_summary(read.record); !t.empty()) info(notify, t);  // speedups, intervals, warnings
  if (json_out == "-") {
    data(notify, job->record.dump(2) + "\n");
  } else if (!json_out.empty()) {
    if (std::string e = write_file_atomic(json_out, job->record.dump(2) + "\n"); !e.empty()) {
      return finish(prefix, Outcome::fail(Status::input_error, e));
    }
  }
  return read.record.verdict == Verdict::problem_error ? kExitUsage : kExitOk;
}

std::unique_ptr<WorkerCommand> add_worker_command(CLI::App& app, WorkerHooks hooks) {
  auto command = std::make_unique<WorkerCommand>();
  auto flags = std::make_shared<WorkerFlags>();
  CLI::App* sub = app.add_subcommand(
      "worker", "take evaluations from a job queue (kbv serve's, or a shared PostgreSQL) and evaluate them (docs/QUEUE.md)");
  sub->add_option("--queue", flags->queue_url, "the queue: sqlite:/path/queue.db or postgresql://user@host:port/db")
      ->required();
  sub->add_option("--gpus", flags->gpus, "GPU indices, one evaluation at a time on each, e.g. 0,1 (default: one "
                                         "evaluation at a time on the default device)");
  sub->add_option("--problems", flags->problems,
                  "dataset roots where a job's problem name is looked up when it carries no source (repeatable)");
  sub->add_option("--lease", flags->lease_s, "seconds a job stays leased without a heartbeat")
      ->capture_default_str()
      ->check(kPositive);
  sub->add_option("--heartbeat", flags->heartbeat_s, "seconds between heartbeats (at most half of --lease)")
      ->capture_default_str()
      ->check(kPositive);
  sub->add_option("--role", flags->role,
                  "build: compile the jobs' candidates (CPU work) and put the builds in the queue; eval: evaluate "
                  "jobs whose build stage is done, with the queue's build; all: both, as kbv eval does "
                  "(docs/QUEUE.md)")
      ->check(CLI::IsMember({"build", "eval", "all"}))
      ->capture_default_str();
  sub->add_flag("--drain", flags->drain, "exit when the queue has nothing queued, instead of waiting for more");
  sub->add_option("--max-jobs", flags->max_jobs, "exit after this many jobs")->check(kPositive);
  sub->add_option("--scratch", flags->scratch, "folder for the jobs' files (default: CACHE_DIR/worker)");
  sub->add_option("--python", flags->host.python, "Python with torch 2.11 for the workers (default: KBV_PYTHON or "
                                                  "the build's)");
  sub->add_option("--cache-dir", flags->host.cache_dir, "build cache and worker logs (default: KBV_CACHE_DIR or "
                                                        "~/.cache/kbv)");
  sub->add_option("--sandbox", flags->host.sandbox,
                  "confinement of the workers that run candidate code, for every job (as kbv eval --sandbox)")
      ->check(CLI::IsMember({"strict", "best-effort", "off"}))
      ->capture_default_str();
  sub->add_option("--warm-workers", flags->host.warm_workers,
                  "pre-started candidate workers kept ready, for every job (as kbv eval --warm-workers)")
      ->check(CLI::Range(0, 16))
      ->capture_default_str();
  sub->add_option("--write-cap-mib", flags->host.write_cap_mib,
                  "what a confined candidate's files may hold at once, in MiB, for every job (as kbv eval --write-cap-mib)")
      ->check(CLI::Range(uint64_t{0}, kbv::kMaxWriteCapMib))
      ->capture_default_str();
  command->app = sub;
  command->run = [flags, hooks = std::move(hooks)] { return run_worker(*flags, hooks); };
  return command;
}

}  // namespace kbv::cli
