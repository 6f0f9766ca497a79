// The parts of the timing phase (supervisor/timing_phase.h), shared between its files and used by
// nothing else: the candidate's timed run (timing_candidate.cc), its checks and their findings
// (timing_checks.cc), the baselines (timing_baseline.cc), the paired rounds (timing_paired.cc)
// and the record's timing fields (timing_phase.cc).
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/interval.h"
#include "supervisor/timing_phase.h"

namespace kbv {

using Clock = std::chrono::steady_clock;

inline std::string reply_message(const Reply& r) {
  if (r.status == Reply::Status::failed) return msg::failure_of(r.body).message;
  return r.detail.empty() ? "the worker did not answer" : r.detail;
}

// A whole timing request may take the warm-up, the time cap and a few calls beyond it.
std::chrono::milliseconds timing_timeout(const EvalOptions& o);

// The order of a timed run's asks on a worker's reply channel (msg::DrawAsk): for every call
// (warm-up first) its draw (fresh inputs only), then its start and end marks, and no other.
struct CallOrder {
  explicit CallOrder(bool fresh_draws = false) : fresh(fresh_draws), phase(fresh_draws ? 0 : 1) {}
  // 0 (a draw), 1 (a start mark) or 2 (an end mark) when `ask` is the one due now, else -1.
  int due(const nlohmann::json& ask) const;
  void served();  // the due ask was answered: the next one is due
  bool fresh;
  int phase;          // what comes next for call `calls`: 0 its draw, 1 its start, 2 its end
  int64_t calls = 0;  // calls whose end mark arrived
};

// What the supervisor saw of the candidate's calls through the asks on its reply channel: for
// every call (warm-up first) its draw (fresh inputs), then a start and an end mark around its
// interval, in that order and no other. The window of a call is the supervisor's own clock from
// its answer to the start mark to the end mark's arrival; a ping of the trusted reference
// after each end mark gives the channel's round trip under the same load; the waits for a CPU of
// the candidate worker's main thread and of the supervisor's own thread inside the window, from
// the kernel's account (util/host_load.h ThreadWait), say what a busy host put in it.
struct CallLog {
  std::optional<uint64_t> fresh_seed;
  int64_t max_calls = 0;
  int64_t draws = 0;  // draws served
  CallOrder order;
  std::vector<double> window_ms;  // per call index
  std::vector<double> waited_ms;  // per call index (-1: not known)
  std::vector<double> ping_ms;
  Clock::time_point start_answered;
  std::optional<double> waited_at_start;  // both threads' waits when the start mark was answered
  std::vector<double> cpu_ms;  // per call index: the candidate worker's CPU time inside the window (-1: not known)
  std::optional<double> cpu_at_start;  // its CPU time when the start mark was answered
  int threads = 1;  // CPUs it may run on at once (CPU timing: the budget)
  std::string draw_error, forged;
};

// A CPU baseline's round trips (TimeReferenceRequest::marks) answered in call order, as the
// candidate's are, without the candidate's bookkeeping: the reference is kbv's own.
struct BaselineMarks {
  explicit BaselineMarks(bool fresh_draws) : order(fresh_draws) {}
  nlohmann::json answer(const nlohmann::json& ask);
  CallOrder order;
};

// The candidate's timed run as the supervisor saw it.
struct CandidateRun {
  Reply reply;
  bool arrived_ok = false;  // the reply came as "ok", before reading it (a malformed one is then forged: T14)
  std::optional<msg::TimeReply> timed;
  double supervisor_ms = 0;
  double others = -1;  // cores other processes used meanwhile (-1: unknown: GPU, or /proc unreadable)
  // CPU ms the processes beside the candidate's worker used meanwhile (util/host_load.h BesideCpu;
  // CPU timing only, -1: unknown)
  double beside_cpu_ms = -1;
  // CPU timing: the CPUs the reference drew on meanwhile, outside the budget ("": it stayed on it)
  std::string draw_cpus;
  CallLog log;
};

// The candidate's timed run (op time_candidate), its asks on the reply channel served meanwhile.
// `baseline_mode`: the run is the baselines' twin timing that mode (TimeCandidateRequest::baseline_mode).
CandidateRun run_candidate(const EvalOptions& options, const Environment& env, WorkerProcess& reference,
                           WorkerProcess& candidate, const msg::TimeInputsReply& sets, SeedSource& spot_seeds,
                           const std::string& baseline_mode = "");
// Empty when the run can be judged; else why not, with the finding it earned in the record.
std::string run_failure(Record& record, const CandidateRun& run, const std::string& reject);

// The candidate's part is over. Its worker and everything in its process group go before the
// baselines and the device calibration are timed (T17): a thread, process or kernel it left
// running would slow the denominator, and a cached baseline every later evaluation of the problem.
void stop_candidate(Record& record, WorkerProcess& candidate);
// T21: the reference's threads scheduled as kbv's own (affinity, nice, policy) before they time
// the baselines; what a candidate changed is set back and said. False: something could not be set
// back, and the baselines it times are not cached.
bool restore_reference(Record& record, WorkerProcess& reference);

// The calls the candidate reports against the asks the supervisor served (T14), and the samples'
// sum against the supervisor's clock around the whole request (T4).
void check_call_counts(Record& record, nlohmann::json& timing, const CandidateRun& run, const Stats& cs,
                       const TimingProtocol& tp, const std::string& reject);

// Every sample against its call's outside window (measure/call_bound.h, T22).
// The calls the per-call bound looks at: every timed sample in call order with its outside window,
// and the round trips meanwhile. Paired blocks add theirs to one set, judged once over all of them
// (a block of 3 calls with 2 preempted on a busy host is not half of a run's calls).
struct CallBoundCalls {
  std::vector<double> samples, windows, pings, waits, cpu;
  int threads = 1;
  // Summed over the runs (CandidateRun::beside_cpu_ms); nullopt once any run's is unknown.
  std::optional<double> beside_cpu_ms = 0.0;
};

// Adds `run`'s calls to `calls`; false (and the T14 finding) when its discarded samples are forged.
bool add_call_bound_calls(Record& record, CallBoundCalls& calls, const CandidateRun& run, const TimingProtocol& tp,
                          const std::string& reject);
// False when the bound could not be judged (CallBound::judged): the calls fell short by what the
// host kept their threads waiting for a CPU; said in the record, and under the kbv protocols no
// speedup is claimed (the caller ends the timing with timing.error = unjudged_call_bound_error).
bool judge_call_bound(Record& record, nlohmann::json& timing, const CallBoundCalls& calls, const TimingProtocol& tp,
                      bool cuda, const std::string& reject);
bool check_call_bound(Record& record, nlohmann::json& timing, const CandidateRun& run, const TimingProtocol& tp,
                      bool cuda, const std::string& reject);
extern const char* const unjudged_call_bound_error;
void note_event_mismatches(Record& record, nlohmann::json& timing, const msg::TimeReply& cr, const Stats& cs);
// Spot checks of the timed calls' outputs, judged by the reference on its expected outputs (fresh
// draws: on its recomputation of a secret choice of spot_draws calls).
void spot_check_calls(Record& record, nlohmann::json& timing, const CandidateRun& run, const Stats& cs,
                      const EvalOptions& options, WorkerProcess& reference, SeedSource& spot_seeds,
                      const std::string& reject);
// CPU thread parity (docs/TIMING.md "Thread parity"): the candidate was pinned to the budget's CPUs
// before it ran, and the baselines get the same. A thread of its worker's process group whose
// affinity is wider (or other) after its timing escaped the budget (T25): under the sandbox seccomp
// refuses sched_setaffinity, so this holds where that layer is missing (--sandbox off). Recorded as
// `timing.threads` and `timing.cpus` when the budget held, and `timing.draw_cpus` when the
// reference drew away from it meanwhile.
void check_thread_budget(Record& record, nlohmann::json& timing, const EvalOptions& options, const Environment& env,
                         const WorkerProcess& reference, WorkerProcess& candidate, const CandidateRun& run,
                         const std::string& reject);
// T20: cached figures that failed their seal, measured again; one warning for them all.
void note_cache_refused(Record& record, const std::vector<std::string>& refused);
// Baselines, cached per problem content, device, versions and protocol (`cacheable`: the reference
// is as kbv spawned it). A cache entry refused is added to `cache_refused`.
void time_baselines(nlohmann::json& timing, const Pair& pair, const EvalOptions& options, const Environment& env,
                    WorkerProcess& reference, const Stats& cs, const std::vector<double>& candidate_ms, bool cacheable,
                    std::vector<std::string>& cache_refused);
// Paired rounds (docs/TIMING.md, "Speedup intervals"): per baseline, rounds set aside as stalled
// (timing_round_stalled), too few kept rounds for a speedup (timing_too_few_rounds), a ratio that
// trends through the run (timing_rounds_drift) and rounds whose ratios scatter past
// kRoundRules.rounds_disagree (timing_rounds_disagree), each one warning for every baseline.
void note_paired_rounds(Record& record, const std::map<std::string, PairedSpeedup>& by_mode, int pairs);
// CPU: other processes holding a core slow every parallel region (util/host_load.h). Said, and
// such a baseline was not cached.
void note_host_busy(Record& record, const nlohmann::json& timing, double candidate_others);
// The physical floor: inputs read once, outputs written once, at the measured copy bandwidth.
void check_floor(Record& record, nlohmann::json& timing, const msg::TimeInputsReply& sets, const Stats& cs,
                 const EvalOptions& options, const Environment& env, WorkerProcess& reference,
                 const std::string& reject, std::vector<std::string>& cache_refused);
// How sampling went, the clock, the flush and the hold, from the candidate's reply.
void describe_run(nlohmann::json& timing, const msg::TimeReply& cr);
// The record's runtime and runtime_stats (KernelBench's fields) from the candidate's STATS.
void set_runtime(Record& record, const Stats& cs, const Environment& env, const TimingProtocol& tp);
// Ends the timing ops' state in the workers (their inputs and buffers).
void release_both(const EvalOptions& options, WorkerProcess& reference, WorkerProcess* candidate);
// The candidate's short calls were not judged (judge_call_bound false): the timing ends with
// timing.error = unjudged_call_bound_error and no speedup; the candidate was already stopped.
void end_unjudged(Record& record, nlohmann::json& timing, const EvalOptions& options, WorkerProcess& reference);

// Paired rounds (timing.pairs > 0, docs/TIMING.md "Paired rounds"): every round a block of each
// baseline and a block of the candidate, baselines first in even rounds and the candidate first in
// odd ones (B A A B B A ...), each block under its share of the stop rule (block_rule). Every
// candidate block is checked as an unpaired run is (counts, wall, call bound, spot checks). While a
// baseline block runs the candidate's worker and everything it started are stopped (SIGSTOP:
// WorkerProcess::freeze) and the reference's scheduling is set back first (T17, T21). Baselines
// are measured, never read from or written to the cache; with a twin, its blocks time the fp32 and
// tf32 baselines (the candidate frozen all the same), and the reference only compile's.
void timing_paired(Record& record, const EvalOptions& options, const Environment& env,
                   WorkerProcess& reference, WorkerProcess& candidate, const BaselineTwin& twin,
                   const msg::TimeInputsReply& sets, SeedSource& spot_seeds, const std::string& reject);

}  // namespace kbv
