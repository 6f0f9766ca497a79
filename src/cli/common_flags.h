// Flags shared by the commands that evaluate, and the checks every such command makes first.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "supervisor/run.h"

namespace kbv::cli {

// Flags shared by the commands that evaluate.
struct CommonFlags {
  std::string device;
  std::string python;
  std::string protocol = "kbv";
  std::string policy = "strict";
  std::string precision = "fp32";
  int trials = -1;
  int flaky_reruns = -1;  // -1: the protocol's (2 for kbv, 0 for kernelbench)
  double tolerance = -1;
  std::optional<uint64_t> seed;
  std::string cache_dir;
  kbv::Timeouts timeouts;
  std::string timing = "on";
  double rse = -1, time_cap = -1;
  int timing_sets = -1;
  std::string timing_inputs;
  int64_t flush_bytes = -1;
  double launch_hold_us = -1;
  int timing_pairs = -1;  // -1: the protocol's
  int cpu_threads = -1;
  std::vector<std::string> baselines;
  std::string sandbox = "strict";
  std::string fast_build = "on";

  // Adds the flags to `app`.
  void add(CLI::App* app);
  // The evaluation options these flags describe (defaults filled in).
  kbv::EvalOptions options() const;
};

// KBV_CACHE_DIR, else $XDG_CACHE_HOME/kbv, else ~/.cache/kbv.
std::filesystem::path default_cache_dir();

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
