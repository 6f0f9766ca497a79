// Report output: Markdown (terminals, pull requests), self-contained HTML (inline SVG plots,
// sortable tables, no external resources), CSV (one row per sample) and JSON (everything).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/summary.h"

namespace kbv {

struct ReportInput {
  std::vector<RunSummary> runs;
  std::string baseline = "tf32";   // the speedup denominator the headline numbers use
  std::vector<std::string> notes;  // report-wide notes (inputs, warnings)
  // KernelBench-Verified's table shape on top (kbv report --table verified, or every run under
  // that protocol): docs/METRICS.md, "The verified table".
  bool verified_tables = false;
};

std::string render_markdown(const ReportInput& input);
std::string render_html(const ReportInput& input);
std::string render_csv(const ReportInput& input);
nlohmann::ordered_json render_json(const ReportInput& input);

// --- the table model shared by the Markdown and HTML renderers --------------------------------
struct Cell {
  std::string text;
  std::optional<double> sort;  // numeric sort key (HTML); absent: sorts as text, last when empty
  std::string tone;            // "" | "good" | "bad" | "na" (not measured / not run)
  bool left = false;           // text with a numeric sort key (a problem name sorted by id)
};
// A cell of text, and one of a number shown as `s` and sorted by `v`.
inline Cell text_cell(std::string s, std::string tone = {}) {
  return Cell{std::move(s), std::nullopt, std::move(tone)};
}
inline Cell number_cell(std::string s, double v, std::string tone = {}) { return Cell{std::move(s), v, std::move(tone)}; }
struct Table {
  std::string id;
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<Cell>> rows;
  bool sortable = false;
};

// The gate a run's headline numbers use: hidden distributions when the run has them.
Gate headline_gate(const ScopeSummary& scope);

Table leaderboard_table(const ReportInput& input);
// Per run: fast_1 and the geomean speedup against the TF32 and the FP32 baselines, under the
// standard check and the hidden distributions (KernelBench-Verified's two-by-two).
Table gates_table(const ReportInput& input);
Table summary_table(const RunSummary& run, size_t index);
Table survival_table(const RunSummary& run, const ScopeSummary& scope, size_t index);
Table verdict_table(const RunSummary& run, size_t index);
Table samples_table(const RunSummary& run, size_t index);
// One row per model (run folder) evaluated in more than one precision: its fp32, bf16 and fp16
// numbers side by side (report/precision_table.cc). No rows when no model has two precisions.
Table precision_table(const ReportInput& input);

// KernelBench-Verified's tables (report/verified_tables.cc), one row per run: the paper's speed
// table (per level: Speedup, Correctness, Fast@1), its memory table (per level: Mem Eff, Mem
// Eff%) and its overall table (all levels pooled), best-of-n as its scoring code computes them.
Table verified_speed_table(const ReportInput& input);
Table verified_memory_table(const ReportInput& input);
Table verified_overall_table(const ReportInput& input);
// The problems a run is not scored on, with why and where that comes from; no rows when none.
Table excluded_table(const RunSummary& run, size_t index);

// Formatting shared by the renderers.
std::string format_rate(double rate);                 // "52.0%"
std::string format_speedup(double x);                 // "1.43×"
// fast_p at threshold i: "52.0%", under the interval definition with the correct samples whose
// interval straddles the threshold ("52.0% · 3 uncertain").
std::string format_fast_p(const SpeedMetrics& m, size_t i);
// "1.43× [1.30, 1.55]": the speedup and its 95% interval; without one, format_speedup.
std::string format_speedup_ci(double x, const std::optional<Interval>& ci);
// A sample's speedup against `baseline`: with its interval, and "no measurable difference" when
// the interval contains 1 (record.h's speedup_call); "" when it has none.
Cell speedup_cell(const SampleView& v, const std::string& baseline);
// "3 of 10 (host busy 3, throttled 1)": a scope's timed samples with a timing warning, by label.
std::string timing_warnings_text(const ScopeSummary& scope);
std::string format_count_rate(int count, int total);  // "52.0% (52/100)"

}  // namespace kbv
