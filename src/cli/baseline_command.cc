// `kbv baseline`: a dataset's baselines timed into the cache; KernelBench's baseline JSON in and out.
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/output.h"
#include "supervisor/baseline_command.h"

namespace kbv::cli {

Command add_baseline_command(CLI::App& app) {
  struct State {
    CommonFlags flags;
    kbv::BaselineCommandOptions options;
    std::string problems;
  };
  auto s = std::make_shared<State>();
  kbv::BaselineCommandOptions& baseline_opts = s->options;
  auto* baseline = app.add_subcommand("baseline", "time the baselines of a dataset into the cache; import/export "
                                                  "KernelBench's baseline JSON (docs/TIMING.md)");
  baseline->add_option("--problems", s->problems, "a KernelBench dataset root (level1/...)")->required();
  baseline->add_option("--level", baseline_opts.level, "only this level");
  baseline->add_option("--export", baseline_opts.export_file, "write the cached baselines as KernelBench JSON ('-': stdout)");
  baseline->add_option("--import", baseline_opts.import_file, "read KernelBench baseline JSON into the cache");
  baseline->add_option("--mode", baseline_opts.mode, "the baseline exported or imported")
      ->check(CLI::IsMember({"tf32", "fp32", "compile"}))
      ->capture_default_str();
  s->flags.add(baseline);
  return {baseline, [s]() {
            kbv::BaselineCommandOptions o = s->options;
            o.problems_dir = s->problems;
            o.eval = s->flags.options();
            return finish("kbv", kbv::baseline_command(o, printer("kbv")));
          }};
}

}  // namespace kbv::cli
