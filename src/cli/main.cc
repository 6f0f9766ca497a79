// kbv: the supervisor. Builds the command line and runs the subcommand given; each subcommand is
// a file of src/cli/ (cli/commands.h). Never loads Python or torch.
#include <csignal>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/generate_command.h"
#include "cli/common_flags.h"
#include "cli/parse.h"
#include "cli/serve_command.h"
#include "cli/worker_command.h"
#include "util/interrupt.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  kbv::install_interrupt_handler();
  CLI::App app{"kbv: the truth about GPU kernels written to replace a PyTorch reference", "kbv"};
  app.set_version_flag("--version", KBV_VERSION);
  app.require_subcommand(1);

  // In the order `kbv --help` lists them.
  std::vector<kbv::cli::Command> commands;
  commands.push_back(kbv::cli::add_eval_command(app));
  commands.push_back(kbv::cli::add_problems_command(app));
  commands.push_back(kbv::cli::add_build_command(app));
  commands.push_back(kbv::cli::add_selftest_command(app));
  auto generate = kbv::cli::add_generate_command(app);
  commands.push_back({generate->app, generate->run});
  commands.push_back(kbv::cli::add_report_command(app));
  commands.push_back(kbv::cli::add_import_command(app));
  commands.push_back(kbv::cli::add_export_command(app));
  commands.push_back(kbv::cli::add_lint_command(app));
  commands.push_back(kbv::cli::add_lint_problems_command(app));
  commands.push_back(kbv::cli::add_baseline_command(app));
  commands.push_back(kbv::cli::add_protocols_command(app));
  auto serve = kbv::cli::add_serve_command(app);
  commands.push_back({serve->app, serve->run});
  auto worker = kbv::cli::add_worker_command(app, kbv::cli::worker_hooks());
  commands.push_back({worker->app, worker->run});

  if (std::optional<int> code = kbv::cli::parse(app, argc, argv)) return *code;
  for (const auto& c : commands)
    if (*c.app) return c.run();
  return 0;
}
