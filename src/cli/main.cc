// kbv: the supervisor. Parses flags, calls one module, prints. Never loads Python or torch.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "problem/problem.h"
#include "supervisor/problem_lint.h"
#include "supervisor/run.h"
#include "supervisor/selftest.h"
#include "util/fs.h"
#include "util/interrupt.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path default_cache_dir() {
  if (const char* d = std::getenv("KBV_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "kbv";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "kbv";
  return fs::temp_directory_path() / "kbv-cache";
}

// Flags shared by the commands that evaluate.
struct CommonFlags {
  std::string device;
  std::string python;
  std::string protocol = "kbv";
  int trials = -1;
  double tolerance = -1;
  std::optional<uint64_t> seed;
  std::string cache_dir;
  kbv::Timeouts timeouts;

  void add(CLI::App* app) {
    app->add_option("--device", device, "cuda or cpu (default: cuda when a GPU is visible)")
        ->check(CLI::IsMember({"cuda", "cpu"}));
    app->add_option("--protocol", protocol,
                    "kbv (KernelBench-Verified: 4 hidden distributions, 1e-3) or kernelbench (upstream, 1e-2)")
        ->check(CLI::IsMember({"kbv", "kernelbench"}));
    app->add_option("--trials", trials, "correctness trials (each over every distribution)")->check(CLI::PositiveNumber);
    app->add_option("--tolerance", tolerance, "atol = rtol = relative-L2 tolerance")->check(CLI::PositiveNumber);
    app->add_option("--seed", seed, "fixed master seed (default: secret seeds from the OS)");
    app->add_option("--python", python, "Python with torch 2.11 for the workers (default: KBV_PYTHON or the build's)");
    app->add_option("--cache-dir", cache_dir, "build cache and worker logs (default: KBV_CACHE_DIR or ~/.cache/kbv)");
    app->add_option("--timeout-build", timeouts.build_s, "seconds to compile a candidate")->capture_default_str();
    app->add_option("--timeout-load", timeouts.load_s, "seconds to load a problem or construct ModelNew")
        ->capture_default_str();
    app->add_option("--timeout-call", timeouts.call_s, "seconds for one forward call")->capture_default_str();
  }

  kbv::EvalOptions options() const {
    kbv::EvalOptions o;
    o.protocol = protocol == "kernelbench" ? kbv::kernelbench_protocol() : kbv::Protocol{};
    if (trials > 0) o.protocol.trials = trials;
    if (tolerance > 0) o.protocol.atol = o.protocol.rtol = o.protocol.rel_l2 = tolerance;
    o.protocol.seed = seed;
    o.device = device;
    o.timeouts = timeouts;
    o.cache_dir = cache_dir.empty() ? default_cache_dir() : fs::path(cache_dir);
    o.worker = kbv::default_worker_config(python);
    o.worker.log_dir = o.cache_dir / "logs";
    return o;
  }
};

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
  json record = kbv::evaluate_pair(pair, o, *env, reference);
  if (kbv::interrupted()) {
    std::fprintf(stderr, "kbv: interrupted; nothing recorded\n");
    return 130;
  }
  // Short human summary.
  std::string verdict = record["verdict"];
  std::fprintf(stderr, "%s: %s on %s\n", fs::path(solution).filename().c_str(), verdict.c_str(),
               env->device_name.c_str());
  std::fprintf(stderr, "  %s\n", record["message"].get<std::string>().c_str());
  for (const auto& d : record["distributions"]) {
    if (d.value("passed", true)) continue;
    std::fprintf(stderr, "  failed: trial %d %s (x%g)\n", d["trial"].get<int>(),
                 d["distribution"].get<std::string>().c_str(), d["scale"].get<double>());
  }
  if (json_out == "-") {
    std::cout << record.dump(2) << "\n";
  } else if (!json_out.empty()) {
    std::string e = kbv::write_file_atomic(json_out, record.dump(2) + "\n");
    if (!e.empty()) {
      std::fprintf(stderr, "kbv: %s\n", e.c_str());
      return 2;
    }
  }
  return 0;
}

int build_one(const CommonFlags& flags, const std::string& solution_path) {
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

int list_problems(const std::string& dir, std::optional<int> level, const CommonFlags& flags, bool shapes,
                  bool as_json) {
  kbv::Discovery d = kbv::discover_dataset(dir, level);
  if (!d.error.empty()) {
    std::fprintf(stderr, "kbv: %s\n", d.error.c_str());
    return 2;
  }
  for (const auto& w : d.warnings) std::fprintf(stderr, "kbv: warning: %s\n", w.c_str());
  kbv::EvalOptions o = flags.options();
  std::optional<kbv::Environment> env;
  if (shapes) {
    std::string error;
    env = kbv::probe_environment(o, error);
    if (!env) {
      std::fprintf(stderr, "kbv: %s\n", error.c_str());
      return 2;
    }
    o.device = env->device;
  }
  kbv::ReferenceHost reference;
  json rows = json::array();
  for (const auto& p : d.problems) {
    json row = {{"level", p.level}, {"id", p.id}, {"name", p.name}, {"path", p.path.string()}};
    std::string inputs;
    if (shapes) {
      json load, failure;
      kbv::WorkerProcess* w = reference.get(p.path, o, load, failure);
      kbv::Reply r;
      if (w) r = w->call({{"op", "describe"}, {"seed", 42}}, std::chrono::milliseconds(300000));
      if (w && r.status == kbv::Reply::Status::ok) {
        row["inputs"] = r.body["inputs"];
        for (const auto& i : r.body["inputs"]) {
          if (!inputs.empty()) inputs += ", ";
          if (i.contains("sizes")) {
            std::string s;
            for (const auto& n : i["sizes"]) s += (s.empty() ? "" : "x") + std::to_string(n.get<int64_t>());
            inputs += i["dtype"].get<std::string>() + "[" + s + "]";
          } else {
            inputs += i["value"].get<std::string>();
          }
        }
      } else {
        row["error"] = w ? (r.body.value("message", r.detail)) : failure.value("message", "");
        inputs = "error: " + row["error"].get<std::string>();
      }
    }
    if (as_json)
      rows.push_back(row);
    else
      std::printf("level%-2d %4d  %-48s %s\n", p.level, p.id, p.name.c_str(), inputs.c_str());
  }
  if (as_json) std::cout << rows.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  kbv::install_interrupt_handler();
  CLI::App app{"kbv: the truth about GPU kernels written to replace a PyTorch reference"};
  app.set_version_flag("--version", KBV_VERSION);
  app.require_subcommand(1);

  CommonFlags eval_flags;
  auto* eval = app.add_subcommand("eval", "evaluate one solution, or every sample of a KernelBench run folder");
  std::string problem, solution, json_out, problems_dir, run_dir, gpus;
  std::optional<int> level;
  const int default_jobs = std::max(2, static_cast<int>(std::thread::hardware_concurrency()) / 2);
  int build_jobs = default_jobs;
  eval->add_option("--problem", problem, "a KernelBench problem file");
  eval->add_option("--solution", solution, "a solution file (.py, or a model's raw answer .md/.txt)");
  eval->add_option("--json", json_out, "write the JSON record here ('-': stdout)");
  eval->add_option("--problems", problems_dir, "a KernelBench dataset root (level1/..., level2/...)");
  eval->add_option("--run", run_dir, "a KernelBench run folder (level_L_problem_P_sample_S_kernel.py)");
  eval->add_option("--level", level, "only this level");
  eval->add_option("--gpus", gpus, "GPU indices to spread samples over, e.g. 0,1,2,3");
  eval->add_option("--build-jobs", build_jobs, "candidates compiled at once")->capture_default_str();
  eval_flags.add(eval);

  CommonFlags list_flags;
  auto* problems = app.add_subcommand("problems", "list the problems of a KernelBench dataset root");
  std::string list_dir;
  std::optional<int> list_level;
  bool no_shapes = false;
  problems->add_option("dir", list_dir, "dataset root")->required();
  problems->add_option("--level", list_level, "only this level");
  problems->add_flag("--no-shapes", no_shapes, "do not load the problems to show their input shapes");
  bool list_json = false;
  problems->add_flag("--json", list_json, "print a JSON list (level, id, name, path, inputs or error)");
  problems->add_option("--device", list_flags.device, "sizes for cuda or cpu")->check(CLI::IsMember({"cuda", "cpu"}));
  problems->add_option("--python", list_flags.python, "Python with torch 2.11");

  CommonFlags build_flags;
  auto* build = app.add_subcommand("build", "compile a solution into the build cache (no evaluation)");
  std::string build_solution;
  build->add_option("--solution", build_solution, "a solution file (.py, .md, .txt)")->required();
  build_flags.add(build);

  CommonFlags self_flags;
  auto* selftest = app.add_subcommand("selftest", "evaluate the example corpus and print expected vs got");
  std::string manifest = "examples/manifest.json", self_json;
  selftest->add_option("--manifest", manifest, "the corpus manifest")->capture_default_str();
  selftest->add_option("--json", self_json, "write the JSON summary here ('-': stdout)");
  int self_jobs = default_jobs;
  selftest->add_option("--build-jobs", self_jobs, "candidates compiled at once")->capture_default_str();
  self_flags.add(selftest);

  CommonFlags lint_flags;
  auto* lint = app.add_subcommand("lint-problems", "flag problems that cannot judge a kernel (docs/PROBLEMS.md)");
  kbv::LintOptions lint_options;
  std::string lint_target, lint_json;
  lint->add_option("dir", lint_target, "a dataset root (level1/...) or one problem file")->required();
  lint->add_option("--level", lint_options.level, "only this level");
  lint->add_option("--json", lint_json, "write the JSON report here ('-': stdout)");
  lint->add_option("--seed", lint_options.seed, "master seed of the draws")->capture_default_str();
  lint->add_option("--jobs", lint_options.jobs, "problems linted at once")->capture_default_str();
  lint->add_option("--device", lint_flags.device, "cuda or cpu (default: cuda when a GPU is visible)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  lint->add_option("--protocol", lint_flags.protocol, "kbv or kernelbench: its tolerance and distributions")
      ->check(CLI::IsMember({"kbv", "kernelbench"}));
  lint->add_option("--tolerance", lint_flags.tolerance, "atol = rtol = relative-L2 tolerance")->check(CLI::PositiveNumber);
  lint->add_option("--python", lint_flags.python, "Python with torch 2.11");
  lint->add_option("--cache-dir", lint_flags.cache_dir, "worker logs (default: KBV_CACHE_DIR or ~/.cache/kbv)");
  lint->add_option("--timeout", lint_flags.timeouts.reference_s, "seconds for one distribution of one problem")
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (*eval) {
    bool single = !problem.empty() || !solution.empty();
    bool batch = !problems_dir.empty() || !run_dir.empty();
    if (single == batch || (single && (problem.empty() || solution.empty())) ||
        (batch && (problems_dir.empty() || run_dir.empty()))) {
      std::fprintf(stderr,
                   "kbv eval: give either --problem FILE --solution FILE, or --problems DIR --run DIR\n");
      return 2;
    }
    if (single) return eval_one(eval_flags, problem, solution, json_out);
    kbv::RunOptions ro;
    ro.problems_dir = problems_dir;
    ro.run_dir = run_dir;
    ro.level = level;
    ro.build_jobs = build_jobs;
    ro.eval = eval_flags.options();
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
    return kbv::evaluate_run(ro);
  }
  if (*build) return build_one(build_flags, build_solution);
  if (*selftest) {
    kbv::SelftestOptions so;
    so.manifest = manifest;
    so.device = self_flags.device;
    so.eval = self_flags.options();
    so.build_jobs = self_jobs;
    std::string error;
    json summary = kbv::run_selftest(so, error);
    if (!error.empty()) {
      std::fprintf(stderr, "kbv selftest: %s\n", error.c_str());
      return 2;
    }
    if (self_json == "-") std::cout << summary.dump(2) << "\n";
    else if (!self_json.empty()) kbv::write_file_atomic(self_json, summary.dump(2) + "\n");
    if (kbv::interrupted()) return 130;
    return summary.value("mismatches", 0) == 0 ? 0 : 1;
  }
  if (*lint) {
    lint_options.target = lint_target;
    lint_options.eval = lint_flags.options();
    std::string error;
    json report = kbv::lint_problems(lint_options, error);
    if (!error.empty()) {
      std::fprintf(stderr, "kbv lint-problems: %s\n", error.c_str());
      return 2;
    }
    if (lint_json == "-") {
      std::cout << report.dump(2) << "\n";
    } else if (!lint_json.empty()) {
      std::string e = kbv::write_file_atomic(lint_json, report.dump(2) + "\n");
      if (!e.empty()) {
        std::fprintf(stderr, "kbv lint-problems: %s\n", e.c_str());
        return 2;
      }
    }
    if (kbv::interrupted()) return 130;
    return report["summary"]["with_findings"].get<int>() == 0 ? 0 : 1;
  }
  if (*problems) return list_problems(list_dir, list_level, list_flags, !no_shapes, list_json);
  return 0;
}
