// kbv's subcommands: each adds itself to the app (flags and help) and returns what runs it.
// One file per command in src/cli/ (eval_command.cc, report_command.cc, ...); main.cc builds the
// app and runs the command given. A command's run() calls one library function, prints what it
// notifies (cli/output.h) and returns the exit code.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace kbv::cli {

struct Command {
  CLI::App* app = nullptr;  // the subcommand: run() when it was given
  std::function<int()> run;
};

Command add_eval_command(CLI::App& app);            // eval_command.cc
Command add_build_command(CLI::App& app);           // eval_command.cc
Command add_problems_command(CLI::App& app);        // problems_command.cc
Command add_lint_problems_command(CLI::App& app);   // problems_command.cc
Command add_selftest_command(CLI::App& app);        // selftest_command.cc
Command add_report_command(CLI::App& app);          // report_command.cc
Command add_import_command(CLI::App& app);          // report_command.cc
Command add_export_command(CLI::App& app);          // report_command.cc
Command add_lint_command(CLI::App& app);            // lint_command.cc
Command add_baseline_command(CLI::App& app);        // baseline_command.cc
Command add_protocols_command(CLI::App& app);       // protocols_command.cc

}  // namespace kbv::cli
