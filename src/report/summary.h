// From stored records to what a report shows: one view per sample, and per level (and overall)
// the metrics of report/metrics.h under both correctness gates and every baseline.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/baseline.h"
#include "formats/upstream.h"
#include "record/record.h"
#include "report/generation.h"
#include "report/metrics.h"
#include "report/verified.h"

namespace kbv {

// Baselines a speedup can be against, in display order (record field timing.speedup.<name>).
inline constexpr const char* kReportBaselines[] = {"tf32", "fp32", "compile"};

// Correctness gates: the standard check (D1, uniform [0,1) inputs as KernelBench draws them) and
// the hidden distributions (every distribution of the protocol: D1..D4 under kbv's protocol).
enum class Gate { standard, hidden };

// One sample (or one empty slot) as the report sees it.
struct SampleView {
  int level = 0;
  int problem_id = 0;
  int sample_id = 0;
  std::string problem;   // problem file name ("19_ReLU.py"), "" when unknown
  bool present = false;  // false: no record for this slot (counts as a failure)
  bool compiled = false;
  std::string verdict;                            // the record's verdict; "missing" for an empty slot
  std::string reason;                             // why it failed (the record's message); "" when correct
  std::optional<bool> standard;                   // passed the standard check; absent: not run
  std::optional<bool> hidden;                     // passed every distribution; absent: hidden distributions not run
  bool standard_incomplete = false;               // D1 checks that ran passed, but a failure elsewhere stopped them
  std::map<std::string, double> speedup;          // per baseline: baseline time / candidate time
  std::map<std::string, Interval> speedup_ci95;   // per baseline: its 95% interval, when the record has one
  // per baseline: baseline mean / candidate mean, when the record has both, each rounded to 3
  // significant digits first (upstream_rounded): upstream's speedup is a ratio of the means its
  // baseline file and eval_results store, both so rounded. The verified table uses it where a
  // record has it.
  std::map<std::string, double> mean_speedup;
  std::map<std::string, SpeedupCall> calls;       // per baseline: faster, slower, no measurable difference
  std::vector<std::string> timing_warnings;       // short labels of the record's timing warnings (record/trust.h)
  std::map<std::string, double> memory_ratio;     // per baseline: baseline peak / candidate peak bytes
  std::string memory_note;                        // why memory was not measured, when the record says
  std::optional<double> speed_of_light;           // timing.speed_of_light (0..1)
  std::optional<double> runtime_ms;               // candidate time in ms (-1 in the record: absent here)
  std::vector<std::string> failed_distributions;  // distributions with a failed check, in order
  std::vector<std::string> cheats;                // reject findings: "T8 input_mutation" (cheat class, rule)

  bool passes(Gate g) const {
    const auto& v = g == Gate::standard ? standard : hidden;
    return v.value_or(false);
  }
};

// The view of one kbv record (or of an imported upstream entry stored as a record).
SampleView view_of(const Record& record);

// Metrics of one correctness gate, per slot and best-of-n per problem.
struct GateSummary {
  bool available = false;  // false: this gate was not run (e.g. no hidden distributions)
  int correct = 0;
  double correct_rate = 0;                         // correct slots / slots
  std::map<std::string, SpeedMetrics> speed;       // per baseline, over slots
  MemoryMetrics memory;                            // over slots, against the report's baseline
  std::map<int, double> pass_at_k;                 // k -> mean over problems
  int best_correct = 0;                            // problems with a correct sample
  double best_correct_rate = 0;                    // best_correct / problems
  std::map<std::string, SpeedMetrics> best_speed;  // per baseline, one best-of-n slot per problem
  MemoryMetrics best_memory;                       // the memory of each problem's best-of-n sample (report's baseline)
};

// One level, or every level ("all", level 0).
struct ScopeSummary {
  std::string name;
  int level = 0;
  int problems = 0;
  int samples_per_problem = 0;
  int slots = 0;
  int records = 0;
  int missing = 0;  // slots without a record
  int compiled = 0;
  double compile_rate = 0;
  int standard_incomplete = 0;
  GateSummary standard;
  GateSummary hidden;
  std::map<std::string, int> verdicts;              // verdict -> slots ("missing" included)
  std::map<std::string, int> failed_distributions;  // distribution -> samples with a failure there
  std::map<std::string, int> cheats;                // "T8 input_mutation" -> samples
  int timed = 0;                                    // samples with a speedup or a candidate time
  int timing_warned = 0;                            // of those, samples with a timing warning
  std::map<std::string, int> timing_warnings;       // timing warning label -> samples
};

// The problems a run is scored over (the denominator).
struct ProblemSlot {
  int level = 0;
  int id = 0;
  std::string name;
};

struct RunSummary {
  std::string name;
  std::string protocol;                     // kbv | kernelbench | kernelbench-import
  std::string precision = "fp32";           // fp32 | bf16 | fp16 (docs/PRECISION.md)
  std::string model;                        // the run folder: its runs in several precisions share it
  std::string device;                       // device name from the records, when they say
  std::string baseline;                     // the report's baseline (tf32 by default)
  std::vector<std::string> notes;           // what the reader must know (denominator source, gaps)
  std::vector<ScopeSummary> scopes;         // one per level, then "all" when there are several levels
  std::vector<SampleView> samples;          // every slot, by level, problem, sample
  std::vector<std::string> baselines_seen;  // baselines any sample has a speedup against
  GenerationSummary generation;             // what `kbv generate` recorded in the folder (records == 0: none)
  FastPMode fast_p_mode = FastPMode::interval;  // the fast_p definition of its metrics (docs/METRICS.md)
  // Said at the top of every report: more than half of the timed samples carry a timing warning,
  // so most of its speedups are unreliable. Empty otherwise.
  std::string timing_notice;
  // Problems left out of the denominator (docs/METRICS.md, "The denominator"), of the levels this
  // run covers, and how many of the run's records they held (not scored).
  std::vector<Exclusion> excluded;
  int excluded_records = 0;
  // What each baseline measured, by name ("fp32" -> "FP32 (strict)"; an imported baseline file:
  // what upstream's file measured). Only baselines some sample has a speedup against.
  std::map<std::string, std::string> baseline_labels;
};

// Scores `records` (one protocol's latest record per sample) over `problems`; when `problems` is
// empty, over the problems that have a record (and a note says so).
RunSummary summarize(const std::string& name, const std::vector<Record>& records,
                     const std::vector<ProblemSlot>& problems, const std::string& baseline,
                     FastPMode fast_p_mode = FastPMode::interval, const std::vector<Exclusion>& exclusions = {});

// KernelBench-Verified's eval_results.json (hidden: eval_results_hidden.json) of one level's records,
// each record's checks as the report sees them (view_of): formats/upstream.h verified_eval_results.
nlohmann::ordered_json verified_eval_results(const std::vector<Record>& records, bool hidden);

// The k values reported for pass@k with s samples per problem: 1, 5, 10, 100 up to s, and s.
std::vector<int> pass_at_k_values(int samples_per_problem);

}  // namespace kbv
