// The timing phase of one evaluation (docs/TIMING.md) and the baseline cache it shares with
// `kbv baseline`. Only correct candidates are timed; the workers report raw samples, the
// supervisor computes every statistic and checks the candidate's claims: its own clock around the
// whole request, spot checks of timed outputs judged by the reference, the physical floor.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "measure/measure.h"
#include "supervisor/run.h"

namespace kbv {

// The baselines' twin (docs/TIMING.md "The baselines' twin"): on the CPU, paired rounds time the
// fp32 and tf32 baselines in a candidate-kind worker whose ModelNew is the problem's Model, started,
// confined, pinned and loaded as the candidate's, its calls served as the candidate's are. `worker`
// null: none (`error` says why, when one was wanted); the baselines are then the reference's.
struct BaselineTwin {
  std::unique_ptr<WorkerProcess> worker;
  std::string error;
};
// Whether an evaluation under `options` on `env` times baselines in a twin.
bool wants_baseline_twin(const EvalOptions& options, const Environment& env);

// Times the candidate and the protocol's baselines; writes `timing`, `runtime`, `runtime_stats`
// and timing findings into `record`; a rejecting finding makes the verdict `rejected`, a failure of
// the candidate during timing makes it runtime_error/timeout/crashed. Once the candidate's timing
// is over its worker is stopped (process group included), before the baselines and the device
// calibration are timed (T17). Never throws.
void timing_phase(Record& record, const Pair& pair, const EvalOptions& options, const Environment& env,
                  WorkerProcess& reference, WorkerProcess& candidate, const BaselineTwin& twin = {});

// What every timing request to a worker carries: the stop rule, the flush size and the launch hold.
msg::TimingSettings rule_request(const EvalOptions& options);

// Baselines are cached per (problem content, device name, torch and Python versions, timing
// protocol, precision, mode) under cache_dir/baselines/<key>.json.
std::string baseline_key(const std::string& problem_text, const EvalOptions& options, const Environment& env,
                         const std::string& mode);
// A cached baseline, or nullopt when none is cached or the entry fails its seal (src/store/sealed.h;
// then `refused`, if given, says why).
std::optional<nlohmann::json> load_baseline(const EvalOptions& options, const std::string& key,
                                            std::string* refused = nullptr);
std::string save_baseline(const EvalOptions& options, const std::string& key, const nlohmann::json& entry);

// Draws the timing input sets in the reference worker (op time_inputs). Returns the reply, or
// nullopt with `error`.
std::optional<msg::TimeInputsReply> draw_timing_inputs(WorkerProcess& reference, const EvalOptions& options,
                                                       std::string& error);
// Times one baseline mode in the reference worker (after draw_timing_inputs); returns the cache
// entry {mode, stats, samples_ms, run}, or nullopt with `error`. On the CPU (`cpu`) the stats
// carry `host_other_cores`: the CPU other processes used meanwhile (util/host_load.h). `round`:
// the paired round whose block this is (its fresh draws' seed; 0 unpaired).
std::optional<nlohmann::json> measure_baseline(WorkerProcess& reference, const EvalOptions& options,
                                               const std::string& mode, bool cpu, std::string& error, int round = 0);
// Whether a measured baseline entry may be cached: not when other processes held
// host_busy_cores() or more while it was timed (it would slow every later speedup's denominator).
bool baseline_cacheable(const nlohmann::json& entry);
// The device's copy bandwidth and matmul rates, measured once per (device name, torch version)
// and cached under cache_dir/calibration/. nullopt with `error` when it cannot be measured.
std::optional<nlohmann::json> device_calibration(WorkerProcess& reference, const EvalOptions& options,
                                                 const Environment& env, std::string& error);

// One line for people: "time 0.0123 ms (median of 57, rse 0.4%); speedup 1.02x [0.98-1.05] vs tf32
// (no measurable difference), ...; 41% of the speed of light". Empty when the record was not timed.
std::string timing_summary(const Record& record);

// The samples of a worker's timing reply as STATS (docs/RECORD.md).
Stats stats_of_reply(const msg::TimeReply& reply);

}  // namespace kbv
