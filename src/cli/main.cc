// kbv: the supervisor. Parses flags, calls one module, prints. Never loads Python or torch.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/generate_command.h"
#include "cli/parse.h"
#include "problem/problem.h"
#include "report/command.h"
#include "supervisor/baseline_command.h"
#include "supervisor/precision.h"
#include "supervisor/problem_lint.h"
#include "supervisor/build_stage.h"
#include "supervisor/run.h"
#include "supervisor/selftest.h"
#include "supervisor/timing_phase.h"
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
  std::string policy = "strict";
  std::string precision = "fp32";
  int trials = -1;
  double tolerance = -1;
  std::optional<uint64_t> seed;
  std::string cache_dir;
  kbv::Timeouts timeouts;
  std::string timing = "on";
  double rse = -1, time_cap = -1;
  int timing_sets = -1;
  std::string timing_inputs;
  int64_t flush_bytes = -1;
  double launch_hold_us = -1;
  std::vector<std::string> baselines;
  std::string sandbox = "strict";
  std::string fast_build = "on";

  void add(CLI::App* app) {
    app->add_option("--fast-build", fast_build,
                    "compile candidates with a precompiled torch/extension.h and lld (same machine code; "
                    "DESIGN.md, The compile step); off: as load_inline alone compiles")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    app->add_option("--sandbox", sandbox,
                    "confinement of the workers that run candidate code (DESIGN.md, Sandbox): strict (refuse to run "
                    "when a layer cannot be applied), best-effort (what is available, recorded) or off")
        ->check(CLI::IsMember({"strict", "best-effort", "off"}))
        ->capture_default_str();
    app->add_option("--timing", timing, "time correct candidates and baselines (docs/TIMING.md)")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    app->add_option("--rse", rse, "stop sampling at this relative standard error (default 0.005)")
        ->check(kbv::cli::kPositive);
    app->add_option("--time-cap", time_cap, "seconds of sampling per timed callable at most (default 1)")
        ->check(kbv::cli::kPositive);
    app->add_option("--timing-inputs", timing_inputs,
                    "fresh (a new get_inputs() draw before every timed call, recomputed by the reference for spot "
                    "checks: no cache keyed on pointer, shape or content gains) or sets (--timing-sets input sets "
                    "cycled through); default fresh, sets when --timing-sets is given")
        ->check(CLI::IsMember({"fresh", "sets"}));
    app->add_option("--timing-sets", timing_sets, "input sets cycled through while timing with --timing-inputs sets "
                                                  "(default 4)")
        ->check(kbv::cli::kPositive);
    app->add_option("--flush-bytes", flush_bytes, "bytes written to flush the caches before each sample (default: "
                                                  "2 x L2 on a GPU, 2 x L3 up to 64 MiB on the CPU; 1: no flush)")
        ->check(kbv::cli::kPositive);
    app->add_option("--launch-hold-us", launch_hold_us,
                    fmt::format("GPU: microseconds the calling stream is held before each sample's start event, so the "
                                "host's launch is queued when the interval begins (default {:g}; 0: no hold; at most "
                                "{:g})",
                                kbv::kDefaultLaunchHoldUs, kbv::kMaxLaunchHoldUs))
        ->check(CLI::Range(0.0, kbv::kMaxLaunchHoldUs));
    app->add_option("--baselines", baselines, "baselines to time: tf32,fp32[,compile] (default tf32,fp32)")
        ->delimiter(',')
        ->check(CLI::IsMember({"tf32", "fp32", "compile"}));
    app->add_option("--device", device, "cuda or cpu (default: cuda when a GPU is visible)")
        ->check(CLI::IsMember({"cuda", "cpu"}));
    app->add_option("--protocol", protocol,
                    "kbv (KernelBench-Verified: 4 hidden distributions, 1e-3) or kernelbench (upstream, 1e-2)")
        ->check(CLI::IsMember({"kbv", "kernelbench"}));
    app->add_option("--policy", policy,
                    "strict (a cheating finding of the static analysis rejects, the candidate never runs) or "
                    "lenient (findings are warnings, as upstream: docs/POLICY.md)")
        ->check(CLI::IsMember({"strict", "lenient"}))
        ->capture_default_str();
    app->add_option("--precision", precision,
                    "fp32, bf16 or fp16: the model and floating inputs cast to it, tolerance 1e-3 (fp32) or 1e-2 "
                    "(docs/PRECISION.md)")
        ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
        ->capture_default_str();
    app->add_option("--trials", trials, "correctness trials (each over every distribution)")->check(kbv::cli::kPositive);
    app->add_option("--tolerance", tolerance, "atol = rtol = relative-L2 tolerance (default: the precision's)")
        ->check(kbv::cli::kPositive);
    app->add_option("--seed", seed, "fixed master seed (default: secret seeds from the OS)");
    app->add_option("--python", python, "Python with torch 2.11 for the workers (default: KBV_PYTHON or the build's)");
    app->add_option("--cache-dir", cache_dir, "build cache and worker logs (default: KBV_CACHE_DIR or ~/.cache/kbv)");
    app->add_option("--timeout-build", timeouts.build_s, "seconds to compile a candidate")
        ->capture_default_str()
        ->check(kbv::cli::kPositive);
    app->add_option("--timeout-load", timeouts.load_s, "seconds to load a problem or construct ModelNew")
        ->capture_default_str()
        ->check(kbv::cli::kPositive);
    app->add_option("--timeout-call", timeouts.call_s, "seconds for one forward call")
        ->capture_default_str()
        ->check(kbv::cli::kPositive);
  }

  kbv::EvalOptions options() const {
    kbv::EvalOptions o;
    o.protocol = protocol == "kernelbench" ? kbv::kernelbench_protocol() : kbv::Protocol{};
    if (trials > 0) o.protocol.trials = trials;
    kbv::set_precision(o.protocol, precision);
    if (tolerance > 0) o.protocol.atol = o.protocol.rtol = o.protocol.rel_l2 = tolerance;
    o.protocol.seed = seed;
    o.protocol.policy = *kbv::parse_policy(policy);
    o.protocol.timing.enabled = timing == "on";
    if (rse > 0) o.protocol.timing.rule.rse_target = rse;
    if (time_cap > 0) o.protocol.timing.rule.time_cap_s = time_cap;
    if (timing_sets > 0) o.protocol.timing.sets = timing_sets;
    o.protocol.timing.fresh = timing_inputs.empty() ? timing_sets <= 0 : timing_inputs == "fresh";
    if (flush_bytes > 0) o.protocol.timing.flush_bytes = static_cast<uint64_t>(flush_bytes);
    if (launch_hold_us >= 0) o.protocol.timing.launch_hold_us = launch_hold_us;
    if (!baselines.empty()) o.protocol.timing.baselines = baselines;
    o.device = device;
    o.timeouts = timeouts;
    o.cache_dir = cache_dir.empty() ? default_cache_dir() : fs::path(cache_dir);
    o.worker = kbv::default_worker_config(python);
    o.worker.log_dir = o.cache_dir / "logs";
    o.worker.sandbox = *kbv::sandbox::parse_mode(sandbox);
    o.fast_build = fast_build == "on";
    return o;
  }
};

// --sandbox before anything runs: strict refuses when a layer cannot be applied here; best-effort
// says what it runs without. False: refused (the message is printed).
bool sandbox_preflight(const kbv::EvalOptions& o) {
  const kbv::sandbox::Availability a = kbv::sandbox::probe();
  if (std::string why = kbv::sandbox::refusal(o.worker.sandbox, a); !why.empty()) {
    std::fprintf(stderr, "kbv: %s\n", why.c_str());
    return false;
  }
  if (o.worker.sandbox == kbv::sandbox::Mode::best_effort) {
    std::string missing;
    for (int i = 0; i < kbv::sandbox::kLayerCount; ++i) {
      auto l = static_cast<kbv::sandbox::Layer>(i);
      if (!a.available(l))
        missing += fmt::format("{}{} ({})", missing.empty() ? "" : ", ", kbv::sandbox::layer_name(l), a.reason[l]);
    }
    if (!missing.empty()) std::fprintf(stderr, "kbv: --sandbox best-effort: running without %s\n", missing.c_str());
  }
  return true;
}

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
  kbv::Record record = kbv::evaluate_pair(pair, o, *env, reference);
  if (kbv::interrupted()) {
    std::fprintf(stderr, "kbv: interrupted; nothing recorded\n");
    return 130;
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
  return record.verdict == kbv::Verdict::problem_error ? kbv::cli::kExitUsage : kbv::cli::kExitOk;
}

int build_one(const CommonFlags& flags, const std::string& solution_path) {
  if (std::string why = kbv::cli::unreadable(solution_path); !why.empty()) {
    std::fprintf(stderr, "kbv build: %s: %s\n", solution_path.c_str(), why.c_str());
    return kbv::cli::kExitUsage;
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
      kbv::msg::LoadProblemReply load;
      kbv::FailureKind failure;
      kbv::WorkerProcess* w = reference.get(p.path, o, load, failure);
      kbv::Reply r;
      std::optional<kbv::msg::DescribeReply> described;
      if (w) {
        r = w->call(kbv::msg::to_json(kbv::msg::DescribeRequest{42}), std::chrono::milliseconds(300000));
        described = kbv::reply_as<kbv::msg::DescribeReply>(r);
      }
      if (described) {
        row["inputs"] = json::array();
        for (const auto& i : described->inputs) {
          row["inputs"].push_back(kbv::msg::to_json(i));
          if (!inputs.empty()) inputs += ", ";
          if (i.sizes) {
            std::string s;
            for (int64_t n : *i.sizes) s += (s.empty() ? "" : "x") + std::to_string(n);
            inputs += i.dtype.value_or("?") + "[" + s + "]";
          } else {
            inputs += i.value.value_or("?");
          }
        }
      } else {
        row["error"] = !w ? failure.message
                       : r.status == kbv::Reply::Status::failed ? kbv::msg::failure_of(r.body).message
                                                                 : r.detail;
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

// `kbv lint`: one finding per line (file:line: severity rule (Tn): message), or the JSON report.
// Exit code 0: clean or warnings only, 1: rejected, 2: the file cannot be read.
int lint_one(const std::string& path, const std::string& policy, const std::string& precision, bool as_json) {
  kbv::SolutionSource s = kbv::load_solution(path);
  if (!s.ok) {
    std::fprintf(stderr, "kbv lint: %s\n", s.error.c_str());
    return 2;
  }
  kbv::LintReport r = kbv::lint_candidate(s, path, *kbv::parse_policy(policy), precision);
  if (as_json) {
    std::cout << r.to_json().dump(2) << "\n";
  } else {
    for (const auto& f : r.findings)
      std::printf("%s:%d: %s %s%s: %s\n", f.file.c_str(), f.line, f.severity.c_str(), f.rule.c_str(),
                  f.cheat.empty() ? "" : (" (" + f.cheat + ")").c_str(), f.message.c_str());
    size_t warns = r.findings.size();
    for (const auto& f : r.findings) warns -= f.severity == "reject";
    std::printf("%s: %s (%s policy; %zu C++/CUDA source%s read, %zu warning%s)\n", path.c_str(),
                r.rejected() ? "rejected" : r.findings.empty() ? "clean" : "not rejected", policy.c_str(),
                r.units.size(), r.units.size() == 1 ? "" : "s", warns, warns == 1 ? "" : "s");
  }
  return r.rejected() ? 1 : 0;
}

void list_rules() {
  for (const auto& r : kbv::lint_rules())
    std::printf("%-20s %-4s %-7s %s\n", r.id, *r.cheat ? r.cheat : "-", r.severity, r.what);
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  kbv::install_interrupt_handler();
  CLI::App app{"kbv: the truth about GPU kernels written to replace a PyTorch reference", "kbv"};
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
  std::string eval_only;
  eval->add_option("--only", eval_only, "with --run: only these problems: ids, ranges, parts of names (19,23-25,ReLU)");
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
  bool self_static = false;
  selftest->add_flag("--static", self_static,
                     "only the static analysis (kbv lint) over every entry, CUDA ones included: no worker, no GPU");
  int self_jobs = default_jobs;
  selftest->add_option("--build-jobs", self_jobs, "candidates compiled at once")->capture_default_str();
  self_flags.add(selftest);

  auto generate = kbv::cli::add_generate_command(app);
  auto* report = app.add_subcommand("report", "metrics, tables and plots of run folders (Markdown, HTML, CSV, JSON)");
  kbv::ReportOptions report_opts;
  std::vector<std::string> report_runs;
  std::string report_problems;
  report->add_option("runs", report_runs, "run folders (kbv.sqlite, or KernelBench eval_results.json)")->required();
  report->add_option("--baseline", report_opts.baseline, "speedup denominator of the headline numbers")
      ->check(CLI::IsMember({"tf32", "fp32", "compile"}))
      ->capture_default_str();
  report->add_option("--out", report_opts.out, "write here (default: stdout); the extension picks the format");
  report->add_option("--format", report_opts.format, "md, html, csv or json (default: from --out, else md)");
  report->add_option("--problems", report_problems,
                     "dataset root: score over all its problems (default: the problems the runs have)");
  report->add_option("--baseline-file", report_opts.baseline_files,
                     "[tf32=|fp32=|compile=]FILE: KernelBench baseline times for imported runs");
  report->add_option("--level", report_opts.level, "level of a plain eval_results.json");
  report->add_option("--precision", report_opts.precision,
                     "only the runs of this precision (default: every precision, side by side: docs/PRECISION.md)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));

  auto* import = app.add_subcommand("import", "store a KernelBench(-Verified) run's eval_results.json as kbv records");
  kbv::ImportOptions import_opts;
  std::string import_from, import_into;
  import->add_option("run", import_from, "the upstream run folder (eval_results.json, eval_results_hidden.json)")
      ->required();
  import->add_option("--into", import_into, "folder for kbv.sqlite (default: the run folder)");
  import->add_option("--level", import_opts.level, "level of a plain eval_results.json");
  import->add_option("--baseline-file", import_opts.baseline_files,
                     "[tf32=|fp32=|compile=]FILE: KernelBench baseline times; speedups are stored");

  auto* export_cmd = app.add_subcommand("export", "write a run's results as KernelBench(-Verified) eval_results files");
  kbv::ExportOptions export_opts;
  std::string export_run, export_to;
  export_cmd->add_option("run", export_run, "a run folder with kbv.sqlite")->required();
  export_cmd->add_option("--to", export_to, "output folder (default: RUN/export-FORMAT)");
  export_cmd->add_option("--format", export_opts.format,
                         "verified (pid_sid keys, eval_results_hidden.json) or kernelbench (pid lists)")
      ->check(CLI::IsMember({"verified", "kernelbench"}))
      ->capture_default_str();
  auto* lint = app.add_subcommand(
      "lint", "static analysis of a solution's Python and of the C++/CUDA it compiles, against the known cheats");
  std::string lint_file, lint_policy = "strict", lint_precision = "fp32";
  bool lint_json = false, lint_list = false;
  lint->add_option("solution", lint_file, "a solution file (.py, or a model's raw answer .md/.txt)");
  lint->add_flag("--json", lint_json, "print the report as JSON (file, policy, rejected, units, findings)");
  lint->add_option("--policy", lint_policy, "strict (reject findings reject) or lenient (all are warnings)")
      ->check(CLI::IsMember({"strict", "lenient"}))
      ->capture_default_str();
  lint->add_option("--precision", lint_precision,
                   "fp32, bf16 or fp16: the evaluated precision (its own type is no precision downgrade)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  lint->add_flag("--rules", lint_list, "list the rules: id, cheat class, severity, what they look for");
  CommonFlags lp_flags;
  auto* lint_problems = app.add_subcommand("lint-problems", "flag problems that cannot judge a kernel (docs/PROBLEMS.md)");
  kbv::ProblemLintOptions lp_options;
  std::string lp_target, lp_json;
  lint_problems->add_option("dir", lp_target, "a dataset root (level1/...) or one problem file")->required();
  lint_problems->add_option("--level", lp_options.level, "only this level");
  lint_problems->add_option("--json", lp_json, "write the JSON report here ('-': stdout)");
  lint_problems->add_option("--seed", lp_options.seed, "master seed of the draws")->capture_default_str();
  lint_problems->add_option("--jobs", lp_options.jobs, "problems linted at once")->capture_default_str();
  lint_problems->add_option("--device", lp_flags.device, "cuda or cpu (default: cuda when a GPU is visible)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  lint_problems->add_option("--protocol", lp_flags.protocol, "kbv or kernelbench: its tolerance and distributions")
      ->check(CLI::IsMember({"kbv", "kernelbench"}));
  lint_problems->add_option("--precision", lp_flags.precision,
                            "fp32, bf16 or fp16: lint the reference in that precision (fp16 flags overflow)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  lint_problems->add_option("--tolerance", lp_flags.tolerance, "atol = rtol = relative-L2 tolerance")->check(kbv::cli::kPositive);
  lint_problems->add_option("--python", lp_flags.python, "Python with torch 2.11");
  lint_problems->add_option("--cache-dir", lp_flags.cache_dir, "worker logs (default: KBV_CACHE_DIR or ~/.cache/kbv)");
  lint_problems->add_option("--timeout", lp_flags.timeouts.reference_s, "seconds for one distribution of one problem")
      ->capture_default_str();

  CommonFlags baseline_flags;
  kbv::BaselineCommandOptions baseline_opts;
  std::string baseline_problems;
  auto* baseline = app.add_subcommand("baseline", "time the baselines of a dataset into the cache; import/export "
                                                  "KernelBench's baseline JSON (docs/TIMING.md)");
  baseline->add_option("--problems", baseline_problems, "a KernelBench dataset root (level1/...)")->required();
  baseline->add_option("--level", baseline_opts.level, "only this level");
  baseline->add_option("--export", baseline_opts.export_file, "write the cached baselines as KernelBench JSON ('-': stdout)");
  baseline->add_option("--import", baseline_opts.import_file, "read KernelBench baseline JSON into the cache");
  baseline->add_option("--mode", baseline_opts.mode, "the baseline exported or imported")
      ->check(CLI::IsMember({"tf32", "fp32", "compile"}))
      ->capture_default_str();
  baseline_flags.add(baseline);

  if (std::optional<int> code = kbv::cli::parse(app, argc, argv)) return *code;

  if (*eval) {
    bool single = !problem.empty() || !solution.empty();
    bool batch = !problems_dir.empty() || !run_dir.empty();
    if (single == batch || (single && (problem.empty() || solution.empty())) ||
        (batch && (problems_dir.empty() || run_dir.empty()))) {
      std::fprintf(stderr,
                   "kbv eval: give either --problem FILE --solution FILE, or --problems DIR --run DIR\n");
      return 2;
    }
    if (single) {
      // A file that cannot be read is a usage error, not a verdict.
      for (const auto& [flag, path] : {std::pair{"--problem", problem}, std::pair{"--solution", solution}})
        if (std::string why = kbv::cli::unreadable(path); !why.empty()) {
          std::fprintf(stderr, "kbv eval: %s %s: %s\n", flag, path.c_str(), why.c_str());
          return kbv::cli::kExitUsage;
        }
      return eval_one(eval_flags, problem, solution, json_out);
    }
    kbv::RunOptions ro;
    ro.problems_dir = problems_dir;
    ro.run_dir = run_dir;
    ro.level = level;
    if (!eval_only.empty()) {
      std::string e;
      std::optional<kbv::ProblemSelection> sel = kbv::parse_selection(eval_only, e);
      if (!sel) {
        std::fprintf(stderr, "kbv eval: %s\n", e.c_str());
        return kbv::cli::kExitUsage;
      }
      ro.only = *sel;
      ro.only_spec = eval_only;
    }
    ro.build_jobs = build_jobs;
    ro.eval = eval_flags.options();
    if (!sandbox_preflight(ro.eval)) return 2;
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
  if (*baseline) {
    baseline_opts.problems_dir = baseline_problems;
    baseline_opts.eval = baseline_flags.options();
    return kbv::baseline_command(baseline_opts);
  }
  if (*generate->app) return generate->run();
  if (*report) {
    for (const auto& r : report_runs) report_opts.runs.emplace_back(r);
    if (!report_problems.empty()) report_opts.problems_dir = report_problems;
    return kbv::report_command(report_opts);
  }
  if (*import) {
    import_opts.from = import_from;
    if (!import_into.empty()) import_opts.into = import_into;
    return kbv::import_command(import_opts);
  }
  if (*export_cmd) {
    export_opts.run = export_run;
    if (!export_to.empty()) export_opts.to = export_to;
    return kbv::export_command(export_opts);
  }
  if (*build) return build_one(build_flags, build_solution);
  if (*lint) {
    if (lint_list) {
      list_rules();
      return 0;
    }
    if (lint_file.empty()) {
      std::fprintf(stderr, "kbv lint: give a solution file (or --rules)\n");
      return 2;
    }
    return lint_one(lint_file, lint_policy, lint_precision, lint_json);
  }
  if (*selftest) {
    kbv::SelftestOptions so;
    so.manifest = manifest;
    so.device = self_flags.device;
    so.eval = self_flags.options();
    so.build_jobs = self_jobs;
    so.static_only = self_static;
    if (!so.static_only && !sandbox_preflight(so.eval)) return 2;
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
  if (*lint_problems) {
    lp_options.target = lp_target;
    lp_options.eval = lp_flags.options();
    std::string error;
    json lp_report = kbv::lint_problems(lp_options, error);
    if (!error.empty()) {
      std::fprintf(stderr, "kbv lint-problems: %s\n", error.c_str());
      return 2;
    }
    if (lp_json == "-") {
      std::cout << lp_report.dump(2) << "\n";
    } else if (!lp_json.empty()) {
      std::string e = kbv::write_file_atomic(lp_json, lp_report.dump(2) + "\n");
      if (!e.empty()) {
        std::fprintf(stderr, "kbv lint-problems: %s\n", e.c_str());
        return 2;
      }
    }
    if (kbv::interrupted()) return 130;
    return lp_report["summary"]["with_findings"].get<int>() == 0 ? 0 : 1;
  }
  if (*problems) return list_problems(list_dir, list_level, list_flags, !no_shapes, list_json);
  return 0;
}
