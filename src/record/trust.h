// How far a record's speedups can be trusted, in one place for the terminal and every report:
// its timing warnings (the findings and timing fields that say a figure may be off) and the text
// of a speedup with its 95% interval (docs/METRICS.md, docs/TIMING.md). Pure: no output.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "record/finding.h"
#include "record/record.h"

namespace kbv {

// A finding that says the record's timing may be off: a warning (never a reject) of the timing
// phase, e.g. timing_host_busy, timing_mismatch as warn (the device's and the host's clocks
// disagreed, or under --protocol kernelbench a check that there only warns), cache_entry_refused,
// reference_disturbed, process_left_running, impossible_speed and spot_check_failed as warn.
bool is_timing_warning(const Finding& finding);

// The short label of a timing warning finding ("host busy", "clocks disagreed"); "" for a finding
// that is not one.
std::string timing_warning_label(const Finding& finding);

// The short labels of all of a record's timing warnings, each once, in a fixed order: its timing
// warning findings, then what the timing fields say without a finding (late launches:
// timing.launch_hold.late > 0; throttling: timing.clock.throttled_kept > 0). Empty: none.
std::vector<std::string> timing_warning_labels(const Record& record);

// Every label timing_warning_labels can return, in its order.
const std::vector<std::string>& timing_warning_label_order();

// The 95% interval of the speedup against `baseline`: [low, high] when the record has a well
// formed one (two positive finite values, low <= high), else none (older and imported records).
std::optional<std::pair<double, double>> speedup_interval(const Timing& timing, const std::string& baseline);

// "1.420x [1.300, 1.550]" (precision: digits after the point), "1.420x" without an interval, ""
// without a speedup. `x` is the sign after the number ("x" on the terminal, "×" in reports).
std::string speedup_text(const Timing& timing, const std::string& baseline, int precision = 3,
                         const std::string& x = "x");

// Every speedup of `timing`, for the terminal: "1.420x [1.300, 1.550] vs tf32 (faster), 2.000x vs
// fp32"; a speedup with an interval says what it says (an interval containing 1: "no measurable
// difference"). "" without speedups.
std::string speedups_text(const Timing& timing);

// A sample's line in a batch (`kbv eval --run`): " · speedup 1.420x [1.300, 1.550] vs tf32
// (faster) · timing warnings: host busy", each part only when the record has it; "" for neither.
std::string sample_line_suffix(const Record& record);

}  // namespace kbv
