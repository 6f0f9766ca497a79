// The timing phase of one evaluation (supervisor/timing_phase.h): the unpaired run and its checks
// in order (paired rounds: timing_paired.cc), the record's timing and runtime fields, the summary line.
#include "supervisor/timing_phase.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "measure/statistic.h"
#include "record/trust.h"
#include "supervisor/timing_parts.h"
#include "util/clock.h"
#include "util/interrupt.h"
#include "util/pause.h"

namespace kbv {
using nlohmann::json;

std::string timing_summary(const Record& record) {
  if (!record.timing) return "";
  const Timing& t = *record.timing;
  if (t.error) return "not timed: " + *t.error;
  const TimedStats c = t.candidate.value_or(TimedStats{});
  const std::string stat = runtime_statistic(record.runtime_stats);
  std::string line = fmt::format("time {:.4g} ms ({} of {}, rse {:.2f}%, {})",
                                 (stat == kStatisticMean ? c.mean_ms : c.median_ms).value_or(0.0), stat,
                                 c.samples.value_or(0), 100 * c.rse.value_or(0.0), t.method.value_or(""));
  if (std::string sp = speedups_text(t); !sp.empty()) line += "; speedup " + sp;
  if (t.pairs) line += fmt::format("; {} paired rounds", *t.pairs);
  if (t.speed_of_light) line += fmt::format("; {:.1f}% of the speed of light", 100 * *t.speed_of_light);
  if (std::vector<std::string> w = timing_warning_labels(record); !w.empty())
    line += fmt::format("; timing warnings: {}", fmt::join(w, ", "));
  return line;
}

// How sampling went, the clock, the flush and the hold, from the candidate's reply.
void describe_run(json& timing, const msg::TimeReply& cr) {
  if (cr.inputs.value_or("") == "fresh")
    timing["inputs"] = "fresh";
  else
    timing["input_sets"] = cr.sets.value_or(0);
  timing["stop"] = cr.stop;
  timing["sampling_s"] = cr.sampling_s;
  timing["clock"] = {{"source", cr.clock_source},
                     {"expected_sm_mhz", cr.expected_mhz},
                     {"sm_mhz_min", cr.sm_mhz_min},
                     {"sm_mhz_max", cr.sm_mhz_max},
                     {"mem_mhz_min", cr.mem_mhz_min},
                     {"mem_mhz_max", cr.mem_mhz_max},
                     {"reasons_seen", cr.clock_reasons_seen},
                     {"throttled_kept", cr.throttled_kept}};
  timing["flush_bytes"] = cr.flush_bytes;
  if (const double us = cr.launch_hold_us; us > 0)
    timing["launch_hold"] = {{"us", us}, {"held_ms", cr.launch_hold_held_ms}, {"late", cr.launch_hold_late}};
  timing["sync_overhead_ms"] = cr.sync_overhead_ms;
}

void set_runtime(Record& record, const Stats& cs, const Environment& env, const TimingProtocol& tp) {
  if (cs.samples <= 0) return;
  record.runtime = statistic_ms(cs, tp.statistic);  // the protocol's statistic: median (kbv) or mean
  record.runtime_stats = runtime_stats_json(cs, tp, env.device_name, env.device == "cuda" ? "cuda:0" : "cpu");
}

void release_both(const EvalOptions& options, WorkerProcess& reference, WorkerProcess* candidate) {
  reference.call(msg::to_json(msg::TimeReleaseRequest{}), ms(options.timeouts.reference_s));
  if (candidate) candidate->call(msg::to_json(msg::TimeReleaseRequest{}), ms(options.timeouts.call_s));
}

void end_unjudged(Record& record, json& timing, const EvalOptions& options, WorkerProcess& reference) {
  timing["error"] = unjudged_call_bound_error;
  record.timing = timing_from_json(timing);
  release_both(options, reference, nullptr);
  reject_on_findings(record);
}

void timing_phase_checked(Record& record, const Pair& pair, const EvalOptions& options, const Environment& env,
                          WorkerProcess& reference, WorkerProcess& candidate, const BaselineTwin& twin);

bool wants_baseline_twin(const EvalOptions& options, const Environment& env) {
  const TimingProtocol& tp = options.protocol.timing;
  if (env.device == "cuda" || !tp.enabled || tp.pairs <= 0 || tp.baseline_worker != "twin") return false;
  return std::any_of(tp.baselines.begin(), tp.baselines.end(), [](const std::string& m) { return m != "compile"; });
}

void timing_phase(Record& record, const Pair& pair, const EvalOptions& options, const Environment& env,
                  WorkerProcess& reference, WorkerProcess& candidate, const BaselineTwin& twin) {
  // CPU: the builds this kbv runs ahead of later evaluations (compile/queue.h) would load the
  // cores being timed; they are stopped meanwhile (util/pause.h) and the record says how many.
  std::optional<PauseHold> hold;
  if (env.device == "cpu") hold.emplace();
  // The candidate worker's reply is a claim from hostile code: a malformed one is a forged one.
  try {
    timing_phase_checked(record, pair, options, env, reference, candidate, twin);
  } catch (const json::exception& e) {
    record.timing = Timing{};
    record.timing->error = std::string("malformed timing reply: ") + e.what();
    record.findings.push_back(make_finding("timing_mismatch", options.protocol.extra_checks,
                                         std::string("the candidate worker's timing reply is malformed (") + e.what() +
                                             "): the reporting channel was tampered with",
                                         "timing reply", "T14"));
    reject_on_findings(record);
    release_both(options, reference, &candidate);
  }
  if (hold && record.timing)
    if (const int n = hold->stopped(); n > 0) record.timing->unknown.extra["builds_stopped"] = n;
}

void timing_phase_checked(Record& record, const Pair& pair, const EvalOptions& options, const Environment& env,
                          WorkerProcess& reference, WorkerProcess& candidate, const BaselineTwin& twin) {
  // The upstream protocols reproduce upstream, which has none of these checks: they only warn.
  const std::string reject = options.protocol.extra_checks;
  json timing = json::object();
  auto give_up = [&](const std::string& why) {
    timing["error"] = why;
    record.timing = timing_from_json(timing);
    release_both(options, reference, &candidate);
  };
  std::string error;
  std::optional<msg::TimeInputsReply> sets = draw_timing_inputs(reference, options, error);
  if (!sets) return give_up(error);
  if (interrupted()) return give_up("interrupted");
  SeedSource spot_seeds(options.protocol.seed ? std::optional<uint64_t>(*options.protocol.seed ^ 0x73706f74ULL)
                                              : std::nullopt);
  if (options.protocol.timing.pairs > 0)
    return timing_paired(record, options, env, reference, candidate, twin, *sets, spot_seeds, reject);
  CandidateRun run = run_candidate(options, env, reference, candidate, *sets, spot_seeds);
  if (std::string why = run_failure(record, run, reject); !why.empty()) return give_up(why);
  const msg::TimeReply& cr = *run.timed;
  const Stats cs = stats_of_reply(cr);
  timing["method"] = cr.method;
  timing["candidate"] = cs.to_json();
  if (run.others >= 0) timing["candidate"]["host_other_cores"] = std::round(run.others * 100) / 100;
  check_call_counts(record, timing, run, cs, options.protocol.timing, reject);
  const bool claim = check_call_bound(record, timing, run, options.protocol.timing, env.device == "cuda", reject);
  note_event_mismatches(record, timing, cr, cs);
  spot_check_calls(record, timing, run, cs, options, reference, spot_seeds, reject);
  check_thread_budget(record, timing, options, env, reference, candidate, run, reject);
  stop_candidate(record, candidate);
  const bool cacheable = restore_reference(record, reference);
  if (!claim) return end_unjudged(record, timing, options, reference);  // no speedup: see judge_call_bound
  std::vector<std::string> cache_refused;
  time_baselines(timing, pair, options, env, reference, cs, cr.samples_ms, cacheable, cache_refused);
  note_host_busy(record, timing, run.others);
  check_floor(record, timing, *sets, cs, options, env, reference, reject, cache_refused);
  note_cache_refused(record, cache_refused);
  describe_run(timing, cr);
  record.timing = timing_from_json(timing);
  set_runtime(record, cs, env, options.protocol.timing);
  release_both(options, reference, nullptr);
  reject_on_findings(record);
}

}  // namespace kbv
