// `kbv problems` (a dataset's problems and their input shapes) and `kbv lint-problems`.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/output.h"
#include "cli/parse.h"
#include "protocol/registry.h"
#include "supervisor/problem_lint.h"
#include "supervisor/problem_list.h"
#include "util/fs.h"

namespace kbv::cli {
using nlohmann::json;

namespace {
// --cpu-sizes: "auto" or a factor in (0, 1].
const CLI::Validator kCpuSizes(
    [](std::string& s) -> std::string {
      if (s == "auto") return "";
      double v = 0;
      if (!CLI::detail::lexical_cast(s, v)) return "expected 'auto' or a factor in (0, 1], got '" + s + "'";
      return v > 0 && v <= 1 ? "" : "expected 'auto' or a factor in (0, 1], got " + s;
    },
    "auto|FACTOR");
const char* kCpuSizesHelp =
    "reduced sizes without editing the problem: 'auto' (16 MiB a call) or a factor in (0, 1] scaling the "
    "module-level size constants, except those a reduction or normalisation runs over (docs/PROBLEMS.md)";
}  // namespace

Command add_problems_command(CLI::App& app) {
  struct State {
    CommonFlags flags;
    std::string dir;
    std::optional<int> level;
    bool no_shapes = false;
    bool json = false;
    std::string cpu_sizes;
  };
  auto s = std::make_shared<State>();
  auto* problems = app.add_subcommand("problems", "list the problems of a KernelBench dataset root");
  problems->add_option("dir", s->dir, "dataset root")->required();
  problems->add_option("--level", s->level, "only this level");
  problems->add_flag("--no-shapes", s->no_shapes, "do not load the problems to show their input shapes");
  problems->add_flag("--json", s->json, "print a JSON list (level, id, name, path, inputs or error)");
  problems->add_option("--device", s->flags.values["device"], "sizes for cuda or cpu")->check(CLI::IsMember({"cuda", "cpu"}));
  problems->add_option("--python", s->flags.python, "Python with torch 2.11");
  problems->add_option("--cpu-sizes", s->cpu_sizes, kCpuSizesHelp)->check(kCpuSizes);
  return {problems, [s]() {
            kbv::ProblemListOptions o;
            o.dir = s->dir;
            o.level = s->level;
            o.shapes = !s->no_shapes;
            o.eval = s->flags.options();
            o.eval.cpu_sizes = s->cpu_sizes;
            Notify notify = printer("kbv");
            kbv::ProblemListResult r = kbv::list_problems(o, notify);
            if (!r.outcome.ok()) return finish("kbv", r.outcome);
            json rows = json::array();
            for (const auto& p : r.problems) {
              if (!s->json) {
                std::string drawn = p.draw == "real" ? "  (drawn with values: " + p.draw_note + ")" : "";
                std::printf("level%-2d %4d  %-48s %s%s\n", p.problem.level, p.problem.id, p.problem.name.c_str(),
                            p.shapes.c_str(), drawn.c_str());
                if (!p.sizes.empty()) std::printf("%16s sizes %s\n", "", p.sizes.c_str());
                if (p.model == "real") std::printf("%16s model built with values: %s\n", "", p.model_note.c_str());
                continue;
              }
              json row = {{"level", p.problem.level}, {"id", p.problem.id}, {"name", p.problem.name},
                          {"path", p.problem.path.string()}};
              if (!p.inputs.is_null()) row["inputs"] = p.inputs;
              if (!p.error.empty()) row["error"] = p.error;
              if (!p.draw.empty()) row["draw"] = p.draw;
              if (!p.draw_note.empty()) row["draw_note"] = p.draw_note;
              if (!p.sizes.empty()) row["sizes"] = p.sizes;
              if (!p.model.empty()) row["model"] = p.model;
              if (!p.model_note.empty()) row["model_note"] = p.model_note;
              rows.push_back(row);
            }
            if (s->json) std::cout << rows.dump(2) << "\n";
            return kExitOk;
          }};
}

Command add_lint_problems_command(CLI::App& app) {
  struct State {
    CommonFlags flags;
    kbv::ProblemLintOptions options;
    std::string target, json, cpu_sizes;
  };
  auto s = std::make_shared<State>();
  CommonFlags& lp_flags = s->flags;
  auto* lint_problems = app.add_subcommand("lint-problems", "flag problems that cannot judge a kernel (docs/PROBLEMS.md)");
  lint_problems->add_option("dir", s->target, "a dataset root (level1/...) or one problem file")->required();
  lint_problems->add_option("--level", s->options.level, "only this level");
  lint_problems->add_option("--json", s->json, "write the JSON report here ('-': stdout)");
  lint_problems->add_option("--seed", s->options.seed, "master seed of the draws")->capture_default_str();
  lint_problems->add_option("--jobs", s->options.jobs, "problems linted at once")->capture_default_str();
  lint_problems->add_option("--device", lp_flags.values["device"], "cuda or cpu (default: cuda when a GPU is visible)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  lint_problems->add_option("--protocol", lp_flags.values["protocol"],
                            "a protocol's tolerance and distributions (kbv, kernelbench-paper, kernelbench-main, "
                            "kernelbench-verified; kernelbench = kernelbench-paper)")
      ->check(CLI::IsMember(kbv::protocol_names()));
  lint_problems->add_option("--precision", lp_flags.values["precision"],
                            "fp32, bf16 or fp16: lint the reference in that precision (fp16 flags overflow)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  lint_problems->add_option("--tolerance", lp_flags.values["tolerance"], "atol = rtol = relative-L2 tolerance")->check(kPositive);
  lint_problems->add_option("--python", lp_flags.python, "Python with torch 2.11");
  lint_problems->add_option("--cache-dir", lp_flags.cache_dir, "worker logs (default: KBV_CACHE_DIR or ~/.cache/kbv)");
  lint_problems->add_option("--timeout", lp_flags.timeouts.reference_s, "seconds for one distribution of one problem")
      ->capture_default_str();
  lint_problems->add_option("--cpu-sizes", s->cpu_sizes, kCpuSizesHelp)->check(kCpuSizes);
  return {lint_problems, [s]() {
            kbv::ProblemLintOptions o = s->options;
            o.target = s->target;
            o.eval = s->flags.options();
            o.eval.cpu_sizes = s->cpu_sizes;
            kbv::ProblemLintResult r = kbv::lint_problems(o, printer("kbv"));
            if (r.outcome.status == Status::input_error) return finish("kbv lint-problems", r.outcome);
            if (s->json == "-") {
              std::cout << r.report.dump(2) << "\n";
            } else if (!s->json.empty()) {
              if (std::string e = kbv::write_file_atomic(s->json, r.report.dump(2) + "\n"); !e.empty())
                return finish("kbv lint-problems", Outcome::fail(Status::input_error, e));
            }
            return finish("kbv lint-problems", r.outcome);
          }};
}

}  // namespace kbv::cli
