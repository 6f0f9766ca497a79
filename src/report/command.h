// `kbv report`, `kbv import`, `kbv export`: read run folders (kbv's store, or upstream
// KernelBench files), score them, write the report or the upstream files.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/record.h"
#include "util/outcome.h"

namespace kbv {

// One report entry: a run folder's latest records of one protocol.
struct LoadedRun {
  std::string name;
  std::filesystem::path dir;
  std::string protocol;
  std::string precision = "fp32";  // fp32 | bf16 | fp16: each precision is a run of its own (docs/PRECISION.md)
  std::vector<Record> records;
  std::vector<std::string> notes;
};

// Reads a run folder: RUN/kbv.sqlite when it exists (one LoadedRun per protocol name in it, the
// newest record per sample), otherwise its upstream eval_results*.json files, in memory.
// `level` is the level of a plain eval_results.json when the folder's kernel files do not say.
std::vector<LoadedRun> load_run(const std::filesystem::path& dir, std::optional<int> level,
                                std::vector<std::string>& warnings, std::string& error);

// A job queue's URL (sqlite:PATH, postgresql://..., postgres://...) rather than a run folder.
bool is_queue_url(const std::string& text);
// A run folder as given, or a queue URL with its password hidden: how a report names its input.
std::string shown_input(const std::filesystem::path& input);
// The done jobs' records of a job queue (src/queue), as load_run reads a run's kbv.sqlite: one
// LoadedRun per protocol and precision; a job has no sample id, so each problem's distinct
// solutions are numbered in the order their first jobs were submitted (report/queue_source.cc).
std::vector<LoadedRun> load_queue(const std::string& url, std::vector<std::string>& warnings, std::string& error);

struct ReportOptions {
  std::vector<std::filesystem::path> runs;  // run folders, or job queue URLs (is_queue_url)
  std::string baseline = "tf32";
  std::string out;     // "" or "-": stdout
  std::string format;  // md | html | csv | json; empty: from the --out extension, else md
  std::optional<std::filesystem::path> problems_dir;
  std::vector<std::string> baseline_files;  // [NAME=]PATH, applied to imported runs
  std::optional<int> level;                 // for a plain eval_results.json
  std::string precision;                    // fp32 | bf16 | fp16: only runs of that precision; empty: all
  std::string fast_p = "interval";          // interval | point: fast_p's definition (docs/METRICS.md)
  // auto | verified | kbv: KernelBench-Verified's table shape on top (auto: when every run is
  // under that protocol); verified also takes its denominator (report/verified.h).
  std::string table = "auto";
  // `kbv lint-problems --json` reports: their unsolvable and degenerate problems leave the denominator.
  std::vector<std::filesystem::path> exclude_from;
};
// Ok when written (to stdout: a data notice); input_error on unusable input.
Outcome report_command(const ReportOptions& options, const Notify& notify);

struct ImportOptions {
  std::filesystem::path from;                 // the upstream run folder
  std::optional<std::filesystem::path> into;  // where kbv.sqlite goes (default: `from`)
  std::optional<int> level;
  std::vector<std::string> baseline_files;  // [NAME=]PATH, stored as speedups in the records
};
Outcome import_command(const ImportOptions& options, const Notify& notify);

struct ExportOptions {
  std::filesystem::path run;
  std::optional<std::filesystem::path> to;  // default: the run folder
  std::string format = "verified";          // verified | kernelbench
};
Outcome export_command(const ExportOptions& options, const Notify& notify);

// The report format for --format / --out: "md", "html", "csv", "json", or "" when unknown.
std::string report_format(const std::string& format, const std::string& out);

}  // namespace kbv
