// What the CLI shows of a command's Outcome and Notices, and the exit code it picks: the one
// place where both are decided (docs/CLI.md, "Exit codes").
#pragma once
#include <cstdio>
#include <memory>
#include <string>

#include "util/outcome.h"

namespace kbv::cli {

// The exit-code contract of every command.
inline constexpr int kExitOk = 0;           // done (verdicts, even failing ones, are results)
inline constexpr int kExitIncomplete = 1;   // done, but something failed or was rejected; see the output
inline constexpr int kExitUsage = 2;        // unusable input: a flag, a file, a dataset
inline constexpr int kExitInternal = 3;     // kbv's own failure
inline constexpr int kExitInterrupted = 130;

inline int exit_code(Status s) {
  switch (s) {
    case Status::ok: return kExitOk;
    case Status::incomplete: return kExitIncomplete;
    case Status::input_error: return kExitUsage;
    case Status::interrupted: return kExitInterrupted;
    case Status::internal: return kExitInternal;
  }
  return kExitInternal;
}

// Prints notices as `<prefix>: text` (info), `<prefix>: warning: text`, progress lines as they
// are, data on stdout; a run of items (begin_items .. end_items) as the progress display
// (cli/progress.h: a live status line on a terminal, plain lines otherwise). Thread-safe.
Notify printer(std::string prefix);

// Shows how a command ended (its message, if any) and returns its exit code.
inline int finish(const std::string& prefix, const Outcome& outcome) {
  if (!outcome.message.empty()) std::fprintf(stderr, "%s: %s\n", prefix.c_str(), outcome.message.c_str());
  return exit_code(outcome.status);
}

}  // namespace kbv::cli
