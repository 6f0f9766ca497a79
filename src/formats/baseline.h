// KernelBench's baseline timing file (upstream's results/timing/<hw>/baseline_time_torch.json;
// `kbv baseline --export` writes the same shape with "median" added):
//   {"level1": {"1_Square_matrix_multiplication_.py": {"mean", "std", "min", "max",
//               "num_trials", "hardware", "device", ["peak_memory"]} | null}}
// read for speedups of imported records (`kbv import --baseline`), read into and written from
// kbv's baseline cache (`kbv baseline --import/--export`). Times are milliseconds, memory bytes.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "measure/measure.h"
#include "record/record.h"

namespace kbv {

struct BaselineTimes {
  struct Entry {
    std::string problem;  // the file name the baseline keys it by
    double mean_ms = -1;
    std::optional<double> peak_bytes;  // KernelBench-Verified's "peak_memory"
  };
  std::string name;  // tf32 | fp32 | compile
  std::string label;  // what the file measured (baseline_file_label), stored with each speedup
  std::filesystem::path path;
  std::map<std::pair<int, int>, Entry> entries;  // (level, problem id) -> entry
};

// "tf32=PATH" or "PATH"; without a name it comes from the file name: "tf32" in it -> tf32,
// "compile" -> compile, otherwise fp32 (upstream's baseline_time_torch.json: FP32 matmuls, but
// see baseline_file_label).
std::pair<std::string, std::filesystem::path> parse_baseline_arg(const std::string& arg);

// What a baseline file named `name` measured. A file `kbv baseline --export` wrote (its entries
// carry "median") measured what kbv's baselines do (native_baseline_label). An upstream file
// measured under PyTorch's defaults, which keep cuDNN's TF32 on for convolutions: "fp32" is
// "FP32 matmuls, TF32 convolutions", "tf32" (set_float32_matmul_precision('high')) "TF32 matmuls
// and convolutions", a file named *bf16* BF16, "compile" torch.compile under those defaults.
std::string baseline_file_label(const std::string& name, const std::filesystem::path& path, bool kbv_export);

// Reads a baseline timing file; entries without a positive "mean" are skipped (upstream writes
// null for problems whose baseline failed). The error names the file and what is wrong.
std::optional<BaselineTimes> read_baseline_file(const std::filesystem::path& path, const std::string& name,
                                                std::string& error);

// For a record made from an upstream entry: adds timing.speedup.<name> (baseline mean / runtime)
// and, when both sides carry peak_memory, memory.ratio.<name>; fills "problem" from the baseline's
// file name. Leaves kbv's own records alone. Returns true when something was added.
bool apply_baseline(Record& record, const BaselineTimes& baseline);

// What kbv's own baselines measure (eager PyTorch): "tf32" -> "TF32", "fp32" -> "FP32 (strict)",
// "compile" -> "torch.compile"; the name itself for any other.
std::string native_baseline_label(const std::string& name);

// The level of a top-level key "level<N>" of a baseline file, as `kbv baseline --import` reads it;
// nullopt for any other key.
std::optional<int> baseline_level_key(const std::string& key);

// Whether an entry of a baseline file has a numeric "mean" (`kbv baseline --import` skips others).
bool baseline_entry_timed(const nlohmann::json& entry);

// The timing statistics of an entry with a numeric "mean", as `kbv baseline --import` files them:
// an absent "median", "min" or "max" is the mean (KernelBench records no median), an absent "std"
// 0, "num_trials" the sample count; a field that is not a number (null) counts as absent.
Stats baseline_entry_stats(const nlohmann::json& entry);

// Adds one problem's entry to a baseline file being written (`kbv baseline --export`):
// file["level<level>"][problem_file] = {"mean", "std", "min", "max", "median", "num_trials",
// "hardware", "device"} from kbv's cached stats ({"mean_ms", "std_ms", ...}); mean, std, min and
// max rounded to 3 significant digits as upstream's files store them (upstream_rounded).
void add_baseline_entry(nlohmann::json& file, int level, const std::string& problem_file, const nlohmann::json& stats,
                        const std::string& hardware, const std::string& device);

}  // namespace kbv
