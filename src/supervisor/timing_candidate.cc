// The candidate's timed run as the supervisor sees it: the asks on its reply channel served in
// call order (fresh draws, start and end marks, the round-trip pings), the run's failure if it
// cannot be judged, and the end of the candidate's part (its worker stopped, the reference's
// scheduling set back) before the baselines are timed.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "supervisor/timing_parts.h"
#include "util/clock.h"
#include "util/host_load.h"
#include "util/sched.h"

namespace kbv {
using nlohmann::json;

namespace {

json forged_ask(CallLog& log, const json& ask) {
  static const char* const kPhase[] = {"draw", "start mark", "end mark"};
  if (log.forged.empty())
    log.forged = fmt::format("the candidate worker sent {} when the supervisor expected the {} of call {} (at most "
                             "{} calls)",
                             ask.dump().substr(0, 120), kPhase[log.order.phase], log.order.calls, log.max_calls);
  return msg::to_json(msg::Failure{"protocol_error", "timing asks come in call order: draw, start, end", ""});
}

// The candidate worker's main thread and the supervisor's own: their waits for a CPU, summed.
// And the candidate worker's CPU time, every thread (the per-call CPU bound; CPU timing only).
struct Waits {
  ThreadWait candidate, supervisor{0};
  ProcessCpuTime cpu;
  Waits(int candidate_pid, bool cpu_timing) : candidate(candidate_pid), cpu(cpu_timing ? candidate_pid : -1) {}
  std::optional<double> ms() const {
    std::optional<double> c = candidate.ms(), s = supervisor.ms();
    if (!c || !s) return std::nullopt;
    return *c + *s;
  }
};

json serve_ask(CallLog& log, const json& ask, WorkerProcess& reference, const EvalOptions& options,
               const Waits& waits) {
  const Clock::time_point arrived = Clock::now();
  const int got = log.order.due(ask);
  if (got < 0 || log.order.calls >= log.max_calls) return forged_ask(log, ask);
  if (got == 0) {
    Reply d = reference.call(msg::to_json(msg::TimeDrawRequest{*log.fresh_seed, static_cast<uint64_t>(log.draws)}),
                             ms(options.timeouts.reference_s));
    if (!reply_as<msg::Done>(d)) {
      if (log.draw_error.empty()) log.draw_error = fmt::format("fresh timing draw {}: {}", log.draws, reply_message(d));
      return msg::to_json(msg::Failure{"problem_error", log.draw_error, ""});
    }
    ++log.draws;
    log.order.served();
    return msg::to_json(msg::Done{});
  }
  if (got == 1) {
    log.order.served();
    log.waited_at_start = waits.ms();
    log.cpu_at_start = waits.cpu.ms();
    log.start_answered = Clock::now();
    return msg::to_json(msg::Done{});
  }
  log.window_ms.push_back(std::chrono::duration<double, std::milli>(arrived - log.start_answered).count());
  const std::optional<double> cpu = waits.cpu.ms();
  log.cpu_ms.push_back(cpu && log.cpu_at_start ? std::max(*cpu - *log.cpu_at_start, 0.0) : -1.0);
  const std::optional<double> waited = waits.ms();
  log.waited_ms.push_back(waited && log.waited_at_start ? std::max(*waited - *log.waited_at_start, 0.0) : -1.0);
  const Clock::time_point p0 = Clock::now();
  if (reference.call(msg::to_json(msg::HelloRequest{}), ms(options.timeouts.reference_s)).status == Reply::Status::ok)
    log.ping_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - p0).count());
  log.order.served();
  return msg::to_json(msg::Done{});
}

// On the CPU, the reference serves the candidate's draws and pings from kbv's CPUs outside the
// budget while the candidate is timed, and is pinned back for its baselines. Its Python running on
// the candidate's CPU between calls cost the next call ~3 us of a 25 us ReLU (docs/TIMING.md
// "Draws away from the candidate"); a baseline draws in its own process. Only to CPUs no other
// evaluation of this host holds (util/sched.h CpuLease): nothing moves when there are none.
// T21: a reference some thread of which is already off the budget is not moved, and one is moved
// back only when no thread left the set it was given, so that what a candidate changed stays for
// restore_reference to find and say.
class ReferenceAway {
 public:
  ReferenceAway(WorkerProcess& reference, bool cpu_timing) : reference_(reference) {
    if (!cpu_timing || reference.cpus().empty() || !affinity_outside(reference.pid(), reference.cpus()).empty()) return;
    std::vector<int> outside;
    for (int c : affinity_of(0))
      if (std::find(reference.cpus().begin(), reference.cpus().end(), c) == reference.cpus().end()) outside.push_back(c);
    away_ = unleased_cpus(outside);
    if (!away_.empty() && !pin_group(reference.pid(), away_).empty()) {
      pin_group(reference.pid(), reference.cpus());  // some threads may have moved: all back
      away_.clear();
    }
  }
  ~ReferenceAway() {
    if (!away_.empty() && affinity_outside(reference_.pid(), away_).empty()) pin_group(reference_.pid(), reference_.cpus());
  }
  ReferenceAway(const ReferenceAway&) = delete;
  ReferenceAway& operator=(const ReferenceAway&) = delete;
  // "0", "0-3,6"; "" when the reference stayed on the budget.
  std::string cpus() const { return away_.empty() ? "" : cpu_list_text(away_); }

 private:
  WorkerProcess& reference_;
  std::vector<int> away_;
};

}  // namespace

int CallOrder::due(const json& ask) const {
  msg::DrawAsk a;
  if (msg::op_of(ask) != msg::Op::draw || !msg::from_json(ask, a).empty() || a.index != calls) return -1;
  const int got = a.mark.empty() ? 0 : a.mark == "start" ? 1 : a.mark == "end" ? 2 : -1;
  return got == phase ? got : -1;
}

void CallOrder::served() {
  if (phase == 2) ++calls;
  phase = phase == 0 ? 1 : phase == 1 ? 2 : fresh ? 0 : 1;
}

CandidateRun run_candidate(const EvalOptions& options, const Environment& env, WorkerProcess& reference,
                           WorkerProcess& candidate, const msg::TimeInputsReply& sets, SeedSource& spot_seeds,
                           const std::string& baseline_mode) {
  const TimingProtocol& tp = options.protocol.timing;
  msg::TimeCandidateRequest req;
  req.timing = rule_request(options);
  req.sets = sets.sets;
  req.spot_seed = spot_seeds.next();
  CandidateRun run;
  if (tp.fresh) {
    // The candidate's calls on fresh draws of the problem's get_inputs(): before each call its
    // worker asks for the next draw, which the reference makes into the shared set-0 buffers from
    // a seed the candidate never sees; no draw runs in the candidate's process, so nothing it
    // patched there sees one. The reference recomputes a secret subset for the spot checks.
    run.log.fresh_seed = spot_seeds.next();
    req.fresh = true;
  }
  req.spot_per_output = tp.spot_per_output;
  req.spot_max_calls = tp.spot_max_calls;
  req.marks = true;
  req.baseline_mode = baseline_mode;
  run.log.order = CallOrder(tp.fresh);
  run.log.max_calls = int64_t{tp.rule.warmup} + tp.rule.max_samples + tp.rule.max_discards;
  // On the CPU, what other processes ran meanwhile (the reference serving draws is ours). The
  // programs' own processes: a confined candidate runs in a PID namespace, under a process of its
  // own (pid()) that uses no CPU, and counting that one made every sandboxed candidate's own core
  // "another process's" (host busy on an idle host, 2026-12-07).
  std::optional<HostLoadProbe> load;
  if (env.device != "cuda") load.emplace(std::vector<int>{reference.program_pid(), candidate.program_pid()});
  const Waits waits(candidate.program_pid(), env.device != "cuda");
  // Its helper processes' CPU over the run (one /proc scan before and after, outside the calls).
  std::optional<BesideCpu> beside;
  if (env.device != "cuda") beside.emplace(candidate.program_pid());
  run.log.threads = std::max<int>({1, options.cpu.threads, static_cast<int>(candidate.cpus().size())});
  {
    ReferenceAway away(reference, env.device != "cuda");
    run.draw_cpus = away.cpus();
    const auto t0 = Clock::now();
    run.reply = candidate.call(msg::to_json(req), timing_timeout(options),
                               [&](const json& ask) { return serve_ask(run.log, ask, reference, options, waits); });
    run.supervisor_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  run.arrived_ok = run.reply.status == Reply::Status::ok;
  run.timed = reply_as<msg::TimeReply>(run.reply);
  if (load)
    if (std::optional<double> others = load->other_cores()) run.others = *others;
  if (beside)
    if (std::optional<double> used = beside->ms()) run.beside_cpu_ms = *used;
  return run;
}

// Empty when the run can be judged; else why not, with the finding it earned in the record.
std::string run_failure(Record& record, const CandidateRun& run, const std::string& reject) {
  // The reference failing to draw is the problem's (or kbv's) failure, not the candidate's.
  if (!run.log.draw_error.empty()) return run.log.draw_error;
  if (!run.log.forged.empty()) {
    record.findings.push_back(make_finding("timing_mismatch", reject, run.log.forged + ": the timing channel was tampered with",
                                         "timing asks on the reply channel", "T14"));
    reject_on_findings(record);
    return run.log.forged;
  }
  if (!run.timed && run.arrived_ok) {
    // An "ok" reply that does not parse comes from hostile code writing on the channel (T14).
    std::string why = reply_message(run.reply);
    record.findings.push_back(make_finding("timing_mismatch", reject,
                                           "the candidate worker's timing reply is malformed (" + why +
                                               "): the reporting channel was tampered with",
                                           "timing reply", "T14"));
    reject_on_findings(record);
    return "malformed timing reply: " + why;
  }
  if (!run.timed) {
    std::string message = "while timing the candidate: " + reply_message(run.reply);
    const WorkerFailure failure = worker_failure(run.reply);
    if (failure.status == WorkerFailure::Status::failed && failure.kind == msg::kSharedBufferReplaced) {
      // A shared input file replaced under its name since the reference made it: only the candidate
      // shares that folder, and a replaced file would feed the baselines' twin values of its choosing.
      record.findings.push_back(make_finding(msg::kSharedBufferReplaced, reject, message,
                                             "the timing inputs' shared files", "T17"));
      if (!reject_on_findings(record)) fail_timing(record, failure, message);  // a protocol that only warns
      return message;
    }
    fail_timing(record, failure, message);
    return message;
  }
  return "";
}

// The candidate's part is over. Its worker and everything in its process group go before the
// baselines and the device calibration are timed (T17): a thread, process or kernel it left
// running would slow the denominator, and a cached baseline every later evaluation of the problem.
void stop_candidate(Record& record, WorkerProcess& candidate) {
  candidate.stop();
  if (candidate.strays().empty()) return;
  std::string list;
  for (const Stray& s : candidate.strays())
    list += fmt::format("{}pid {} ({})", list.empty() ? "" : ", ", s.pid, s.command.empty() ? "?" : s.command);
  record.findings.push_back(make_finding(
      "process_left_running", "warn",
      fmt::format("the candidate left {} process(es) running outside its worker's process group: {}; kbv killed "
                  "them before timing the baselines",
                  candidate.strays().size(), list),
      "processes adopted by kbv when the candidate's worker stopped", "T17"));
}

// T21: the reference's threads scheduled as kbv's own (affinity, nice, policy) before they time
// the baselines; what a candidate changed is set back and said. False: something could not be set
// back, and the baselines it times are not cached.
bool restore_reference(Record& record, WorkerProcess& reference) {
  std::vector<SchedulingDrift> drift = restore_scheduling(reference.pid(), &reference.cpus());
  if (drift.empty()) return true;
  bool restored = true;
  std::string list;
  for (const SchedulingDrift& d : drift) {
    list += fmt::format("{}thread {} {}", list.empty() ? "" : "; ", d.tid, d.what);
    if (!d.restored) list += " (not set back: " + d.error + ")";
    restored = restored && d.restored;
  }
  record.findings.push_back(make_finding(
      "reference_disturbed", "warn",
      fmt::format("the reference worker's scheduling was changed while the candidate ran: {}; {}", list,
                  restored ? "set back before the baselines were timed"
                           : "could not be set back, so this record's baselines are not cached"),
      "/proc/<reference>/task/*: affinity, nice and policy against kbv's own", "T21"));
  return restored;
}

}  // namespace kbv
