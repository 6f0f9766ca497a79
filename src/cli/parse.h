// Command-line parsing shared by every command: readable validators and one usage exit code
// (docs/CLI.md, "Exit codes").
#pragma once
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/output.h"

namespace kbv::cli {

// "--trials: must be greater than 0, got 0" rather than CLI11's range of 300 digits.
// `name` is what --help shows after the type (CLI11's POSITIVE, NONNEGATIVE).
inline CLI::Validator greater_than(double bound, std::string name) {
  return CLI::Validator(
      [bound](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v)) return "expected a number, got '" + s + "'";
        return v > bound ? "" : fmt::format("must be greater than {:g}, got {}", bound, s);
      },
      std::move(name));
}
inline CLI::Validator at_least(double bound, std::string name) {
  return CLI::Validator(
      [bound](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v)) return "expected a number, got '" + s + "'";
        return v >= bound ? "" : fmt::format("must be at least {:g}, got {}", bound, s);
      },
      std::move(name));
}
inline const CLI::Validator kPositive = greater_than(0, "POSITIVE");
inline const CLI::Validator kNonNegative = at_least(0, "NONNEGATIVE");

// "" when `path` is a file kbv can read, else why not ("no such file", "a directory", ...).
inline std::string unreadable(const std::string& path) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return "no such file";
  if (std::filesystem::is_directory(status)) return "a directory, not a file";
  if (::access(path.c_str(), R_OK) != 0) return std::strerror(errno);
  return "";
}

// The subcommands' names, for messages: "eval, selftest, ...".
inline std::string subcommand_list(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (!names.empty()) names += ", ";
    names += sub->get_name();
  }
  return names;
}

// Parses; nullopt to go on, or the exit code: 0 for --help and --version, kExitUsage (2) for
// every error, with one line saying what is wrong and where to look.
inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  if (argc <= 1) {
    std::fprintf(stderr, "%s", app.help().c_str());
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Which command the error is about: the last subcommand parsed, if any.
    const CLI::App* where = &app;
    for (const CLI::App* sub = &app; sub;) {
      const CLI::App* next = nullptr;
      for (const CLI::App* s : sub->get_subcommands())
        if (s->parsed()) next = s;
      if (next) where = next;
      sub = next;
    }
    std::string command = where == &app ? "kbv" : "kbv " + where->get_name();
    if (where == &app) {
      std::string first = argv[1];
      if (!first.empty() && first[0] != '-')
        std::fprintf(stderr, "kbv: unknown command '%s'; the commands are: %s (kbv --help)\n", first.c_str(),
                     subcommand_list(app).c_str());
      else
        std::fprintf(stderr, "kbv: %s; give a command: %s (kbv --help)\n", e.what(), subcommand_list(app).c_str());
    } else {
      std::fprintf(stderr, "%s: %s (%s --help)\n", command.c_str(), e.what(), command.c_str());
    }
    return kExitUsage;
  }
}

}  // namespace kbv::cli
