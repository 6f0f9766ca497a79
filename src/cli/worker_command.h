// The `kbv worker` subcommand: its flags, the job options' translation into kbv eval's flags, and
// the worker loop (src/queue) with the evaluation (src/supervisor/queue_job.*) as its executor.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "supervisor/run.h"

namespace kbv::cli {

// What the worker's own command line decides for every job (a job cannot choose them).
struct WorkerHost {
  std::string python;
  std::string cache_dir;
  std::string sandbox = "strict";
  int warm_workers = kbv::kDefaultWarmWorkers;
  uint64_t write_cap_mib = kbv::kDefaultWriteCapBytes >> 20;
};

struct WorkerHooks {
  // kbv eval's flags (as "--name=value" arguments) -> EvalOptions, through kbv eval's own parser.
  std::function<std::optional<EvalOptions>(const std::vector<std::string>& args, const WorkerHost& host,
                                           std::string& error)>
      parse_options;
  // The sandbox check `kbv eval` makes before anything runs; false: refused (it said why).
  std::function<bool(const EvalOptions&)> preflight;
};

struct WorkerCommand {
  CLI::App* app = nullptr;  // the subcommand; run() when it was given
  std::function<int()> run;
};

std::unique_ptr<WorkerCommand> add_worker_command(CLI::App& app, WorkerHooks hooks);

// A job's options object -> "--name=value" arguments for kbv eval's parser: keys are flag names
// without dashes ("trials", "time_cap" or "time-cap"), values strings, numbers, true/false
// ("on"/"off") or lists (joined with commas). nullopt with the reason for anything else, and for
// the keys the worker's host decides (kHostFlags, cli/common_flags.h).
std::optional<std::vector<std::string>> job_option_args(const nlohmann::json& options, std::string& error);

// `kbv eval --problem P --solution S --queue URL`: `options` (the canonical options of `eval`'s
// flags, CommonFlags::canonical_options: as kbv eval --run --queue and kbv serve send them, so the
// same evaluation has the same job key by every road) become the job's options; the pair is
// submitted and its record awaited (written to `json_out` as kbv eval --json writes it). Returns
// the exit code, as kbv eval's.
int eval_through_queue(const CLI::App& eval, const nlohmann::json& options, const std::string& url,
                       const std::string& problem, const std::string& solution, const std::string& json_out);

}  // namespace kbv::cli
