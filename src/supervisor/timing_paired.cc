// Paired rounds of the timing phase (timing.pairs > 0, docs/TIMING.md "Paired rounds"): candidate
// and baseline blocks in alternating order, each candidate block checked as an unpaired run is,
// pooled into the record's timing.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "measure/interval.h"
#include "measure/statistic.h"
#include "supervisor/timing_parts.h"
#include "util/interrupt.h"

namespace kbv {
using nlohmann::json;

namespace {

// Seconds since the epoch (system clock): when a paired block began and ended, for audit.
double epoch_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

size_t reject_count(const Record& record) {
  return static_cast<size_t>(std::count_if(record.findings.begin(), record.findings.end(),
                                           [](const auto& f) { return f.severity == "reject"; }));
}

// The candidate blocks' checks, summed into the record's top-level fields (each block's own are
// in timing.rounds[i].candidate.checks).
struct BlockChecks {
  double supervisor_ms = 0, reported_sum_ms = 0;
  bool wall_ok = true, has_spot = false, fresh = false;
  int spot_checked = 0, spot_failed = 0, spot_calls = 0, spot_recomputed = 0;
  int64_t draws = 0, mismatches = 0;
  std::string spot_error;

  void add(const json& c) {
    if (c.contains("wall_check")) {
      supervisor_ms += c["wall_check"].value("supervisor_ms", 0.0);
      reported_sum_ms += c["wall_check"].value("reported_sum_ms", 0.0);
      wall_ok = wall_ok && c["wall_check"].value("ok", false);
    }
    if (c.contains("spot_checks")) {
      const json& sc = c["spot_checks"];
      has_spot = true;
      if (sc.contains("error") && spot_error.empty()) spot_error = sc["error"].get<std::string>();
      spot_checked += sc.value("checked", 0);
      spot_failed += sc.value("failed", 0);
      if (sc.contains("calls")) fresh = true;
      spot_calls += sc.value("calls", 0);
      spot_recomputed += sc.value("calls_recomputed", 0);
    }
    draws += c.value("draws", int64_t{0});
    mismatches += c.value("events_host_disagreed", int64_t{0});
  }

  void write(json& timing) const {
    timing["wall_check"] = {{"supervisor_ms", supervisor_ms}, {"reported_sum_ms", reported_sum_ms}, {"ok", wall_ok}};
    if (has_spot) {
      json sc = {{"checked", spot_checked}, {"failed", spot_failed}};
      if (fresh) {
        sc["calls"] = spot_calls;
        sc["calls_recomputed"] = spot_recomputed;
      }
      if (!spot_error.empty()) sc["error"] = spot_error;
      timing["spot_checks"] = sc;
    }
    if (fresh) timing["draws"] = draws;
    timing["events_host_disagreed"] = mismatches;
  }
};

// Pooled STATS of a side's blocks: every kept sample, the discards counted, the timer's overhead
// and host call time as the blocks' medians.
Stats pooled_stats(const std::vector<msg::TimeReply>& replies) {
  std::vector<double> all, overhead, host_call;
  int discarded = 0;
  for (const msg::TimeReply& r : replies) {
    all.insert(all.end(), r.samples_ms.begin(), r.samples_ms.end());
    discarded += static_cast<int>(r.discarded_ms.size());
    overhead.push_back(r.overhead_ms);
    if (r.host_call_ms >= 0) host_call.push_back(r.host_call_ms);
  }
  Stats s = summarize(all);
  s.discarded = discarded;
  s.overhead_ms = median_in_place(overhead);
  s.host_call_ms = host_call.empty() ? -1 : median_in_place(host_call);
  return s;
}

// What is the same for every block of one evaluation's paired rounds.
struct PairedContext {
  Record& record;
  const EvalOptions& options;
  const Environment& env;
  WorkerProcess& reference;
  WorkerProcess& candidate;
  const BaselineTwin& twin;
  const msg::TimeInputsReply& sets;
  SeedSource& spot_seeds;
  SeedSource& twin_seeds;  // the twin's draws and spot choices, apart from the candidate's
  const std::string& reject;
};

// What the rounds gathered, pooled into the record's timing once they are over.
struct PairedRounds {
  json rounds = json::array(), baseline_errors = json::object();
  std::vector<msg::TimeReply> cand_replies;
  std::map<std::string, std::vector<msg::TimeReply>> base_replies;
  std::map<std::string, std::vector<PairedRound>> paired;  // per baseline mode
  std::map<std::string, double> base_others;
  std::map<std::string, json> base_parity;  // per baseline mode: its worker's threads and cpus
  // Modes whose twin computed other outputs than the reference: no speedup (twin_block).
  std::set<std::string> withdrawn;
  double cand_others = -1, sampling_s = 0;
  BlockChecks checks;
  json budget = json::object();  // the CPU thread budget as the candidate's blocks left it (T25)
  CallBoundCalls bound_calls_all;  // every block's calls: the per-call bound is judged over all (T22)
  std::string failure;
  int done = 0;
};

// One round: its blocks' options (their share of the stop rule) and what they measured.
struct Round {
  int r = 0;
  EvalOptions block;
  json round, blocks = json::array();
  std::vector<double> cand_ms;
  std::map<std::string, std::vector<double>> base_ms;
  bool rejected = false;
};

void candidate_block(const PairedContext& c, PairedRounds& all, Round& rd) {
  const double t0 = epoch_s();
  CandidateRun run = run_candidate(rd.block, c.env, c.reference, c.candidate, c.sets, c.spot_seeds);
  rd.blocks.push_back({{"side", "candidate"}, {"start_s", t0}, {"end_s", epoch_s()}});
  if (std::string why = run_failure(c.record, run, c.reject); !why.empty()) {
    all.failure = why;
    return;
  }
  const msg::TimeReply& cr = *run.timed;
  const Stats bs = stats_of_reply(cr);
  const size_t rejects = reject_count(c.record);
  json checks = json::object();
  check_call_counts(c.record, checks, run, bs, rd.block.protocol.timing, c.reject);
  add_call_bound_calls(c.record, all.bound_calls_all, run, rd.block.protocol.timing, c.reject);
  note_event_mismatches(c.record, checks, cr, bs);
  spot_check_calls(c.record, checks, run, bs, rd.block, c.reference, c.spot_seeds, c.reject);
  check_thread_budget(c.record, all.budget, c.options, c.env, c.reference, c.candidate, run, c.reject);
  all.checks.add(checks);
  rd.rejected = reject_count(c.record) > rejects;
  if (run.others >= 0) all.cand_others = std::max(all.cand_others, run.others);
  all.sampling_s += cr.sampling_s;
  rd.cand_ms = cr.samples_ms;
  rd.round["candidate"] = {{"median_ms", bs.median_ms}, {"samples", bs.samples}, {"stop", cr.stop}, {"checks", checks}};
  all.cand_replies.push_back(cr);
}

// Whether `mode`'s baseline blocks are timed in the twin (there is one; compile's stay the reference's).
bool in_twin(const BaselineTwin& twin, const std::string& mode) { return twin.worker && mode != "compile"; }

// One baseline block: its worker's reply, and the cores other processes used meanwhile (-1: unknown).
struct BaselineBlock {
  msg::TimeReply reply;
  double others = -1;
};

// A baseline block in the reference worker (measure_baseline).
std::optional<BaselineBlock> reference_block(const PairedContext& c, const Round& rd, const std::string& mode,
                                              std::string& error) {
  std::optional<json> entry = measure_baseline(c.reference, rd.block, mode, c.env.device != "cuda", error, rd.r);
  if (!entry) return std::nullopt;
  BaselineBlock block;
  msg::TimeReply& reply = block.reply;
  reply.samples_ms = (*entry)["samples_ms"].get<std::vector<double>>();
  const json& run = (*entry)["run"];
  if (run.contains("discarded_ms") && run["discarded_ms"].is_array())
    reply.discarded_ms = run["discarded_ms"].get<std::vector<double>>();
  reply.overhead_ms = run.value("overhead_ms", 0.0);
  reply.host_call_ms = run.value("host_call_ms", -1.0);
  const json& st = (*entry)["stats"];
  if (st.contains("threads")) reply.threads = st["threads"].get<int>();
  if (st.contains("cpus")) reply.cpus = st["cpus"].get<std::string>();
  block.others = st.value("host_other_cores", -1.0);
  return block;
}

// A baseline block in the twin: the candidate's timed run (run_candidate) with the problem's Model
// as its ModelNew, under the mode's matmul precision, its outputs spot-checked as the candidate's
// are. The twin maps its inputs from the folder it shares with the reference and the candidate, so
// a candidate that swapped a shared file there before it was frozen could feed the twin other
// values (denormals, to slow it): the spot checks then fail and the block counts for nothing. A
// twin that cannot be timed or checked gives no block (`error` says why), never a finding against
// the candidate; the mode's speedup is withdrawn (`withdrawn`) once it was fed other values.
std::optional<BaselineBlock> twin_block(const PairedContext& c, const Round& rd, const std::string& mode,
                                        std::string& error, bool& withdrawn) {
  CandidateRun run = run_candidate(rd.block, c.env, c.reference, *c.twin.worker, c.sets, c.twin_seeds, mode);
  Record scratch;
  if (std::string why = run_failure(scratch, run, "reject"); !why.empty()) {
    error = fmt::format("timing the {} baseline in its twin: {}", mode, why);
    return std::nullopt;
  }
  json checks = json::object();
  spot_check_calls(scratch, checks, run, stats_of_reply(*run.timed), rd.block, c.reference, c.twin_seeds, "reject");
  if (checks.contains("spot_checks") && checks["spot_checks"].contains("error")) {
    error = fmt::format("spot-checking the {} baseline's twin: {}", mode, checks["spot_checks"]["error"].get<std::string>());
    return std::nullopt;
  }
  if (!scratch.findings.empty()) {
    withdrawn = true;
    error = fmt::format("the {} baseline's twin computed other outputs than the reference on its timing draws ({}): "
                        "its shared inputs were changed",
                        mode, scratch.findings.front().message);
    return std::nullopt;
  }
  return BaselineBlock{*run.timed, run.others >= 0 ? std::round(run.others * 100) / 100 : -1.0};
}

void baseline_blocks(const PairedContext& c, PairedRounds& all, Round& rd) {
  // Nothing of the candidate runs while the baselines are timed; the reference as kbv spawned it.
  const int frozen = c.candidate.freeze();
  struct Thaw {  // on every way out, an exception from a malformed reply included
    WorkerProcess& w;
    ~Thaw() { w.thaw(); }
  } thaw_after{c.candidate};
  restore_reference(c.record, c.reference);
  json modes = json::object();
  for (const auto& mode : c.options.protocol.timing.baselines) {
    if (all.withdrawn.count(mode)) continue;
    std::string error;
    const double t0 = epoch_s();
    const bool twin = in_twin(c.twin, mode);
    bool withdrawn = false;
    std::optional<BaselineBlock> block =
        twin ? twin_block(c, rd, mode, error, withdrawn) : reference_block(c, rd, mode, error);
    if (withdrawn) all.withdrawn.insert(mode);
    rd.blocks.push_back({{"side", mode}, {"start_s", t0}, {"end_s", epoch_s()}, {"frozen", frozen},
                         {"worker", twin ? "twin" : "reference"}});
    if (!block) {
      all.baseline_errors[mode] = error;
      continue;
    }
    const msg::TimeReply& reply = block->reply;
    rd.base_ms[mode] = reply.samples_ms;
    all.base_replies[mode].push_back(reply);
    // The timed worker's own report (thread parity)
    if (reply.threads) all.base_parity[mode]["threads"] = *reply.threads;
    if (reply.cpus) all.base_parity[mode]["cpus"] = *reply.cpus;
    if (block->others >= 0)
      all.base_others[mode] = std::max(all.base_others.count(mode) ? all.base_others[mode] : 0.0, block->others);
    modes[mode] = stats_of_reply(reply).median_ms;
  }
  rd.round["baselines_ms"] = modes;
}

// Round r's blocks, in its order. False when no round may follow (a failure, or a rejection).
bool run_round(const PairedContext& c, PairedRounds& all, int r) {
  const TimingProtocol& tp = c.options.protocol.timing;
  Round rd;
  rd.r = r;
  rd.block = c.options;
  rd.block.protocol.timing.rule = block_rule(tp.rule, tp.pairs, r == 0);
  // The recomputed calls shared out between the blocks (16 over 6: 3 3 3 3 2 2), each block at least one.
  rd.block.protocol.timing.spot_draws = std::max(1, tp.spot_draws / tp.pairs + (r < tp.spot_draws % tp.pairs ? 1 : 0));
  const bool baselines_first = r % 2 == 0;
  rd.round = {{"round", r}, {"order", baselines_first ? "baselines, candidate" : "candidate, baselines"}};
  if (baselines_first) {
    baseline_blocks(c, all, rd);
    candidate_block(c, all, rd);
  } else {
    candidate_block(c, all, rd);
    if (all.failure.empty()) baseline_blocks(c, all, rd);
  }
  rd.round["blocks"] = rd.blocks;
  all.rounds.push_back(rd.round);
  if (!all.failure.empty()) return false;
  for (const auto& [mode, ms_] : rd.base_ms) all.paired[mode].push_back({ms_, rd.cand_ms, r});
  ++all.done;
  return !rd.rejected;  // the verdict is decided: no more rounds for a candidate already rejected
}

// The baselines' pooled STATS, their speedups and paired intervals against the candidate's `cs`.
// A speedup is computed from the rounds' ratios (interval.h paired_speedup); the ratio of the
// pooled figures is kept beside it as timing.speedup_pooled. A baseline whose rounds are too few
// for an interval gets no speedup (its warning says why): never a win or a loss.
void write_pooled_baselines(json& timing, PairedRounds& all, const Stats& cs, const std::string& statistic,
                            const BaselineTwin& twin, std::map<std::string, PairedSpeedup>& by_mode) {
  json baselines = json::object(), speedup = json::object(), pooled = json::object(), ci = json::object();
  for (const auto& [mode, replies] : all.base_replies) {
    if (all.withdrawn.count(mode)) continue;  // its error says why
    const Stats bs = pooled_stats(replies);
    json st = bs.to_json();
    st["cached"] = false;
    st["blocks"] = replies.size();
    if (all.base_others.count(mode)) st["host_other_cores"] = std::round(all.base_others[mode] * 100) / 100;
    if (all.base_parity.count(mode)) st.update(all.base_parity[mode]);
    st["worker"] = in_twin(twin, mode) ? "twin" : "reference";
    baselines[mode] = st;
    const double bm = statistic_ms(bs, statistic), cm = statistic_ms(cs, statistic);
    if (bm > 0 && cm > 0) pooled[mode] = bm / cm;
    const PairedSpeedup ps = paired_speedup(all.paired[mode], statistic);
    if (ps.interval) {
      speedup[mode] = ps.interval->speedup;
      ci[mode] = {ps.interval->low, ps.interval->high};
    }
    by_mode[mode] = ps;
  }
  timing["baselines"] = baselines;
  timing["speedup"] = speedup;
  timing["speedup_pooled"] = pooled;
  if (!ci.empty()) timing["speedup_ci95"] = ci;
  if (!all.baseline_errors.empty()) timing["baseline_errors"] = all.baseline_errors;
}

}  // namespace

void timing_paired(Record& record, const EvalOptions& options, const Environment& env,
                   WorkerProcess& reference, WorkerProcess& candidate, const BaselineTwin& twin,
                   const msg::TimeInputsReply& sets, SeedSource& spot_seeds, const std::string& reject) {
  const TimingProtocol& tp = options.protocol.timing;
  SeedSource twin_seeds(options.protocol.seed ? std::optional<uint64_t>(*options.protocol.seed ^ 0x7477696eULL)
                                              : std::nullopt);
  const PairedContext c{record, options, env, reference, candidate, twin, sets, spot_seeds, twin_seeds, reject};
  PairedRounds all;
  for (int r = 0; r < tp.pairs && all.failure.empty(); ++r) {
    if (interrupted()) {
      all.failure = "interrupted";
      break;
    }
    if (!run_round(c, all, r)) break;
  }
  json timing = json::object();
  timing["rounds"] = all.rounds;
  if (!all.failure.empty() || all.cand_replies.empty()) {
    timing["error"] = all.failure.empty() ? "no candidate block was timed" : all.failure;
    record.timing = timing_from_json(timing);
    release_both(options, reference, &candidate);
    return;
  }
  const bool claim = judge_call_bound(record, timing, all.bound_calls_all, tp, env.device == "cuda", reject);
  // The candidate's part is over (T17: nothing of it runs during the device calibration).
  stop_candidate(record, candidate);
  const msg::TimeReply& last = all.cand_replies.back();
  const Stats cs = pooled_stats(all.cand_replies);
  timing["method"] = last.method;
  timing["candidate"] = cs.to_json();
  if (all.cand_others >= 0) timing["candidate"]["host_other_cores"] = std::round(all.cand_others * 100) / 100;
  for (const char* k : {"threads", "cpus", "draw_cpus"}) {
    if (all.budget.contains(k)) timing[k] = all.budget[k];
    if (all.budget.contains("candidate") && all.budget["candidate"].contains(k))
      timing["candidate"][k] = all.budget["candidate"][k];
  }
  all.checks.write(timing);
  if (!claim) return end_unjudged(record, timing, options, reference);  // no speedup: see judge_call_bound
  std::map<std::string, PairedSpeedup> by_mode;
  write_pooled_baselines(timing, all, cs, tp.statistic, twin, by_mode);
  for (const std::string& mode : all.withdrawn)
    record.findings.push_back(make_finding("baseline_twin_mismatch", "warn",
                                           all.baseline_errors.value(mode, std::string()) +
                                               "; no speedup against this baseline is claimed",
                                           "timing.baseline_errors." + mode, ""));
  if (!twin.error.empty()) {
    timing["baseline_twin_error"] = twin.error;
    record.findings.push_back(make_finding(
        "baseline_twin_unavailable", "warn",
        twin.error + "; the fp32 and tf32 baselines were timed in the reference worker instead, whose short CPU calls "
                     "cost less than the same code's in a candidate's worker (docs/TIMING.md \"The baselines' twin\")",
        "timing.baseline_twin_error", ""));
  }
  timing["pairs"] = all.done;
  note_paired_rounds(record, by_mode, tp.pairs);
  note_host_busy(record, timing, all.cand_others);
  std::vector<std::string> cache_refused;
  check_floor(record, timing, sets, cs, options, env, reference, reject, cache_refused);
  note_cache_refused(record, cache_refused);
  describe_run(timing, last);
  timing["sampling_s"] = all.sampling_s;
  record.timing = timing_from_json(timing);
  set_runtime(record, cs, env, options.protocol.timing);
  release_both(options, reference, nullptr);
  reject_on_findings(record);
}

}  // namespace kbv
