// `kbv baseline`: precompute the baselines of a dataset into the baseline cache, and import or
// export KernelBench's baseline JSON ({"level1": {"1_X.py": {"mean", "std", "min", "max",
// "num_trials", "hardware", "device"}}}). docs/TIMING.md.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "supervisor/run.h"
#include "util/outcome.h"

namespace kbv {

struct BaselineCommandOptions {
  std::filesystem::path problems_dir;
  std::optional<int> level;
  std::string export_file;   // write KernelBench's baseline JSON from the cache
  std::string import_file;   // read KernelBench's baseline JSON into the cache
  std::string mode = "tf32"; // the mode exported, or the mode imported entries are filed under
  EvalOptions eval;
};

// Ok when every problem has its baselines (or every entry was imported/exported); incomplete
// when some failed (each named through `notify`); input_error on unusable arguments; interrupted.
// Each problem timed is a run item (util/outcome.h).
Outcome baseline_command(const BaselineCommandOptions& options, const Notify& notify);

}  // namespace kbv
