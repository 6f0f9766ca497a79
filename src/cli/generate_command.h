// The `kbv generate` subcommand: its flags, and the call into src/generate.
#pragma once
#include <functional>
#include <memory>

#include <CLI/CLI.hpp>

namespace kbv::cli {

struct GenerateCommand {
  CLI::App* app = nullptr;   // the subcommand; run() when it was given
  std::function<int()> run;
};

// Adds `generate` to `app`. Without libcurl in the build, the command exists and says so.
std::unique_ptr<GenerateCommand> add_generate_command(CLI::App& app);

}  // namespace kbv::cli
