// KernelBench and KernelBench-Verified files, read into kbv records and written back:
//   eval_results.json, KernelBench:           {"<pid>": [{"sample_id", "compiled", "correctness",
//                                               "metadata", "runtime", "runtime_stats"}, ...]}
//                       (older KernelBench:    {"<pid>": {...one entry...}})
//   eval_results.json, KernelBench-Verified:  {"<pid>_<sid>": {...same keys..., "peak_memory"}}
//   eval_results_hidden.json (Verified):      the same shape; "correctness" under the four hidden
//                                             distributions, metadata "hidden_failed_configs"
//   baseline timing (results/timing/<hw>/<name>.json):
//       {"level1": {"1_Square_matrix_multiplication_.py": {"mean", "std", "min", "max",
//                   "num_trials", "hardware", "device", ["peak_memory"]} | null}}
// Times are milliseconds, memory bytes. Upstream speedup = baseline "mean" / candidate "runtime".
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/record.h"

namespace kbv {

// The protocol name of records made from upstream files.
inline constexpr const char* kImportProtocol = "kernelbench-import";

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

struct UpstreamRead {
  std::vector<Record> records;
  std::vector<std::string> warnings;
  std::string error;   // the file itself is unusable
  std::string format;  // "kernelbench" | "kernelbench-verified"
};

// One level's eval_results.json (and eval_results_hidden.json when given) as kbv records with
// protocol name "kernelbench-import", each carrying where it came from. `run_dir` is searched for
// the kernel files (level_L_problem_P_sample_S_kernel.py) to record and hash.
UpstreamRead read_eval_results(const std::filesystem::path& eval_file,
                               const std::optional<std::filesystem::path>& hidden_file, int level,
                               const std::filesystem::path& run_dir);

// The upstream result files of a run folder, one entry per level file:
// eval_results.json (+ eval_results_hidden.json), or eval_results_level<L>.json
// (+ eval_results_hidden_level<L>.json) as kbv writes for several levels.
struct UpstreamFile {
  std::filesystem::path eval_file;
  std::optional<std::filesystem::path> hidden_file;
  std::optional<int> level;  // from the file name; none for plain eval_results.json
};
std::vector<UpstreamFile> find_upstream_files(const std::filesystem::path& run_dir);

// The level of a plain eval_results.json: the one level of the kernel files in the folder.
std::optional<int> infer_run_level(const std::filesystem::path& run_dir);

// KernelBench-Verified's shape from kbv records of one level: {"<pid>_<sid>": {"sample_id",
// "compiled", "correctness", "metadata", "runtime", "runtime_stats"[, "peak_memory"]}}, keys in
// numeric order. `hidden`: correctness under every distribution (only records that ran them),
// with metadata "hidden_failed_configs" listing the failed distributions; otherwise correctness
// under the standard check.
nlohmann::ordered_json verified_eval_results(const std::vector<Record>& records, bool hidden);

}  // namespace kbv
