// `kbv eval` (one pair, or every sample of a run folder) and `kbv build`.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/output.h"
#include "cli/parse.h"
#include "problem/problem.h"
#include "cli/worker_command.h"
#include "supervisor/build_stage.h"
#include "supervisor/queue_run.h"
#include "supervisor/run.h"
#include "supervisor/timing_phase.h"
#include "util/fs.h"
#include "util/interrupt.h"

namespace kbv::cli {
namespace fs = std::filesystem;

namespace {

// "level1" folder -> 1; a problem file's own id.
void identify(const fs::path& problem, kbv::Pair& pair) {
  if (auto id = kbv::parse_problem_id(problem.filename().string())) pair.problem_id = *id;
  std::string parent = problem.parent_path().filename().string();
  if (parent.rfind("level", 0) == 0 && parent.size() > 5 && parent.find_first_not_of("0123456789", 5) == std::string::npos)
    pair.level = std::stoi(parent.substr(5));
}

int eval_one(const CommonFlags& flags, const std::string& problem, const std::string& solution,
             const std::string& json_out) {
  kbv::EvalOptions o = flags.options();
  if (!sandbox_preflight(o)) return 2;
  std::string error;
  std::unique_ptr<kbv::WorkerProcess> idle;
  auto env = kbv::probe_environment(o, error, &idle);
  if (!env) {
    std::fprintf(stderr, "kbv: %s\n", error.c_str());
    return 2;
  }
  o.device = env->device;
  kbv::Pair pair;
  pair.problem_path = problem;
  pair.solution_path = solution;
  identify(problem, pair);
  kbv::ReferenceHost reference;
  reference.adopt(std::move(idle));
  reference.warm().expect_next(false);  // one candidate: a worker started for a next one would go unused
  kbv::Record record = kbv::evaluate_pair(pair, o, *env, reference);
  if (kbv::interrupted()) {
    std::fprintf(stderr, "kbv: interrupted; nothing recorded\n");
    return 130;
  }
  if (!record.judges_candidate()) {  // harness_error: the host's failure, not a verdict on the candidate
    std::fprintf(stderr, "kbv: %s (the host failed, not the candidate); nothing recorded\n", record.message.c_str());
    return kExitInternal;
  }
  // Short human summary.
  std::fprintf(stderr, "%s: %s on %s\n", fs::path(solution).filename().c_str(), kbv::verdict_name(record.verdict),
               env->device_name.c_str());
  std::fprintf(stderr, "  %s\n", record.message.c_str());
  for (const auto& d : record.distributions) {
    if (d.passed.value_or(true)) continue;
    std::fprintf(stderr, "  failed: trial %d %s (x%g)\n", d.trial, d.distribution.c_str(), d.scale);
  }
  if (std::string t = kbv::timing_summary(record); !t.empty()) std::fprintf(stderr, "  %s\n", t.c_str());
  if (json_out == "-") {
    std::cout << kbv::to_json(record).dump(2) << "\n";
  } else if (!json_out.empty()) {
    std::string e = kbv::write_file_atomic(json_out, kbv::to_json(record).dump(2) + "\n");
    if (!e.empty()) {
      std::fprintf(stderr, "kbv: %s\n", e.c_str());
      return 2;
    }
  }
  // The problem could not judge the candidate (it does not load, or its reference fails): the
  // input is unusable, whatever the candidate is.
  return record.verdict == kbv::Verdict::problem_error ? kExitUsage : kExitOk;
}

struct EvalState {
  CommonFlags flags;
  std::string problem, solution, json_out, problems_dir, run_dir, gpus, only, queue;
  std::optional<int> level;
  int build_jobs = default_build_jobs();
  CLI::App* app = nullptr;
};

// `kbv eval --problems DIR --run DIR --queue URL`: the samples become jobs, kbv workers evaluate
// them; the options that travel are the evaluation's (the table's), never the host's.
int run_through_queue(const EvalState& s, kbv::RunOptions ro) {
  std::vector<std::string> host_flags(std::begin(kHostFlags), std::end(kHostFlags));
  host_flags.insert(host_flags.end(), {"gpus", "build-jobs"});  // this host's own run of the folder
  for (const std::string& host : host_flags) {
    if (s.app->get_option("--" + host)->count() == 0) continue;
    std::fprintf(stderr, "kbv eval: --%s is decided by the kbv workers that evaluate queued jobs (kbv worker --help), "
                         "not by kbv eval --queue\n", host.c_str());
    return kExitUsage;
  }
  kbv::QueueRunOptions qo;
  qo.run = std::move(ro);
  qo.queue_url = s.queue;
  std::string error;
  qo.job_options = s.flags.canonical_options(error);
  if (!error.empty()) {
    std::fprintf(stderr, "kbv eval: %s\n", error.c_str());
    return kExitUsage;
  }
  return finish("kbv eval", kbv::evaluate_run_through_queue(qo, printer("kbv eval")));
}

int run_eval(const EvalState& s) {
  bool single = !s.problem.empty() || !s.solution.empty();
  bool batch = !s.problems_dir.empty() || !s.run_dir.empty();
  if (single == batch || (single && (s.problem.empty() || s.solution.empty())) ||
      (batch && (s.problems_dir.empty() || s.run_dir.empty()))) {
    std::fprintf(stderr, "kbv eval: give either --problem FILE --solution FILE, or --problems DIR --run DIR\n");
    return 2;
  }
  if (single) {
    // A file that cannot be read is a usage error, not a verdict.
    for (const auto& [flag, path] : {std::pair{"--problem", s.problem}, std::pair{"--solution", s.solution}})
      if (std::string why = unreadable(path); !why.empty()) {
        std::fprintf(stderr, "kbv eval: %s %s: %s\n", flag, path.c_str(), why.c_str());
        return kExitUsage;
      }
    if (!s.queue.empty()) {
      std::string error;
      const nlohmann::json options = s.flags.canonical_options(error);
      if (!error.empty()) {
        std::fprintf(stderr, "kbv eval: %s\n", error.c_str());
        return kExitUsage;
      }
      return eval_through_queue(*s.app, options, s.queue, s.problem, s.solution, s.json_out);
    }
    return eval_one(s.flags, s.problem, s.solution, s.json_out);
  }
  kbv::RunOptions ro;
  ro.problems_dir = s.problems_dir;
  ro.run_dir = s.run_dir;
  ro.level = s.level;
  if (!s.only.empty()) {
    std::string e;
    std::optional<kbv::ProblemSelection> sel = kbv::parse_selection(s.only, e);
    if (!sel) {
      std::fprintf(stderr, "kbv eval: %s\n", e.c_str());
      return kExitUsage;
    }
    ro.only = *sel;
    ro.only_spec = s.only;
  }
  ro.build_jobs = s.build_jobs;
  ro.eval = s.flags.options();
  if (!s.queue.empty()) return run_through_queue(s, std::move(ro));
  if (!sandbox_preflight(ro.eval)) return 2;
  const std::string& gpus = s.gpus;
  for (size_t pos = 0; !gpus.empty() && pos <= gpus.size();) {
    size_t comma = gpus.find(',', pos);
    std::string item = gpus.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    try {
      ro.gpus.push_back(std::stoi(item));
    } catch (...) {
      std::fprintf(stderr, "kbv eval: --gpus: '%s' is not a GPU index\n", item.c_str());
      return 2;
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return finish("kbv", kbv::evaluate_run(ro, printer("kbv")));
}

int build_one(const CommonFlags& flags, const std::string& solution_path) {
  if (std::string why = unreadable(solution_path); !why.empty()) {
    std::fprintf(stderr, "kbv build: %s: %s\n", solution_path.c_str(), why.c_str());
    return kExitUsage;
  }
  kbv::EvalOptions o = flags.options();
  std::string error;
  auto env = kbv::probe_environment(o, error);
  if (!env) {
    std::fprintf(stderr, "kbv: %s\n", error.c_str());
    return 2;
  }
  o.device = env->device;
  kbv::SolutionSource solution = kbv::load_solution(solution_path);
  if (!solution.ok) {
    std::fprintf(stderr, "kbv: %s\n", solution.error.c_str());
    return 1;
  }
  kbv::BuildResult b = kbv::build_candidate(solution, solution_path, o, *env);
  if (b.ok)
    std::fprintf(stderr, "%s: built%s in %.1f s\n", solution_path.c_str(), b.cached ? " (cached)" : "", b.seconds);
  else
    std::fprintf(stderr, "%s: %s: %s\n", solution_path.c_str(), b.kind.c_str(), b.message.c_str());
  return b.ok || b.kind == "missing_model_new" ? 0 : 1;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto s = std::make_shared<EvalState>();
  auto* eval = app.add_subcommand("eval", "evaluate one solution, or every sample of a KernelBench run folder");
  eval->add_option("--problem", s->problem, "a KernelBench problem file");
  eval->add_option("--solution", s->solution, "a solution file (.py, or a model's raw answer .md/.txt)");
  eval->add_option("--json", s->json_out, "write the JSON record here ('-': stdout)");
  eval->add_option("--problems", s->problems_dir, "a KernelBench dataset root (level1/..., level2/...)");
  eval->add_option("--run", s->run_dir, "a KernelBench run folder (level_L_problem_P_sample_S_kernel.py)");
  eval->add_option("--level", s->level, "only this level");
  eval->add_option("--only", s->only, "with --run: only these problems: ids, ranges, parts of names (19,23-25,ReLU)");
  eval->add_option("--gpus", s->gpus, "GPU indices to spread samples over, e.g. 0,1,2,3");
  eval->add_option("--build-jobs", s->build_jobs, "candidates compiled at once")->capture_default_str();
  eval->add_option("--queue", s->queue, "submit the pair (--problem/--solution) or every sample of the run folder "
                                        "(--problems/--run) to this job queue and wait for the kbv workers' records; "
                                        "a run's are stored as --run stores its own (docs/QUEUE.md)");
  s->flags.add(eval);
  s->app = eval;
  return {eval, [s]() { return run_eval(*s); }};
}

Command add_build_command(CLI::App& app) {
  struct State {
    CommonFlags flags;
    std::string solution;
  };
  auto s = std::make_shared<State>();
  auto* build = app.add_subcommand("build", "compile a solution into the build cache (no evaluation)");
  build->add_option("--solution", s->solution, "a solution file (.py, .md, .txt)")->required();
  s->flags.add(build);
  return {build, [s]() { return build_one(s->flags, s->solution); }};
}

}  // namespace kbv::cli
