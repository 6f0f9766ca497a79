// Which statistic of the timed samples is a result's runtime (TimingProtocol::statistic), and the
// words a record uses to say how those samples were taken (TimingProtocol::loop, l2_flush,
// rule.calls). Pure: no torch, no worker (docs/TIMING.md, docs/PROTOCOLS.md).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "measure/measure.h"

namespace kbv {

inline constexpr const char* kStatisticMedian = "median";  // kbv: robust to a stray slow call
inline constexpr const char* kStatisticMean = "mean";      // upstream: np.mean of the trials
inline constexpr const char* kLoopKbv = "kbv";
inline constexpr const char* kLoopUpstream = "upstream";  // time_execution_with_cuda_event

// The figure `statistic` names: the mean for "mean", the median for "median".
double statistic_ms(const Stats& s, const std::string& statistic);
// Its key in a STATS object (docs/RECORD.md): "mean_ms" or "median_ms".
const char* statistic_key(const std::string& statistic);

// How the samples were taken, in one line: "median of kbv's loop (...)" or, for
// KernelBench-Verified's knobs, "mean of 100 calls after 3 warm-ups, ... (upstream's loop)".
std::string loop_description(const TimingProtocol& t);

// The record's `runtime_stats` (docs/RECORD.md): KernelBench's keys (mean, std, min, max,
// num_trials, hardware, device), kbv's median, and which statistic `runtime` is with how it was
// measured (`statistic`, `loop`).
nlohmann::json runtime_stats_json(const Stats& s, const TimingProtocol& t, const std::string& hardware,
                                  const std::string& device);

// The statistic a record's `runtime_stats` says `runtime` is; "median" where it says none (records
// written before the knob: kbv's runtime was always the median).
std::string runtime_statistic(const nlohmann::json& runtime_stats);

}  // namespace kbv
