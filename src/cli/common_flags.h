// Flags shared by the commands that evaluate, and the checks every such command makes first.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "supervisor/run.h"

namespace kbv::cli {

// Flags shared by the commands that evaluate: the evaluation options of one table
// (supervisor/option_table.h, the same as kbv serve's JSON options), and what the host decides.
struct CommonFlags {
  // Every option of the table, as typed on the command line: its default (a choice's fill) or ""
  // when not given. Filled at construction, so a reference to an entry stays valid (a command
  // may bind one of them to a flag of its own, as lint-problems does).
  std::map<std::string, std::string> values;
  std::string python;
  std::string cache_dir;
  std::string sandbox = "strict";
  int warm_workers = kbv::kDefaultWarmWorkers;
  uint64_t write_cap_mib = kbv::kDefaultWriteCapBytes >> 20;
  kbv::Timeouts timeouts;  // what --timeout-build/-load/-call do not set (lint-problems' --timeout)

  CommonFlags();
  // The text of option `name` ("" when not given and without default).
  std::string value(const std::string& name) const;
  // Adds the flags to `app`.
  void add(CLI::App* app);
  // The given options, canonical (typed, defaults filled): what kbv serve makes of the same options
  // as JSON, and a queued job's options. An error names the flag.
  nlohmann::json canonical_options(std::string& error) const;
  // The evaluation options these flags describe (defaults filled in).
  kbv::EvalOptions options() const;
};

// The flags a host decides for itself (kbv worker's, kbv serve's), never a queued job's options:
// kbv eval --queue refuses them and a job that names one is refused.
inline constexpr const char* kHostFlags[] = {"python", "cache-dir", "sandbox", "warm-workers", "write-cap-mib"};

// KBV_CACHE_DIR, else $XDG_CACHE_HOME/kbv, else ~/.cache/kbv.
std::filesystem::path default_cache_dir();
// --cache-dir's folder, made absolute (empty: default_cache_dir()).
std::filesystem::path cache_dir_of(const std::string& flag);

// --sandbox before anything runs: strict refuses when a layer cannot be applied here; best-effort
// says what it runs without. False: refused (the message is printed).
bool sandbox_preflight(const kbv::EvalOptions& o);

// Candidates compiled at once by default: half the cores, at least 2.
int default_build_jobs();

// `kbv worker`'s hooks: a job's options go through kbv eval's own flags (CommonFlags); the host
// decides python, cache dir and sandbox (src/cli/worker_command.*).
struct WorkerHooks;
WorkerHooks worker_hooks();

}  // namespace kbv::cli
