// The measurement engine's pure parts (no torch, no CUDA): statistics of samples, the stopping
// rule, the throttle rule, the events-versus-host-clock decision and the physical floor.
// The loop that takes samples lives in src/worker/timing.* (it needs the device); the supervisor
// recomputes every figure here from the raw samples a worker reports (docs/TIMING.md).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv {

// STATS of docs/RECORD.md: every figure in milliseconds.
struct Stats {
  double median_ms = 0, mean_ms = 0, std_ms = 0, min_ms = 0, max_ms = 0, iqr_ms = 0;
  int samples = 0;
  int discarded = 0;      // samples thrown away (throttled SM clock)
  double rse = 0;         // relative standard error of the mean: std / sqrt(n) / mean
  double overhead_ms = 0; // the timer's own overhead (an empty interval), not subtracted
  double host_call_ms = -1; // GPU: median host time from the start event to the call's return (-1: not known)
  nlohmann::json to_json() const;
};

// Median, mean, sample standard deviation, min, max, interquartile range (linear interpolation
// between order statistics, as numpy's default) and relative standard error. Empty input: zeros.
Stats summarize(std::span<const double> ms);
// Quantile q in [0, 1] of sorted values, linear interpolation.
double quantile_sorted(std::span<const double> sorted, double q);

// When to stop taking samples.
struct StopRule {
  int warmup = 3;            // untimed calls before the first sample
  int min_samples = 10;      // the RSE criterion needs at least this many kept samples
  int min_samples_at_cap = 3;// the time cap stops only once this many are kept
  int max_samples = 2000;    // hard bound
  double rse_target = 0.005; // stop when the relative standard error is at or below this
  double time_cap_s = 1.0;   // stop when the sampling has taken this long (device time + overhead)
  int max_discards = 100;    // beyond this many throttled samples, throttled samples are kept
  // > 0: exactly this many kept samples and no other stop (upstream's fixed loop: KernelBench-Verified
  // times 100 calls); 0: the rules above. Written in to_json only when set, so that the protocol
  // hash of the stopping rule (kbv's) stays as records stored before it have it.
  int calls = 0;
  nlohmann::json to_json() const;
};

enum class StopReason { none, rse, time_cap, max_samples, calls };
const char* stop_reason_name(StopReason r);
// kept_ms: the samples kept so far; elapsed_s: wall time since the first sample started.
StopReason should_stop(const StopRule& rule, std::span<const double> kept_ms, double elapsed_s);

// SM clock around one sample (NVML). `known` is false where no clock could be read (CPU, no NVML).
struct ClockReading {
  bool known = false;
  double sm_mhz = 0;
  uint64_t reasons = 0;  // NVML clocks-event (throttle) reason bits
  double mem_mhz = 0;    // the memory clock (0: not read)
};
// NVML reason bits that mean the clock was pulled down by heat or a hardware brake.
inline constexpr uint64_t kThrottleHwBits = 0x8 | 0x20 | 0x40 | 0x80;
// The sample is throttled when either reading shows a hardware/thermal slowdown bit, or an SM
// clock more than `tolerance` (relative) below `expected_mhz`. Unknown readings are never throttled.
bool throttled(const ClockReading& before, const ClockReading& after, double expected_mhz, double tolerance = 0.05);

// One interval seen by two clocks: CUDA events on the calling stream and the host clock around
// the call plus a full device synchronisation. Events miss work on other streams (T1); the host
// clock includes the synchronisation's own cost. When host − sync overhead exceeds the event time
// by more than `slack`, the two disagree and the larger (host − sync overhead) is the sample.
struct IntervalDecision {
  double ms = 0;
  bool disagreed = false;
};
// slack_ms: the noise allowance (docs/TIMING.md: max(3 × the spread of empty host intervals,
// 2 µs, 2% of the event time)).
IntervalDecision decide_interval(double event_ms, double host_ms, double sync_overhead_ms, double slack_ms);
double interval_slack_ms(double event_ms, double host_spread_ms);
// The same behind the launch hold (TimingProtocol::launch_hold_us). The clocks are compared with
// the hold's GPU time taken off the host clock (host_after_hold_ms). When they disagree, work
// escaped the events, and work on another stream can have run during the hold, which that
// comparison took off: the sample is then the host clock from the call's entry
// (host_from_call_ms, the hold not in it) less the synchronisation, if larger.
IntervalDecision decide_held_interval(double event_ms, double host_after_hold_ms, double host_from_call_ms,
                                      double sync_overhead_ms, double slack_ms);

// One block's share of the stop rule under `pairs` paired rounds (pairs <= 1: the rule itself):
// the time cap, the sample and discard bounds divided between the blocks, at least 5 samples a
// block for the RSE criterion, whose target is sqrt(pairs) looser per block (the pooled samples'
// RSE is then about the target); warm-up calls in full in the first block (`first`), one after;
// fixed calls divided between the blocks (rounded up).
StopRule block_rule(const StopRule& rule, int pairs, bool first);

// The physical floor: the fewest bytes that must move (inputs read once, outputs written once)
// over the measured copy bandwidth (bytes read + written per second). 0 when unknown.
double floor_ms(uint64_t bytes, double bandwidth_bytes_per_s);

}  // namespace kbv

namespace kbv {

// 500 us: on the H200 the launch of a norm or a matrix-vector call takes up to ~0.4 ms after a
// served draw; behind a 200 us hold it outlasted the hold and the A/A medians followed it (1.7%
// apart), behind 500 us no sample was late (docs/TIMING.md, the A/A row).
inline constexpr double kDefaultLaunchHoldUs = 500;
inline constexpr double kMaxLaunchHoldUs = 10000;
// Paired rounds by default (--protocol kbv): 6 = 3 rounds baseline-first and 3 candidate-first, so
// a steady drift weighs on both sides alike; 6 is also the fewest rounds whose ratios have a
// distribution-free 95% interval for their median ([min, max], 96.9%), the bar the interval over
// the rounds' ratios is held to; each block gets a sixth of the time cap (docs/TIMING.md, "Paired rounds").
inline constexpr int kDefaultTimingPairs = 6;
inline constexpr int kMaxTimingPairs = 64;
// 1: one core against one core, what a shared host can give both sides alike (docs/TIMING.md,
// "Thread parity").
inline constexpr int kDefaultCpuThreads = 1;

// The timing knobs of the protocol (recorded in every result and in the protocol hash).
struct TimingProtocol {
  bool enabled = true;                               // --timing on|off
  StopRule rule;                                     // --rse, --time-cap
  std::vector<std::string> baselines = {"tf32", "fp32"};  // --baselines (tf32, fp32, compile)
  bool fresh = true;                                 // --timing-inputs fresh: a new get_inputs() draw per call
  int sets = 4;                                      // --timing-inputs sets: input sets cycled through (--timing-sets)
  uint64_t max_set_bytes = 4ull << 30;               // fewer sets when K sets would exceed this
  uint64_t flush_bytes = 0;                          // 0: 2 x L2 (GPU) or 2 x L3 (CPU, at most 64 MiB), at least 32 MiB
  int spot_per_output = 2;                           // positions read per output per timed call
  int spot_max_calls = 0;                            // timed calls whose outputs are spot-checked (0: every one)
  int spot_draws = 16;                               // fresh: calls the reference recomputes (a secret choice)
  // GPU: microseconds the calling stream is held (a sleep kernel) before each sample's start event,
  // so the call's launch is queued when the interval begins (--launch-hold-us; 0: none; at most
  // kMaxLaunchHoldUs). docs/TIMING.md, "The interval".
  double launch_hold_us = kDefaultLaunchHoldUs;
  // Paired rounds (--timing-pairs): each round a block of every baseline and a block of the
  // candidate, interleaved (ABBA), with the stop rule split between them (block_rule); 0: the
  // candidate timed once, then the baselines (cached per problem), as before.
  int pairs = kDefaultTimingPairs;
  // CPU: the thread budget of the candidate and the baselines alike (--cpu-threads; 0: every CPU
  // kbv may run on). Both workers are pinned to the same kbv-chosen set of that many CPUs and run
  // ATen's intra-op pool at that size (util/sched.h cpu_budget, docs/TIMING.md "Thread parity").
  int cpu_threads = kDefaultCpuThreads;
  // Which statistic of the kept samples is the result's `runtime` and its speedups' ratio
  // (measure/statistic.h): "median" (kbv) or "mean" (upstream's get_timing_stats).
  std::string statistic = "median";
  // A cache flush before each timed call (worker/l2_flush.h): true (kbv, and KernelBench main's
  // clear_l2_cache) or false (KernelBench-Verified: nothing between calls but a synchronisation).
  bool l2_flush = true;
  // The sampling loop: "kbv" (each call's inputs loaded into the live buffers before it; on the GPU
  // the sample is the host clock around a full synchronisation where the events disagree with it)
  // or "upstream" (time_execution_with_cuda_event: the inputs as the previous call left them, the
  // sample the cuda-event time; a disagreement is still counted and warned about).
  std::string loop = "kbv";
  // Where CPU paired rounds time the fp32 and tf32 baselines (--baseline-worker): "twin" (a
  // candidate-kind worker whose ModelNew is the problem's Model, confined, loaded and served as the
  // candidate's is: docs/TIMING.md "The baselines' twin") or "reference" (the reference worker, as
  // before 2026-12-07). Unpaired, compile and GPU baselines are timed by the reference either way.
  std::string baseline_worker = "twin";
  // statistic, l2_flush, loop and baseline_worker are written in to_json only where they differ from kbv's, so the
  // hash of kbv's protocol (and its stored records' resume keys and cached baselines) stays.
  nlohmann::json to_json() const;
};

}  // namespace kbv
