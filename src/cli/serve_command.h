// The `kbv serve` subcommand: its flags, and the call into src/service.
#pragma once
#include <functional>
#include <memory>

#include <CLI/CLI.hpp>

namespace kbv::cli {

struct ServeCommand {
  CLI::App* app = nullptr;  // the subcommand; run() when it was given
  std::function<int()> run;
};

std::unique_ptr<ServeCommand> add_serve_command(CLI::App& app);

}  // namespace kbv::cli
