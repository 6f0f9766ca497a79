// The checks of a candidate's timed run and the findings they earn: call counts and the wall
// check (T14, T4), the per-call bound (T22), events against the host clock (T1), spot checks of
// timed outputs (T5, T23), the CPU thread budget (T25), a busy host, the physical floor (T15) and
// refused cache entries (T20).
#include <algorithm>
#include <random>
#include <set>

#include <fmt/format.h>

#include "measure/call_bound.h"
#include "supervisor/timing_parts.h"
#include "util/clock.h"
#include "util/host_load.h"
#include "util/sched.h"

namespace kbv {
using nlohmann::json;

namespace {

// A kernel can move bytes somewhat faster than the measured copy (a copy reaches 85-90% of the
// peak bandwidth): only a median below this fraction of the floor is impossible.
constexpr double kFloorMargin = 0.8;

double sum_of(const json& a) {
  double s = 0;
  if (a.is_array())
    for (const auto& x : a) s += x.is_number() ? x.get<double>() : 0.0;
  return s;
}

// The call a spot entry names (its "set": warm-up calls first), if it names one.
std::optional<int64_t> entry_call(const json& e) {
  if (e.is_object() && e.contains("set") && e["set"].is_number_integer()) return e["set"].get<int64_t>();
  return std::nullopt;
}

// Consistency of the spot entries with the timed calls the candidate reported: every entry names
// its call's index (warm-up calls first: sample s is call warmup + s), and each of the first
// `want` timed calls has entries. Empty when consistent, else what is wrong.
std::string spot_entries_problem(const json& entries, int calls, int warmup, int want) {
  std::set<int64_t> samples;
  for (const auto& e : entries) {
    if (!e.is_object() || !e.contains("sample") || !e["sample"].is_number_integer() || !e.contains("set") ||
        !e["set"].is_number_integer())
      return "a spot entry without an integer sample and set: " + e.dump().substr(0, 200);
    int64_t sample = e["sample"].get<int64_t>(), set = e["set"].get<int64_t>();
    if (sample < 0 || sample >= calls || set != warmup + sample)
      return fmt::format("a spot entry for timed call {} names the inputs of call {}; that call ran on those of "
                         "call {}",
                         sample, set, warmup + sample);
    samples.insert(sample);
  }
  if (static_cast<int>(samples.size()) < want)
    return fmt::format("spot entries cover {} of the first {} timed calls", samples.size(), want);
  return "";
}

// Of the calls the entries name, the secret subset the reference recomputes (chosen now, after
// the calls: the candidate cannot know which while it runs).
json choose_recomputed(const json& entries, int spot_draws, SeedSource& spot_seeds, int& calls_named, int& chosen_n) {
  std::vector<int64_t> calls;
  for (const auto& e : entries)
    if (std::optional<int64_t> call = entry_call(e)) calls.push_back(*call);
  std::sort(calls.begin(), calls.end());
  calls.erase(std::unique(calls.begin(), calls.end()), calls.end());
  calls_named = static_cast<int>(calls.size());
  std::mt19937_64 pick(spot_seeds.next());
  std::shuffle(calls.begin(), calls.end(), pick);
  if (static_cast<int>(calls.size()) > spot_draws) calls.resize(static_cast<size_t>(std::max(spot_draws, 0)));
  std::set<int64_t> chosen(calls.begin(), calls.end());
  chosen_n = static_cast<int>(chosen.size());
  json subset = json::array();
  for (const auto& e : entries) {
    std::optional<int64_t> call = entry_call(e);
    if (!call || chosen.count(*call)) subset.push_back(e);  // malformed entries are passed on, to fail there
  }
  return subset;
}

}  // namespace

// The calls the candidate reports against the asks the supervisor served (T14), and the samples'
// sum against the supervisor's clock around the whole request (T4).
void check_call_counts(Record& record, json& timing, const CandidateRun& run, const Stats& cs, const TimingProtocol& tp,
                       const std::string& reject) {
  const int64_t reported = int64_t{tp.rule.warmup} + cs.samples + cs.discarded;
  const bool fresh = run.log.fresh_seed.has_value();
  // The counts below are what the supervisor itself served and marked: no honest worker reports
  // another, so a mismatch rejects under every protocol, as the fixed-call count does; `reject`
  // (an upstream protocol's "warn") is for the checks an honest run on a noisy host could trip.
  if (fresh && run.log.draws != reported)
    record.findings.push_back(make_finding(
        "timing_mismatch", "reject",
        fmt::format("the candidate worker reported {} warm-up and timed calls but asked for {} fresh draws: the "
                    "reported calls are forged",
                    reported, run.log.draws),
        "timing.draws", "T14"));
  else if (run.log.order.calls != reported)
    record.findings.push_back(make_finding(
        "timing_mismatch", "reject",
        fmt::format("the candidate worker reported {} warm-up and timed calls but marked {}: the reported calls are "
                    "forged",
                    reported, run.log.order.calls),
        "timing.call_bound", "T14"));
  // A protocol that fixes the timed calls (kernelbench-verified: 100) stops at exactly that many kept
  // samples (measure.cc should_stop): fewer or more is a loop the candidate cut short or padded. It
  // rejects under every protocol, the upstream ones included (their other checks only warn): no
  // honest run reports another count, and the runtime of another count is not the protocol's
  // (examples/level1/19_ReLU/cpu_fixed_loop_short.py, cpu_fixed_loop_long.py).
  if (tp.rule.calls > 0 && cs.samples != tp.rule.calls)
    record.findings.push_back(make_finding(
        "timing_mismatch", "reject",
        fmt::format("the protocol fixes {} timed calls but the candidate worker reported {}: the reported calls are "
                    "forged",
                    tp.rule.calls, cs.samples),
        "timing.rule.calls", "T14"));
  if (fresh) timing["draws"] = run.log.draws;
  // The samples cannot add up to more than the supervisor saw the whole request take.
  const msg::TimeReply& cr = *run.timed;
  const double reported_ms = sum_of(cr.samples_ms) + sum_of(cr.discarded_ms);
  const bool wall_ok = reported_ms <= run.supervisor_ms && cs.samples > 0;
  timing["wall_check"] = {{"supervisor_ms", run.supervisor_ms}, {"reported_sum_ms", reported_ms}, {"ok", wall_ok}};
  if (!wall_ok)
    record.findings.push_back(make_finding(
        "timing_mismatch", reject,
        cs.samples == 0 ? "the candidate worker reported no timing samples"
                        : fmt::format("the candidate worker reported samples adding up to {:.3f} ms, but the whole "
                                      "timing request took {:.3f} ms by the supervisor's clock: the reported times "
                                      "are forged",
                                      reported_ms, run.supervisor_ms),
        "timing.wall_check", "T4"));
}


// Adds `run`'s calls to `calls`; false (and the T14 finding) when its discarded samples are forged.
bool add_call_bound_calls(Record& record, CallBoundCalls& calls, const CandidateRun& run, const TimingProtocol& tp,
                          const std::string& reject) {
  const msg::TimeReply& cr = *run.timed;
  std::optional<std::vector<double>> samples = samples_in_order(cr.samples_ms, cr.discarded_ms, cr.discarded_at);
  if (!samples) {
    record.findings.push_back(make_finding("timing_mismatch", reject,
                                           fmt::format("the candidate worker named {} discarded samples at {} places: "
                                                       "the reply is forged",
                                                       cr.discarded_ms.size(), cr.discarded_at.size()),
                                           "timing.discarded_at", "T14"));
    return false;
  }
  for (size_t s = 0; s < samples->size(); ++s) {
    const size_t call = static_cast<size_t>(tp.rule.warmup) + s;
    calls.samples.push_back((*samples)[s]);
    calls.windows.push_back(call < run.log.window_ms.size() ? run.log.window_ms[call] : -1.0);
    calls.waits.push_back(call < run.log.waited_ms.size() ? run.log.waited_ms[call] : -1.0);
    calls.cpu.push_back(call < run.log.cpu_ms.size() ? run.log.cpu_ms[call] : -1.0);
  }
  calls.threads = std::max(calls.threads, run.log.threads);
  if (calls.beside_cpu_ms && run.beside_cpu_ms >= 0)
    *calls.beside_cpu_ms += run.beside_cpu_ms;
  else
    calls.beside_cpu_ms.reset();
  calls.pings.insert(calls.pings.end(), run.log.ping_ms.begin(), run.log.ping_ms.end());
  return true;
}

const char* const unjudged_call_bound_error =
    "the per-call outside bound could not be judged on this busy host: no speedup is claimed";

bool judge_call_bound(Record& record, json& timing, const CallBoundCalls& calls, const TimingProtocol& tp, bool cuda,
                      const std::string& reject) {
  // GPU: the launch hold runs inside every window and outside every sample (its length in SM
  // cycles at the warm-up's clock: 10% over the protocol's microseconds covers a slower clock).
  const double held_ms = cuda ? 1.1 * tp.launch_hold_us / 1000.0 : 0.0;
  const CallBound b = bound_calls(calls.samples, calls.windows, calls.pings, held_ms, calls.waits);
  timing["call_bound"] = b.to_json();
  const CpuBound c = bound_cpu(calls.samples, calls.cpu, calls.threads);
  if (c.checked > 0) {
    timing["call_bound"]["cpu"] = c.to_json();
    // Waiting is not CPU time: a busy host cannot explain this one, so it is judged whatever the
    // wall-clock bound found.
    if (!c.ok)
      record.findings.push_back(make_finding(
          "timing_mismatch", reject,
          fmt::format("in {} of {} timed calls the candidate's worker used more CPU time between the call's start "
                      "and end marks than its reported sample allows ({} CPU(s) x the sample + {:.3f} ms at the "
                      "median sample): e.g. "
                      "sample {} reported {:.4f} ms while the process used {:.4f} ms of CPU (the kernel's account); "
                      "the worker's clock was rewritten, the samples are forged, or other threads computed "
                      "meanwhile",
                      c.over_calls, c.checked, c.threads, c.allowance_ms, c.worst_sample, c.worst_sample_ms,
                      c.worst_cpu_ms),
          "timing.call_bound.cpu", "T22"));
    if (calls.beside_cpu_ms) {
      const BesideBound h = bound_beside(*calls.beside_cpu_ms, calls.samples, calls.threads);
      json& j = timing["call_bound"]["cpu"];
      j["beside_ms"] = h.used_ms;
      j["beside_allowance_ms"] = h.allowance_ms;
      j["beside_ok"] = h.ok;
      if (!h.ok)
        record.findings.push_back(make_finding(
            "timing_mismatch", reject,
            fmt::format("other processes of the candidate (its worker's process group or PID namespace) used {:.1f} ms "
                        "of CPU time while its calls were timed, more than {:.1f} ms ({:.0f} ms + {:.0f}% of the {} "
                        "samples' reported CPU): work done in a helper process is hidden from the per-call CPU bound, "
                        "so the samples do not show what the calls cost",
                        h.used_ms, h.allowance_ms, kBesideFloorMs, 100 * kBesideFraction, calls.samples.size()),
            "timing.call_bound.cpu.beside_ms", "T22"));
    }
  }
  if (b.ok) return true;
  if (!b.judged) {
    // Not a forgery that can be shown, not an honest run that can be timed: the windows held
    // waits for a CPU (another process's, or the candidate's own threads': the kernel does not
    // say whose), so no sample can be held to its window. Said; the caller claims no speedup.
    record.findings.push_back(make_finding(
        "timing_host_busy", "warn",
        fmt::format("{} of {} timed calls reported a sample shorter than the supervisor's own clock allows, {} of them "
                    "by no more than the candidate's worker and the supervisor waited for a CPU meanwhile (median "
                    "{:.3f} ms): the per-call outside bound (T22) cannot tell a busy host from a rewritten clock, so "
                    "{}; time again on an idle host (docs/TIMING.md)",
                    b.short_calls, b.checked, b.waited_calls, b.waited_ms,
                    reject == "reject" ? "no speedup is claimed"
                                       : "the speedup stands only because the upstream protocol has no such check"),
        "timing.call_bound", ""));
    return reject != "reject";  // the upstream protocols only warn: their speedup stands, as upstream's would
  }
  record.findings.push_back(make_finding(
      "timing_mismatch", reject,
      fmt::format("{} of {} timed calls reported a sample shorter than the supervisor's own clock allows (the time "
                  "between the call's start and end marks less {:.3f} ms for the round trip and the waits for a CPU "
                  "meanwhile): e.g. sample {} reported {:.4f} ms where the supervisor saw {:.4f} ms; the worker's "
                  "clock was rewritten or the samples are forged",
                  b.short_calls - b.waited_calls, b.checked, b.allowance_ms, b.worst_sample, b.worst_sample_ms,
                  b.worst_window_ms),
      "timing.call_bound", "T22"));
  return true;
}

bool check_call_bound(Record& record, json& timing, const CandidateRun& run, const TimingProtocol& tp, bool cuda,
                      const std::string& reject) {
  CallBoundCalls calls;
  if (!add_call_bound_calls(record, calls, run, tp, reject)) return true;
  return judge_call_bound(record, timing, calls, tp, cuda, reject);
}

void note_event_mismatches(Record& record, json& timing, const msg::TimeReply& cr, const Stats& cs) {
  timing["events_host_disagreed"] = cr.mismatches;
  if (cr.mismatches > 0)
    record.findings.push_back(make_finding(
        "timing_mismatch", "warn",
        fmt::format("in {} of {} timed calls the device finished up to {:.3f} ms after the events on the calling "
                    "stream said (work on another stream or thread); {}",
                    cr.mismatches, cs.samples + cs.discarded, cr.max_mismatch_ms,
                    cr.sample_clock == "events" ? "the event times were kept, as upstream's loop keeps them"
                                                : "the host clock around a full device synchronisation was used for those"),
        "cuda events vs host clock", "T1"));
}

// Spot checks of the timed calls' outputs, judged by the reference on its expected outputs (fresh
// draws: on its recomputation of a secret choice of spot_draws calls).
void spot_check_calls(Record& record, json& timing, const CandidateRun& run, const Stats& cs, const EvalOptions& options,
                      WorkerProcess& reference, SeedSource& spot_seeds, const std::string& reject) {
  const TimingProtocol& tp = options.protocol.timing;
  const json entries = run.timed->spot.value_or(json::array());
  msg::SpotCheckRequest sc_req;
  sc_req.entries = entries;
  sc_req.atol = options.protocol.atol;
  sc_req.rtol = options.protocol.rtol;
  int spot_calls = 0, spot_calls_checked = 0;
  const std::optional<uint64_t> fresh_seed = run.log.fresh_seed;
  if (fresh_seed) {
    sc_req.entries = choose_recomputed(entries, tp.spot_draws, spot_seeds, spot_calls, spot_calls_checked);
    sc_req.fresh_seed = *fresh_seed;
  }
  Reply sc = reference.call(msg::to_json(sc_req), ms(options.timeouts.reference_s * (fresh_seed ? 1 + tp.spot_draws : 1)));
  std::optional<msg::SpotCheckReply> spot = reply_as<msg::SpotCheckReply>(sc);
  // Outputs with no elements have no positions to check.
  const bool has_elements = !spot || spot->expected_numel > 0;
  // The warm-up count is the supervisor's own rule, not what the candidate's worker says it did.
  // Every timed call has entries (spot_max_calls 0, the default), or the first spot_max_calls.
  const int calls = cs.samples + cs.discarded;
  const int want = !has_elements ? 0 : tp.spot_max_calls > 0 ? std::min(calls, tp.spot_max_calls) : calls;
  const std::string inconsistent = spot_entries_problem(entries, calls, tp.rule.warmup, want);
  if (!inconsistent.empty())
    record.findings.push_back(make_finding("spot_check_failed", reject,
                                         "the candidate worker's spot checks do not match its timed calls: " +
                                             inconsistent,
                                         "outputs of timed calls", "T5"));
  if (!spot) {
    timing["spot_checks"] = {{"error", reply_message(sc)}};
    return;
  }
  timing["spot_checks"] = {{"checked", spot->checked}, {"failed", spot->failed}};
  if (fresh_seed) {
    timing["spot_checks"]["calls"] = spot_calls;
    timing["spot_checks"]["calls_recomputed"] = spot_calls_checked;
  }
  if (spot->failed > 0)
    record.findings.push_back(make_finding("spot_check_failed", reject,
                                         fmt::format("{} of {} spot-checked values of timed calls were wrong: {}",
                                                     spot->failed, spot->checked, spot->first_failure),
                                         "outputs of timed calls", "T5"));
  else if (entries.empty() && spot->expected_numel > 0)
    record.findings.push_back(make_finding("spot_check_failed", reject,
                                         "the candidate worker reported no output values of its timed calls",
                                         "outputs of timed calls", "T5"));
}

// CPU thread parity (docs/TIMING.md "Thread parity"): the candidate was pinned to the budget's CPUs
// before it ran, and the baselines get the same. A thread of its worker's process group whose
// affinity is wider (or other) after its timing escaped the budget (T25): under the sandbox seccomp
// refuses sched_setaffinity, so this holds where that layer is missing (--sandbox off). Recorded as
// `timing.threads` and `timing.cpus` when the budget held, and `timing.draw_cpus` when the
// reference drew away from it meanwhile.
void check_thread_budget(Record& record, json& timing, const EvalOptions& options, const Environment& env,
                         const WorkerProcess& reference, WorkerProcess& candidate, const CandidateRun& run,
                         const std::string& reject) {
  if (env.device == "cuda" || candidate.cpus().empty()) return;
  const msg::TimeReply& cr = *run.timed;
  if (cr.threads) timing["candidate"]["threads"] = *cr.threads;  // its worker's claim
  if (cr.cpus) timing["candidate"]["cpus"] = *cr.cpus;
  const std::vector<SchedulingDrift> wide = affinity_outside(candidate.pid(), candidate.cpus());
  if (wide.empty() && reference.cpus() == candidate.cpus()) {
    timing["threads"] = options.cpu.threads;
    timing["cpus"] = cpu_list_text(candidate.cpus());
    if (!run.draw_cpus.empty()) timing["draw_cpus"] = run.draw_cpus;
    return;
  }
  if (wide.empty()) return;  // the reference could not be pinned (cpu_budget_not_applied)
  std::string list;
  for (size_t i = 0; i < wide.size() && i < 8; ++i) list += fmt::format("{}thread {} {}", i ? "; " : "", wide[i].tid, wide[i].what);
  if (wide.size() > 8) list += fmt::format("; {} more", wide.size() - 8);
  record.findings.push_back(make_finding(
      "thread_budget_escaped", reject,
      fmt::format("the candidate's threads left the CPU thread budget kbv gave it and its baselines ({} of CPUs {}): "
                  "{}; its time may use more cores than the baselines had",
                  options.cpu.threads, cpu_list_text(candidate.cpus()), list),
      "/proc/<candidate>/task/*: affinity after timing", "T25"));
}

// T20: cached figures that failed their seal, measured again; one warning for them all.
void note_cache_refused(Record& record, const std::vector<std::string>& refused) {
  if (refused.empty()) return;
  std::string what;
  for (const auto& entry : refused) what += (what.empty() ? "" : "; ") + entry;
  record.findings.push_back(make_finding(
      "cache_entry_refused", "warn",
      "cached figures failed their seal check and were measured again (something other than kbv wrote them): " + what,
      "sealed cache entries (CACHE/.seal-key)", "T20"));
}

void note_paired_rounds(Record& record, const std::map<std::string, PairedSpeedup>& by_mode, int pairs) {
  std::string stalled, few, disagree, drifted;
  auto add = [](std::string& to, const std::string& what) { to += (to.empty() ? "" : "; ") + what; };
  for (const auto& [mode, ps] : by_mode) {
    std::vector<double> sorted = ps.ratios;
    const double mid = median_in_place(sorted);
    for (int r : ps.stalled) {
      const size_t i = static_cast<size_t>(std::find(ps.rounds.begin(), ps.rounds.end(), r) - ps.rounds.begin());
      if (i >= ps.rounds.size()) continue;
      add(stalled, fmt::format("{} round {}: ratio {:.3g}x against the rounds' median {:.3g}x (its {} block {:.4g} ms, "
                               "the candidate's {:.4g} ms)",
                               mode, r, ps.ratios[i], mid, mode, ps.baseline_ms[i], ps.candidate_ms[i]));
    }
    if (ps.interval && ps.drift != 0)
      add(drifted, fmt::format("{}: {:+.1f}% from the first kept round to the last (about {:.3g}x to {:.3g}x)", mode,
                               100 * ps.drift, ps.drift_ends.first, ps.drift_ends.second));
    if (!ps.interval)
      add(few, fmt::format("{}: {} of {} rounds usable{}", mode, ps.kept(), pairs,
                           ps.stalled.empty() ? "" : fmt::format(" ({} set aside as stalled)", ps.stalled.size())));
    else if (ps.spread > kRoundRules.rounds_disagree) {
      const auto [lo, hi] = std::minmax_element(ps.ratios.begin(), ps.ratios.end());
      add(disagree, fmt::format("{}: {:.0f}% (ratios {:.3g}x to {:.3g}x over {} rounds)", mode, 100 * ps.spread, *lo,
                                *hi, ps.ratios.size()));
    }
  }
  // Not cheats: the host. One warning per rule, naming every baseline it concerns.
  auto warn = [&](const char* rule, const std::string& what, const std::string& message) {
    if (!what.empty())
      record.findings.push_back(
          make_finding(rule, "warn", message, "timing.rounds: each round's baseline over candidate ratio", ""));
  };
  warn("timing_round_stalled", stalled,
       "paired rounds set aside from the speedup and its interval (" + stalled +
           "): one of the round's blocks stalled (the host took its cores), so the round says nothing about the "
           "kernels; the speedup is over the other rounds (docs/TIMING.md, \"Speedup intervals\")");
  warn("timing_too_few_rounds", few,
       fmt::format("too few paired rounds for an interval ({}; at least {}): no speedup is claimed for these "
                   "baselines (timing.speedup_pooled has the pooled ratio); time again with more rounds "
                   "(--timing-pairs) on a quieter host",
                   few, kRoundRules.min_claim_rounds));
  warn("timing_rounds_drift", drifted,
       "the paired rounds' ratio moved one way through the run (" + drifted +
           "): the load beside kbv shifted between the two sides' cores, so the rounds are not draws of one "
           "ratio; the interval spans the trend (docs/TIMING.md, \"Speedup intervals\")");
  warn("timing_rounds_disagree", disagree,
       fmt::format("the paired rounds' ratios scatter more than {:.0f}% (geometric SD; {}): the load beside kbv "
                   "changed between a round's blocks, so the interval is wide and may say no measurable difference "
                   "where a quieter host would tell",
                   100 * kRoundRules.rounds_disagree, disagree));
}

// CPU: other processes holding a core slow every parallel region (util/host_load.h). Said, and
// such a baseline was not cached.
void note_host_busy(Record& record, const json& timing, double candidate_others) {
  std::vector<std::string> busy;
  const double busy_cores = host_busy_cores();
  if (candidate_others >= busy_cores)
    busy.push_back(fmt::format("{:.2f} while the candidate was timed", candidate_others));
  for (const auto& [mode, st] : timing["baselines"].items())
    if (!st.value("cached", false) && st.value("host_other_cores", 0.0) >= busy_cores)
      busy.push_back(fmt::format("{:.2f} during the {} baseline (not cached)", st.value("host_other_cores", 0.0), mode));
  if (busy.empty()) return;
  std::string what;
  for (const auto& b : busy) what += (what.empty() ? "" : ", ") + b;
  record.findings.push_back(make_finding(
      "timing_host_busy", "warn",
      fmt::format("other processes used CPU cores meanwhile ({}; the line is {:.2f}): ATen's threads wait for "
                  "a busy core, so these CPU times can be many times too slow; time again on an idle host "
                  "(docs/TIMING.md)",
                  what, busy_cores),
      "host CPU time from /proc/stat less kbv's own processes", ""));  // not a cheat: the host
}

// The physical floor: inputs read once, outputs written once, at the measured copy bandwidth.
void check_floor(Record& record, json& timing, const msg::TimeInputsReply& sets, const Stats& cs,
                 const EvalOptions& options, const Environment& env, WorkerProcess& reference,
                 const std::string& reject, std::vector<std::string>& cache_refused) {
  const uint64_t bytes = sets.input_bytes + sets.output_bytes;
  timing["bytes"] = bytes;
  std::string error;
  std::optional<json> cal = device_calibration(reference, options, env, error);
  if (cal && cal->contains("cache_refused"))
    cache_refused.push_back("the device calibration: " + (*cal)["cache_refused"].get<std::string>());
  if (!cal) {
    timing["floor_error"] = error;
    return;
  }
  const double bw = cal->value("bandwidth_bytes_per_s", 0.0);
  const double fl = floor_ms(bytes, bw);
  timing["bandwidth_bytes_per_s"] = bw;
  timing["floor_ms"] = fl;
  if (cs.median_ms > 0) timing["speed_of_light"] = fl / cs.median_ms;
  if (fl > 0 && cs.median_ms > 0 && cs.median_ms < kFloorMargin * fl)
    record.findings.push_back(make_finding(
        "impossible_speed", reject,
        fmt::format("median time {:.4f} ms is below {:.0f}% of the physical floor {:.4f} ms ({} bytes of inputs and "
                    "outputs at the measured copy bandwidth of {:.1f} GB/s): the work cannot have been done",
                    cs.median_ms, 100 * kFloorMargin, fl, bytes, bw / 1e9),
        "timing.floor_ms", "T15"));
}

}  // namespace kbv
