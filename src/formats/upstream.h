// KernelBench and KernelBench-Verified files, read into kbv records and written back:
//   eval_results.json, KernelBench:           {"<pid>": [{"sample_id", "compiled", "correctness",
//                                               "metadata", "runtime", "runtime_stats"}, ...]}
//                       (older KernelBench:    {"<pid>": {...one entry...}})
//   eval_results.json, KernelBench-Verified:  {"<pid>_<sid>": {...same keys..., "peak_memory"}}
//   eval_results_hidden.json (Verified):      the same shape; "correctness" under the four hidden
//                                             distributions, metadata "hidden_failed_configs"
// Times are milliseconds, memory bytes. Upstream speedup = baseline "mean" / candidate "runtime"
// (the baseline timing file: formats/baseline.h).
#pragma once
#include <filesystem>
#include <functional>
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

// What the export writes of one record's checks, as the report decides them (report/summary.h
// view_of): compiled, the standard check and the hidden distributions (absent: not run), and the
// distributions with a failed check, in order.
struct ExportGates {
  bool compiled = false;
  std::optional<bool> standard;
  std::optional<bool> hidden;
  std::vector<std::string> failed_distributions;
};
using GatesOf = std::function<ExportGates(const Record&)>;

// KernelBench-Verified's shape from kbv records of one level: {"<pid>_<sid>": {"sample_id",
// "compiled", "correctness", "metadata", "runtime", "runtime_stats"[, "peak_memory"]}}, keys in
// numeric order. `hidden`: correctness under every distribution (only records that ran them),
// with metadata "hidden_failed_configs" listing the failed distributions; otherwise correctness
// under the standard check. `gates_of` gives each record's checks (report/summary.h
// verified_eval_results passes the report's).
nlohmann::ordered_json verified_eval_results(const std::vector<Record>& records, bool hidden, const GatesOf& gates_of);

}  // namespace kbv
