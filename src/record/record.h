// The evaluation record (docs/RECORD.md) as plain structs. One evaluation produces one Record;
// `kbv eval --json`, the store (RUN/kbv.sqlite), eval_results.json and the reports see its JSON,
// written and read in one place: to_json / record_from_json (record.cc). Every key kbv reads or
// decides on is a typed field; parts that are only passed through (the audit's observations,
// compute lists, comparisons) stay JSON. A stored record's keys kbv does not know are kept in
// `extra` and written back, so a read-modify-write loses nothing. No torch, no Python, no output.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/finding.h"
#include "record/unknown.h"

namespace kbv {

enum class Verdict {
  pending,  // "": not decided yet (never in a finished record)
  correct,
  wrong_output,
  flaky,  // a failed check whose identical re-run passed (or the reverse): unstable, not wrong
  compile_error,
  runtime_error,
  timeout,
  crashed,
  rejected,
  problem_error,
  interrupted,  // kbv was interrupted: never stored
  harness_error,  // the host failed kbv, not the candidate (a worker could not start): never stored
};
const char* verdict_name(Verdict v);                       // the wire name ("wrong_output")
std::optional<Verdict> parse_verdict(std::string_view name);

// One trial x distribution entry of `distributions[]`.
struct TrialResult {
  int trial = 0;
  std::string distribution;  // "D1"
  double scale = 1.0;
  std::optional<uint64_t> seed;  // only with --seed or --protocol kernelbench
  std::optional<bool> passed;
  std::optional<nlohmann::json> reason;           // why it failed (the reference's text)
  std::optional<nlohmann::json> comparisons;      // per output (docs/RECORD.md)
  std::optional<nlohmann::json> mutated_inputs;   // argument positions
  std::optional<nlohmann::json> reference_error;  // below fp32: this draw's reference error
  Unknown unknown;
};

// `flaky`: the identical re-runs of the first failed check (same seed, so the reference draws the
// same inputs; same scale), made when the protocol's flaky_reruns is above 0 (docs/RECORD.md). A
// re-run that passes makes the verdict flaky; when every one fails too, it stays wrong_output.
struct FlakyAttempt {
  int trial = 0;
  std::string distribution;              // "D1"
  double scale = 1.0;
  int attempt = 0;                       // 0: the check itself; 1..reruns: its re-runs
  std::optional<nlohmann::json> reason;  // a failed attempt: why (the reference's text)
  Unknown unknown;
};
struct Flaky {
  int reruns = 0;  // the protocol's bound on the re-runs (those made: passed + failed - 1)
  std::vector<FlakyAttempt> passed, failed;
  Unknown unknown;
};

// `metadata`: KernelBench's keys and kbv's. Imported records carry upstream's own keys in extra.
struct Metadata {
  std::optional<std::string> hardware, device, correctness_trials, compilation_error, runtime_error,
      correctness_issue, problem_error;
  std::optional<bool> needs_cuda, dtype_fallback;
  Unknown unknown;
};

// `protocol`: every knob (Protocol::to_json) plus the environment's versions. The knobs the
// reports decide on are typed; the rest are passed through.
struct RecordProtocol {
  std::optional<std::string> name;  // kbv | kernelbench | kernelbench-import
  std::optional<int> trials;
  struct Dist {
    std::string name;
    nlohmann::json scale;  // passed through
  };
  std::optional<std::vector<Dist>> distributions;
  std::optional<std::string> precision, device_name, torch_version, python_version, kbv_version;
  Unknown unknown;  // atol, rtol, seed, timing, ... (docs/RECORD.md)
};

// STATS of the timed candidate (docs/RECORD.md); the figures people read are typed.
struct TimedStats {
  std::optional<double> median_ms, mean_ms, rse;
  std::optional<int> samples;
  Unknown unknown;
};

// `timing`: only in timed records.
struct Timing {
  std::optional<std::string> method;
  std::optional<std::string> error;  // why the candidate was not timed
  std::optional<TimedStats> candidate;
  std::optional<nlohmann::json> baselines;           // per baseline: STATS (passed through)
  std::optional<std::map<std::string, double>> speedup;  // per baseline: baseline / candidate median
  // per baseline: the 95% interval of the speedup, [low, high] (docs/METRICS.md)
  std::optional<std::map<std::string, std::vector<double>>> speedup_ci95;
  std::optional<int> pairs;    // paired rounds (baseline and candidate blocks interleaved); absent: unpaired
  std::optional<int> threads;  // CPU: the intra-op thread budget of both the candidate and the baselines
  std::optional<double> speed_of_light;
  Unknown unknown;  // wall_check, spot_checks, clock, floor_ms, ... (docs/TIMING.md)
};

// `memory`: correct candidates only (docs/MEMORY.md).
struct Memory {
  std::optional<bool> measured;
  std::optional<std::string> method, reason;
  struct Side {
    std::optional<double> peak_bytes;
    Unknown unknown;
  };
  std::optional<Side> candidate;
  std::optional<nlohmann::json> baselines;  // passed through
  std::optional<std::map<std::string, double>> ratio;
  Unknown unknown;
};

// `build`.
struct BuildInfo {
  double seconds = 0;
  bool cached = false;
  std::optional<nlohmann::json> diagnostics;  // first compiler errors
  Unknown unknown;
};

// `kernelbench`: records made by `kbv import` (docs/METRICS.md).
struct Imported {
  std::optional<std::string> format, key;
  std::optional<bool> standard_correctness, hidden_correctness;
  std::optional<std::vector<std::string>> hidden_failed;
  std::optional<nlohmann::json> hidden_metadata;
  std::optional<double> peak_memory;
  Unknown unknown;
};

// The precisions a record can be evaluated in (docs/PRECISION.md), in the reports' order.
inline constexpr const char* kPrecisions[] = {"fp32", "bf16", "fp16"};

struct Record {
  // Identity.
  int level = 0, problem_id = 0, sample_id = 0;
  std::string problem, solution;
  std::optional<std::string> solution_hash, source_origin, precision;
  // Outcome.
  bool compiled = false;
  bool correctness = false;  // verdict == correct (imported records without a verdict: upstream's)
  Verdict verdict = Verdict::pending;
  std::string message;
  std::vector<Finding> findings;
  std::vector<TrialResult> distributions;
  std::optional<Flaky> flaky;  // the re-runs of the first failed check, when it was re-run
  std::optional<nlohmann::json> reference_error;  // below fp32: per output, the worst draw
  std::optional<std::string> traceback;
  std::optional<nlohmann::json> problem_overrides;
  Metadata metadata;
  // Measurements.
  double runtime = -1.0;                                   // ms; -1: not timed
  nlohmann::json runtime_stats = nlohmann::json::object();  // KernelBench's keys (passed through)
  std::optional<Timing> timing;
  std::optional<Memory> memory;
  std::optional<nlohmann::json> compute;  // what ran (docs/RECORD.md; passed through)
  std::optional<nlohmann::json> audit;    // the runtime audit's observations (passed through)
  // The candidate worker's confinement (sandbox::verify): {"mode"} and, once it started,
  // {"layers"} (passed through; absent in older and imported records).
  std::optional<nlohmann::json> sandbox;
  std::optional<BuildInfo> build;
  std::optional<double> seconds;
  std::optional<std::map<std::string, double>> phase_seconds;
  // Whether the candidate worker was pre-started (--warm-workers, supervisor/warm_pool.h) rather
  // than started for this candidate; absent when no candidate worker was started.
  std::optional<bool> warm_worker;
  RecordProtocol protocol;
  std::optional<Imported> kernelbench;
  Unknown unknown;

  bool is_correct() const { return verdict == Verdict::correct; }
  // A verdict on the candidate, which may be stored: not pending, interrupted or harness_error.
  bool judges_candidate() const {
    return verdict != Verdict::pending && verdict != Verdict::interrupted && verdict != Verdict::harness_error;
  }
  // The evaluated precision: `precision`, else the protocol's, else fp32 (older records).
  std::string precision_or_default() const;
};

// What a speedup against `baseline` says, from its 95% interval when there is one: faster or
// slower only when the interval excludes 1, else no measurable difference; unknown without a
// speedup. Without an interval (older records) the point estimate decides.
enum class SpeedupCall { unknown, faster, slower, no_difference };
SpeedupCall speedup_call(const Timing& timing, const std::string& baseline);
const char* speedup_call_name(SpeedupCall c);  // "faster" | "slower" | "no measurable difference" | "unknown"

// The record's JSON (docs/RECORD.md): the only place its keys are written.
nlohmann::json to_json(const Record& record);
nlohmann::json to_json(const Finding& finding);

// A stored record. Never throws: an error (the value is not a JSON object) comes back in `error`
// and the record is then empty. Keys of an unexpected type are kept verbatim (see Unknown) and the
// typed field keeps its default, as the readers always treated them.
struct RecordRead {
  Record record;
  std::string error;
  bool ok() const { return error.empty(); }
};
RecordRead record_from_json(const nlohmann::json& j);

// Parts, for the phases whose modules produce them as JSON (measure/memory, the audit).
Memory memory_from_json(const nlohmann::json& j);
Metadata metadata_from_json(const nlohmann::json& j);
nlohmann::json to_json(const Metadata& metadata);
RecordProtocol protocol_from_json(const nlohmann::json& j);
Timing timing_from_json(const nlohmann::json& j);
nlohmann::json to_json(const Timing& timing);
nlohmann::json to_json(const Imported& imported);

}  // namespace kbv
