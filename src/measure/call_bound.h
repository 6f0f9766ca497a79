// The per-call outside bound (T22, docs/TIMING.md "Per-call outside bound"). Every timed call of
// the candidate is framed by two marks on its worker's reply channel, sent just before and just
// after the interval; the supervisor's own clock sees the time between its answer to the start
// mark and the end mark's arrival: the call's outside window. A sample the candidate's process
// reports can be shorter than that window only by the channel's round trip (measured meanwhile
// by the supervisor on the trusted reference worker). A sample shorter than that was measured by
// a clock the candidate rewrote, or is forged, unless the host's scheduler explains it: the time the
// candidate's worker and the supervisor waited for a CPU inside the window (util/host_load.h
// ThreadWait: the kernel's account, out of the candidate's reach) is in no honest sample.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv {

struct CallBound {
  int checked = 0;                 // calls with both a sample and an outside window
  int short_calls = 0;             // samples shorter than their window less the allowance
  double allowance_ms = 0;         // what a sample may fall short of its window
  double ping_ms = 0;              // median round trip to the reference meanwhile
  double median_gap_ms = 0;        // median of window - sample over the checked calls
  int worst_sample = -1;           // the sample with the largest window - sample
  double worst_sample_ms = 0, worst_window_ms = 0;
  int waited_calls = 0;            // short calls whose shortfall the waits for a CPU explain
  double waited_ms = 0;            // median wait for a CPU over the short calls (-1: not known)
  bool ok = true;                  // short_calls within what a busy host explains
  // False when too many calls fell short (not ok) but without the waits too few would have: the
  // host's scheduler, not a forged clock, may explain them, and no speedup can be claimed.
  bool judged = true;
  nlohmann::json to_json() const;
};

// A sample may fall short of its window by this much at least (the two marks' own clock reads
// and message handling), even when the round trips meanwhile were faster.
constexpr double kCallBoundFloorMs = 0.05;
// The allowance is this many times the 90th percentile of the round trips seen meanwhile.
constexpr double kCallBoundPingFactor = 3.0;
// A run is forged when more than this fraction of its calls fall short: the median the record
// reports moves below the honest calls' range only when half the samples do. A quarter was too
// strict: the honest ReLU beside two busy loops on a 2-core host had 6 of 20 calls short (late
// wake-ups; median window - sample 0.055 ms), docs/results/RESULTS-2026-12-05-timing.md.
constexpr double kCallBoundShortFraction = 0.5;

// samples_ms[s] and windows_ms[s] of timed sample s (a window < 0: not seen); pings_ms the round
// trips to the reference taken during the run; held_ms what the protocol itself puts in every
// window and never in a sample (the GPU's launch hold, docs/TIMING.md), added to the allowance;
// waits_ms[s] how long the candidate's worker and the supervisor waited for a CPU inside window s
// (< 0 or missing: not known). A wait can include the candidate's own threads holding its CPU
// (its main thread yielding to a helper that computes), so a waited call is never counted honest:
// it can only make a failed bound unjudged instead of a forgery.
CallBound bound_calls(std::span<const double> samples_ms, std::span<const double> windows_ms,
                      std::span<const double> pings_ms, double held_ms = 0, std::span<const double> waits_ms = {});

// The per-call CPU bound (T22, CPU timing): the CPU time every thread of the candidate's worker
// used inside a call's window (the kernel's process CPU clock, read by the supervisor when it
// answers the start mark and when the end mark arrives: util/host_load.h ProcessCpuTime) against
// the sample the worker reported for it. An honest call spends no more CPU than `threads` CPUs
// can in its sample, plus the marks' own handling; a clock that runs behind while the call
// computes, or a helper thread of the process that computes while the main thread reports a short
// call, shows as CPU time no sample explains. Waiting for a CPU is not CPU time, so a busy host
// cannot make an honest call fail this bound, and its allowance does not grow with the host's
// round trips as the wall-clock one's does: it sees a forgery of 0.15 ms a call where that one
// needs 0.5 ms or more (docs/TIMING.md).
struct CpuBound {
  int checked = 0;          // calls with a sample and the worker's CPU time over their window
  int over_calls = 0;       // calls whose worker used more CPU than threads x sample and its allowance
  int threads = 1;          // CPUs the worker may run on at once (the CPU budget)
  double allowance_ms = 0;  // CPU a call may use beyond threads x sample, at the median sample
  double median_excess_ms = 0;  // median of cpu - threads x sample
  int worst_sample = -1;
  double worst_sample_ms = 0, worst_cpu_ms = 0;
  bool ok = true;  // over_calls within kCallBoundShortFraction of the checked calls
  nlohmann::json to_json() const;
};

// The CPU a call's window holds beyond its sample when nothing is forged: the worker reads the
// start mark's answer, reads its clock, and after the call reads its clock and writes the end mark,
// each a wake-up of another CPU (in a VM, an exit to the host). On the 2-core CI VM (2026-12-06,
// docs/results/2026-12-06-cpu-bound.md) the honest CPU corpus spent a median 0.017-0.045 ms per
// call beyond its sample on calls of 0.08-1.3 ms, 0.082 ms on a 24 ms call, single calls up to
// 0.19 ms; a clock rewritten to hide 0.06 ms a call showed 0.059-0.066 ms, inside that range. So
// the allowance keeps three times the honest medians' margin, and a share of the sample for long
// calls: the bound sees a forgery of 0.15 ms a call and more (the wall-clock bound: about 0.5 ms
// there, often nothing on a busy host), not the 0.06 ms one.
constexpr double kCpuBoundFloorMs = 0.15;
constexpr double kCpuBoundSampleFraction = 0.01;

// samples_ms[s] and cpu_ms[s] of timed sample s (cpu < 0: not known); threads >= 1.
CpuBound bound_cpu(std::span<const double> samples_ms, std::span<const double> cpu_ms, int threads);

// The processes beside the candidate's worker (its process group or PID namespace: util/host_load.h
// BesideCpu) while its calls were timed. The per-call bound reads only the worker's own CPU clock,
// so work handed to a helper process would pass it; an honest candidate's other processes (none,
// or the sandbox's idle init) use nothing then. Over 5 ms + 10% of the reported samples' CPU
// (threads x sample, summed) is a forgery's helper: the samples hide work done elsewhere.
struct BesideBound {
  double used_ms = 0;       // CPU the processes beside the worker used over the timed runs
  double allowance_ms = 0;  // kBesideFloorMs + kBesideFraction x threads x the samples' sum
  bool ok = true;
};
constexpr double kBesideFloorMs = 5.0;
constexpr double kBesideFraction = 0.10;
BesideBound bound_beside(double used_ms, std::span<const double> samples_ms, int threads);

// Kept and discarded samples back in call order (discarded_at: the sample numbers of the
// discarded ones). std::nullopt when the numbers do not fit (a forged reply).
std::optional<std::vector<double>> samples_in_order(std::span<const double> kept_ms,
                                                    std::span<const double> discarded_ms,
                                                    std::span<const int> discarded_at);

}  // namespace kbv
