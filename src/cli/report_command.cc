// `kbv report`, `kbv import`, `kbv export`: run folders read, scored and written (src/report).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/output.h"
#include "report/command.h"

namespace kbv::cli {

Command add_report_command(CLI::App& app) {
  struct State {
    kbv::ReportOptions options;
    std::vector<std::string> runs;
    std::vector<std::string> queues;
    std::string problems;
    std::vector<std::string> exclude_from;
  };
  auto s = std::make_shared<State>();
  kbv::ReportOptions& report_opts = s->options;
  auto* report = app.add_subcommand("report", "metrics, tables and plots of run folders (Markdown, HTML, CSV, JSON)");
  report->add_option("runs", s->runs,
                     "run folders (kbv.sqlite, or KernelBench eval_results.json), or job queue URLs (as --queue)");
  report->add_option("--queue", s->queues,
                     "a job queue (sqlite:PATH or postgresql://...): its done jobs' records, as a run (docs/QUEUE.md)");
  report->add_option("--baseline", report_opts.baseline, "speedup denominator of the headline numbers")
      ->check(CLI::IsMember({"tf32", "fp32", "compile"}))
      ->capture_default_str();
  report->add_option("--out", report_opts.out, "write here (default: stdout); the extension picks the format");
  report->add_option("--format", report_opts.format, "md, html, csv or json (default: from --out, else md)");
  report->add_option("--problems", s->problems,
                     "dataset root: score over all its problems (default: the problems the runs have)");
  report->add_option("--baseline-file", report_opts.baseline_files,
                     "[tf32=|fp32=|compile=]FILE: KernelBench baseline times for imported runs");
  report->add_option("--level", report_opts.level, "level of a plain eval_results.json");
  report->add_option("--precision", report_opts.precision,
                     "only the runs of this precision (default: every precision, side by side: docs/PRECISION.md)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  report->add_option("--fast-p", report_opts.fast_p,
                     "fast_p counts a sample when its speedup's 95% interval clears p (interval), or its point "
                     "estimate does (point: KernelBench's definition, for published numbers)")
      ->check(CLI::IsMember({"interval", "point"}))
      ->capture_default_str();
  report->add_option("--table", report_opts.table,
                     "verified: KernelBench-Verified's table shape and denominator on top; auto: when every run is "
                     "under that protocol (docs/METRICS.md)")
      ->check(CLI::IsMember({"auto", "verified", "kbv"}))
      ->capture_default_str();
  report->add_option("--exclude-from", s->exclude_from,
                     "LINT.json of `kbv lint-problems --json`: its unsolvable and degenerate problems leave the "
                     "denominator, listed in the report");
  return {report, [s]() {
            kbv::ReportOptions o = s->options;
            for (const auto& r : s->runs) o.runs.emplace_back(r);
            for (const auto& q : s->queues) o.runs.emplace_back(q);
            if (o.runs.empty())
              return finish("kbv report", Outcome::fail(Status::input_error,
                                                        "give run folders or --queue URL (kbv report --help)"));
            if (!s->problems.empty()) o.problems_dir = s->problems;
            for (const auto& f : s->exclude_from) o.exclude_from.emplace_back(f);
            Outcome outcome = kbv::report_command(o, printer("kbv report"));
            // The report on stdout (a data notice) must have reached it.
            if (outcome.ok() && (std::fflush(stdout) != 0 || std::ferror(stdout)))
              outcome = Outcome::fail(Status::input_error, "cannot write to stdout");
            return finish("kbv report", outcome);
          }};
}

Command add_import_command(CLI::App& app) {
  struct State {
    kbv::ImportOptions options;
    std::string from, into;
  };
  auto s = std::make_shared<State>();
  auto* import = app.add_subcommand("import", "store a KernelBench(-Verified) run's eval_results.json as kbv records");
  import->add_option("run", s->from, "the upstream run folder (eval_results.json, eval_results_hidden.json)")
      ->required();
  import->add_option("--into", s->into, "folder for kbv.sqlite (default: the run folder)");
  import->add_option("--level", s->options.level, "level of a plain eval_results.json");
  import->add_option("--baseline-file", s->options.baseline_files,
                     "[tf32=|fp32=|compile=]FILE: KernelBench baseline times; speedups are stored");
  return {import, [s]() {
            kbv::ImportOptions o = s->options;
            o.from = s->from;
            if (!s->into.empty()) o.into = s->into;
            return finish("kbv import", kbv::import_command(o, printer("kbv import")));
          }};
}

Command add_export_command(CLI::App& app) {
  struct State {
    kbv::ExportOptions options;
    std::string run, to;
  };
  auto s = std::make_shared<State>();
  auto* export_cmd = app.add_subcommand("export", "write a run's results as KernelBench(-Verified) eval_results files");
  export_cmd->add_option("run", s->run, "a run folder with kbv.sqlite")->required();
  export_cmd->add_option("--to", s->to, "output folder (default: RUN/export-FORMAT)");
  export_cmd->add_option("--format", s->options.format,
                         "verified (pid_sid keys, eval_results_hidden.json) or kernelbench (pid lists)")
      ->check(CLI::IsMember({"verified", "kernelbench"}))
      ->capture_default_str();
  return {export_cmd, [s]() {
            kbv::ExportOptions o = s->options;
            o.run = s->run;
            if (!s->to.empty()) o.to = s->to;
            return finish("kbv export", kbv::export_command(o, printer("kbv export")));
          }};
}

}  // namespace kbv::cli
