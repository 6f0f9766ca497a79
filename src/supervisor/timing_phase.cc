#include "supervisor/timing_phase.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "measure/call_bound.h"
#include "measure/interval.h"
#include "measure/statistic.h"
#include "record/trust.h"
#include "store/sealed.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/host_load.h"
#include "util/interrupt.h"
#include "util/sched.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

msg::TimingSettings rule_request(const EvalOptions& o) {
  return {o.protocol.timing.rule, o.protocol.timing.flush_bytes, o.protocol.timing.launch_hold_us,
          cpu_budget(o.protocol.timing.cpu_threads).threads, o.protocol.timing.l2_flush,
          o.protocol.timing.loop == kLoopUpstream};
}

namespace {

using Clock = std::chrono::steady_clock;

// A kernel can move bytes somewhat faster than the measured copy (a copy reaches 85-90% of the
// peak bandwidth): only a median below this fraction of the floor is impossible.
constexpr double kFloorMargin = 0.8;

std::string reply_message(const Reply& r) {
  if (r.status == Reply::Status::failed) return msg::failure_of(r.body).message;
  return r.detail.empty() ? "the worker did not answer" : r.detail;
}

// A whole timing request may take the warm-up, the time cap and a few calls beyond it.
std::chrono::milliseconds timing_timeout(const EvalOptions& o) {
  const StopRule& r = o.protocol.timing.rule;
  return ms(o.timeouts.call_s * (r.warmup + std::max(r.min_samples_at_cap, r.calls) + 3) + 2 * r.time_cap_s + 60);
}

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

}  // namespace

Stats stats_of_reply(const msg::TimeReply& reply) {
  Stats s = summarize(reply.samples_ms);
  s.discarded = static_cast<int>(reply.discarded_ms.size());
  s.overhead_ms = reply.overhead_ms;
  s.host_call_ms = reply.host_call_ms;
  return s;
}

std::string baseline_key(const std::string& problem_text, const EvalOptions& options, const Environment& env,
                         const std::string& mode) {
  TimingProtocol t = options.protocol.timing;
  t.baselines.clear();  // which baselines a run asks for does not change one baseline's time
  t.spot_per_output = 0;
  t.spot_max_calls = 0;
  t.pairs = 0;  // cached baselines are unpaired ones
  t.statistic = TimingProtocol{}.statistic;  // an entry keeps every statistic: reading another re-times nothing
  if (env.device != "cuda") t.launch_hold_us = 0;  // the hold is a GPU kernel: the CPU engine has none
  // The CPU thread budget as resolved here (0 means every CPU, whose count differs between hosts);
  // it times nothing on the GPU.
  t.cpu_threads = env.device == "cuda" ? 0 : cpu_budget(t.cpu_threads).threads;
  std::vector<std::string> parts = {"kbv-baseline-1", problem_text, env.device, env.device_name, env.torch_version,
                                     env.python_version, t.to_json().dump(), kMeasuredDraw, "fp32", mode};
  return sha256_hex_parts(parts);
}

std::optional<json> load_baseline(const EvalOptions& options, const std::string& key, std::string* refused) {
  SealKey seal = seal_key(options.cache_dir);
  Unsealed u = read_sealed(options.cache_dir / "baselines" / (key + ".json"), seal.bytes);
  if (u.check == Unsealed::Check::refused && refused) *refused = seal.error.empty() ? u.reason : seal.error;
  if (u.check != Unsealed::Check::ok || !u.value.contains("stats")) return std::nullopt;
  return u.value;
}

std::string save_baseline(const EvalOptions& options, const std::string& key, const json& entry) {
  SealKey seal = seal_key(options.cache_dir);
  if (!seal.error.empty()) return seal.error;
  return write_sealed(options.cache_dir / "baselines" / (key + ".json"), entry, seal.bytes);
}

std::optional<msg::TimeInputsReply> draw_timing_inputs(WorkerProcess& reference, const EvalOptions& options,
                                                       std::string& error) {
  const TimingProtocol& t = options.protocol.timing;
  // Their own seeds, apart from the correctness trials' (secret unless --seed).
  SeedSource seeds(options.protocol.seed ? std::optional<uint64_t>(*options.protocol.seed ^ 0x74696d696e67ULL)
                                         : std::nullopt);
  // Fresh draws need one set only: the live buffers' shapes, and the output sizes.
  const int sets = t.fresh ? 1 : std::max(t.sets, 1);
  msg::TimeInputsRequest req;
  for (int i = 0; i < sets; ++i) req.seeds.push_back(seeds.next());
  req.max_bytes = t.max_set_bytes;
  req.input_draw = kMeasuredDraw;
  Reply r = reference.call(msg::to_json(req), ms(options.timeouts.reference_s * sets));
  std::optional<msg::TimeInputsReply> drawn = reply_as<msg::TimeInputsReply>(r);
  if (!drawn) error = "drawing the timing inputs: " + reply_message(r);
  return drawn;
}

std::optional<json> measure_baseline(WorkerProcess& reference, const EvalOptions& options, const std::string& mode,
                                     bool cpu, std::string& error, int round) {
  msg::TimeReferenceRequest req;
  req.timing = rule_request(options);
  req.mode = mode;
  if (options.protocol.timing.fresh) {
    // The baseline's calls on fresh draws too: its own secret seeds, apart from every other draw's.
    // Paired rounds: each round's block its own draws (round 0 as unpaired).
    const uint64_t mode_tag = (mode == "tf32" ? 1 : mode == "fp32" ? 2 : 3) + (static_cast<uint64_t>(round) << 8);
    SeedSource seeds(options.protocol.seed ? std::optional<uint64_t>(*options.protocol.seed ^ (0x626173656cULL + mode_tag))
                                           : std::nullopt);
    req.fresh_seed = seeds.next();
  }
  std::chrono::milliseconds timeout = timing_timeout(options);
  if (mode == "compile") timeout += ms(options.timeouts.build_s);  // inductor compiles on the first call
  std::optional<HostLoadProbe> load;
  if (cpu) load.emplace(std::vector<int>{reference.pid()});
  Reply r = reference.call(msg::to_json(req), timeout);
  std::optional<msg::TimeReply> timed = reply_as<msg::TimeReply>(r);
  if (!timed) {
    error = fmt::format("timing the {} baseline: {}", mode, reply_message(r));
    return std::nullopt;
  }
  json samples = timed->samples_ms;
  json run = msg::to_json(*timed);
  run.erase("samples_ms");
  run.erase("ok");
  json stats = stats_of_reply(*timed).to_json();
  if (timed->threads) stats["threads"] = *timed->threads;  // the reference's own report (thread parity)
  if (timed->cpus) stats["cpus"] = *timed->cpus;
  if (load)
    if (std::optional<double> others = load->other_cores()) stats["host_other_cores"] = std::round(*others * 100) / 100;
  return json{{"mode", mode}, {"stats", stats}, {"samples_ms", samples}, {"run", run}, {"measured_at", utc_now()}};
}

bool baseline_cacheable(const json& entry) {
  const json* st = entry.contains("stats") ? &entry["stats"] : nullptr;
  return !(st && st->is_object() && st->value("host_other_cores", 0.0) >= host_busy_cores());
}

std::optional<json> device_calibration(WorkerProcess& reference, const EvalOptions& options, const Environment& env,
                                       std::string& error) {
  std::string key = sha256_hex_parts({"kbv-calibration-1", env.device, env.device_name, env.torch_version});
  fs::path path = options.cache_dir / "calibration" / (key + ".json");
  SealKey seal = seal_key(options.cache_dir);
  Unsealed cached = read_sealed(path, seal.bytes);
  if (cached.check == Unsealed::Check::ok && cached.value.value("bandwidth_bytes_per_s", 0.0) > 0) return cached.value;
  Reply r = reference.call(msg::to_json(msg::CalibrateRequest{}), ms(options.timeouts.reference_s));
  std::optional<msg::CalibrateReply> calibrated = reply_as<msg::CalibrateReply>(r);
  if (!calibrated) {
    error = "measuring the device's copy bandwidth: " + reply_message(r);
    return std::nullopt;
  }
  json j = msg::to_json(*calibrated);
  j.erase("ok");
  j["device_name"] = env.device_name;
  j["torch_version"] = env.torch_version;
  j["measured_at"] = utc_now();
  if (std::string e = seal.error.empty() ? write_sealed(path, j, seal.bytes) : seal.error; !e.empty())
    j["cache_error"] = e;
  if (cached.check == Unsealed::Check::refused) j["cache_refused"] = cached.reason;
  return j;
}

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

namespace {

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

// What the supervisor saw of the candidate's calls through the asks on its reply channel: for
// every call (warm-up first) its draw (fresh inputs), then a start and an end mark around its
// interval, in that order and no other. The window of a call is the supervisor's own clock from
// its answer to the start mark to the end mark's arrival; a ping of the trusted reference
// after each end mark gives the channel's round trip under the same load.
struct CallLog {
  std::optional<uint64_t> fresh_seed;
  int64_t max_calls = 0;
  int64_t draws = 0;      // draws served
  int64_t calls = 0;      // calls whose end mark arrived
  int phase = 0;          // what comes next for call `calls`: 0 its draw, 1 its start, 2 its end
  std::vector<double> window_ms;  // per call index
  std::vector<double> ping_ms;
  Clock::time_point start_answered;
  std::string draw_error, forged;
};

json forged_ask(CallLog& log, const json& ask) {
  static const char* const kPhase[] = {"draw", "start mark", "end mark"};
  if (log.forged.empty())
    log.forged = fmt::format("the candidate worker sent {} when the supervisor expected the {} of call {} (at most "
                             "{} calls)",
                             ask.dump().substr(0, 120), kPhase[log.phase], log.calls, log.max_calls);
  return msg::to_json(msg::Failure{"protocol_error", "timing asks come in call order: draw, start, end", ""});
}

json serve_ask(CallLog& log, const json& ask, WorkerProcess& reference, const EvalOptions& options) {
  const Clock::time_point arrived = Clock::now();
  msg::DrawAsk a;
  const bool parsed = msg::op_of(ask) == msg::Op::draw && msg::from_json(ask, a).empty();
  const int got = !parsed ? -1 : a.mark.empty() ? 0 : a.mark == "start" ? 1 : a.mark == "end" ? 2 : -1;
  if (got != log.phase || a.index != log.calls || log.calls >= log.max_calls) return forged_ask(log, ask);
  if (got == 0) {
    Reply d = reference.call(msg::to_json(msg::TimeDrawRequest{*log.fresh_seed, static_cast<uint64_t>(log.draws)}),
                             ms(options.timeouts.reference_s));
    if (!reply_as<msg::Done>(d)) {
      if (log.draw_error.empty()) log.draw_error = fmt::format("fresh timing draw {}: {}", log.draws, reply_message(d));
      return msg::to_json(msg::Failure{"problem_error", log.draw_error, ""});
    }
    ++log.draws;
    log.phase = 1;
    return msg::to_json(msg::Done{});
  }
  if (got == 1) {
    log.phase = 2;
    log.start_answered = Clock::now();
    return msg::to_json(msg::Done{});
  }
  log.window_ms.push_back(std::chrono::duration<double, std::milli>(arrived - log.start_answered).count());
  const Clock::time_point p0 = Clock::now();
  if (reference.call(msg::to_json(msg::HelloRequest{}), ms(options.timeouts.reference_s)).status == Reply::Status::ok)
    log.ping_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - p0).count());
  ++log.calls;
  log.phase = log.fresh_seed ? 0 : 1;
  return msg::to_json(msg::Done{});
}

// The candidate's timed run as the supervisor saw it.
struct CandidateRun {
  Reply reply;
  bool arrived_ok = false;  // the reply came as "ok", before reading it (a malformed one is then forged: T14)
  std::optional<msg::TimeReply> timed;
  double supervisor_ms = 0;
  double others = -1;  // cores other processes used meanwhile (-1: unknown: GPU, or /proc unreadable)
  CallLog log;
};

CandidateRun run_candidate(const EvalOptions& options, const Environment& env, WorkerProcess& reference,
                           WorkerProcess& candidate, const msg::TimeInputsReply& sets, SeedSource& spot_seeds) {
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
  run.log.phase = tp.fresh ? 0 : 1;
  run.log.max_calls = int64_t{tp.rule.warmup} + tp.rule.max_samples + tp.rule.max_discards;
  // On the CPU, what other processes ran meanwhile (the reference serving draws is ours).
  std::optional<HostLoadProbe> load;
  if (env.device != "cuda") load.emplace(std::vector<int>{reference.pid(), candidate.pid()});
  const auto t0 = Clock::now();
  run.reply = candidate.call(msg::to_json(req), timing_timeout(options),
                             [&](const json& ask) { return serve_ask(run.log, ask, reference, options); });
  run.supervisor_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  run.arrived_ok = run.reply.status == Reply::Status::ok;
  run.timed = reply_as<msg::TimeReply>(run.reply);
  if (load)
    if (std::optional<double> others = load->other_cores()) run.others = *others;
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
    fail_timing(record, worker_failure(run.reply), message);
    return message;
  }
  return "";
}

// The calls the candidate reports against the asks the supervisor served (T14), and the samples'
// sum against the supervisor's clock around the whole request (T4).
void check_call_counts(Record& record, json& timing, const CandidateRun& run, const Stats& cs, const TimingProtocol& tp,
                       const std::string& reject) {
  const int64_t reported = int64_t{tp.rule.warmup} + cs.samples + cs.discarded;
  const bool fresh = run.log.fresh_seed.has_value();
  if (fresh && run.log.draws != reported)
    record.findings.push_back(make_finding(
        "timing_mismatch", reject,
        fmt::format("the candidate worker reported {} warm-up and timed calls but asked for {} fresh draws: the "
                    "reported calls are forged",
                    reported, run.log.draws),
        "timing.draws", "T14"));
  else if (run.log.calls != reported)
    record.findings.push_back(make_finding(
        "timing_mismatch", reject,
        fmt::format("the candidate worker reported {} warm-up and timed calls but marked {}: the reported calls are "
                    "forged",
                    reported, run.log.calls),
        "timing.call_bound", "T14"));
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

// Every sample against its call's outside window (measure/call_bound.h, T22).
// The calls the per-call bound looks at: every timed sample in call order with its outside window,
// and the round trips meanwhile. Paired blocks add theirs to one set, judged once over all of them
// (a block of 3 calls with 2 preempted on a busy host is not half of a run's calls).
struct CallBoundCalls {
  std::vector<double> samples, windows, pings;
};

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
  }
  calls.pings.insert(calls.pings.end(), run.log.ping_ms.begin(), run.log.ping_ms.end());
  return true;
}

void judge_call_bound(Record& record, json& timing, const CallBoundCalls& calls, const TimingProtocol& tp, bool cuda,
                      const std::string& reject) {
  // GPU: the launch hold runs inside every window and outside every sample (its length in SM
  // cycles at the warm-up's clock: 10% over the protocol's microseconds covers a slower clock).
  const double held_ms = cuda ? 1.1 * tp.launch_hold_us / 1000.0 : 0.0;
  const CallBound b = bound_calls(calls.samples, calls.windows, calls.pings, held_ms);
  timing["call_bound"] = b.to_json();
  if (b.ok) return;
  record.findings.push_back(make_finding(
      "timing_mismatch", reject,
      fmt::format("{} of {} timed calls reported a sample shorter than the supervisor's own clock allows (the time "
                  "between the call's start and end marks less {:.3f} ms for the round trip): e.g. sample {} "
                  "reported {:.4f} ms where the supervisor saw {:.4f} ms; the worker's clock was rewritten or the "
                  "samples are forged",
                  b.short_calls, b.checked, b.allowance_ms, b.worst_sample, b.worst_sample_ms, b.worst_window_ms),
      "timing.call_bound", "T22"));
}

void check_call_bound(Record& record, json& timing, const CandidateRun& run, const TimingProtocol& tp, bool cuda,
                      const std::string& reject) {
  CallBoundCalls calls;
  if (add_call_bound_calls(record, calls, run, tp, reject)) judge_call_bound(record, timing, calls, tp, cuda, reject);
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

// CPU thread parity (docs/TIMING.md "Thread parity"): the candidate was pinned to the budget's CPUs
// before it ran, and the baselines get the same. A thread of its worker's process group whose
// affinity is wider (or other) after its timing escaped the budget (T25): under the sandbox seccomp
// refuses sched_setaffinity, so this holds where that layer is missing (--sandbox off). Recorded as
// `timing.threads` and `timing.cpus` when the budget held.
void check_thread_budget(Record& record, json& timing, const EvalOptions& options, const Environment& env,
                         const WorkerProcess& reference, WorkerProcess& candidate, const msg::TimeReply& cr,
                         const std::string& reject) {
  if (env.device == "cuda" || candidate.cpus().empty()) return;
  if (cr.threads) timing["candidate"]["threads"] = *cr.threads;  // its worker's claim
  if (cr.cpus) timing["candidate"]["cpus"] = *cr.cpus;
  const std::vector<SchedulingDrift> wide = affinity_outside(candidate.pid(), candidate.cpus());
  if (wide.empty() && reference.cpus() == candidate.cpus()) {
    timing["threads"] = cpu_budget(options.protocol.timing.cpu_threads).threads;
    timing["cpus"] = cpu_list_text(candidate.cpus());
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
                  cpu_budget(options.protocol.timing.cpu_threads).threads, cpu_list_text(candidate.cpus()), list),
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

// Baselines, cached per problem content, device, versions and protocol (`cacheable`: the reference
// is as kbv spawned it). A cache entry refused is added to `cache_refused`.
void time_baselines(json& timing, const Pair& pair, const EvalOptions& options, const Environment& env,
                    WorkerProcess& reference, const Stats& cs, const std::vector<double>& candidate_ms, bool cacheable,
                    std::vector<std::string>& cache_refused) {
  FileText problem_text = pair.problem_text ? *pair.problem_text : read_file(pair.problem_path);
  json baselines = json::object(), speedup = json::object(), baseline_errors = json::object(), ci = json::object();
  std::string error;
  for (const auto& mode : options.protocol.timing.baselines) {
    std::string key = baseline_key(problem_text.ok ? problem_text.text : pair.problem_path.string(), options, env, mode);
    std::string refused;
    std::optional<json> entry = load_baseline(options, key, &refused);
    if (!refused.empty()) cache_refused.push_back(fmt::format("the {} baseline: {}", mode, refused));
    bool cached = entry.has_value();
    if (!entry) {
      entry = measure_baseline(reference, options, mode, env.device != "cuda", error);
      if (entry) {
        (*entry)["level"] = pair.level;
        (*entry)["problem_file"] = pair.problem_path.filename().string();
        (*entry)["device_name"] = env.device_name;
        (*entry)["torch_version"] = env.torch_version;
        if (cacheable && baseline_cacheable(*entry)) save_baseline(options, key, *entry);
      }
    }
    if (!entry) {
      baseline_errors[mode] = error;
      continue;
    }
    json st = (*entry)["stats"];
    st["cached"] = cached;
    baselines[mode] = st;
    const std::string& stat = options.protocol.timing.statistic;  // median (kbv) or mean (upstream)
    const double bm = st.value(statistic_key(stat), 0.0), cm = statistic_ms(cs, stat);
    if (bm > 0 && cm > 0) speedup[mode] = bm / cm;
    // Unpaired: the two sample sets resampled apart (a cached entry keeps its samples).
    std::vector<double> base_ms;
    if (entry->contains("samples_ms") && (*entry)["samples_ms"].is_array())
      for (const auto& x : (*entry)["samples_ms"])
        if (x.is_number()) base_ms.push_back(x.get<double>());
    if (std::optional<SpeedupInterval> iv = unpaired_speedup_interval(base_ms, candidate_ms))
      ci[mode] = {iv->low, iv->high};
  }
  timing["baselines"] = baselines;
  timing["speedup"] = speedup;
  if (!ci.empty()) timing["speedup_ci95"] = ci;
  if (!baseline_errors.empty()) timing["baseline_errors"] = baseline_errors;
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

// Paired rounds (timing.pairs > 0, docs/TIMING.md "Paired rounds"): every round a block of each
// baseline and a block of the candidate, baselines first in even rounds and the candidate first in
// odd ones (B A A B B A ...), each block under its share of the stop rule (block_rule). Every
// candidate block is checked as an unpaired run is (counts, wall, call bound, spot checks). While a
// baseline block runs the candidate's worker and everything it started are stopped (SIGSTOP:
// WorkerProcess::freeze) and the reference's scheduling is set back first (T17, T21). Baselines
// are measured, never read from or written to the cache.
void timing_paired(Record& record, const EvalOptions& options, const Environment& env,
                   WorkerProcess& reference, WorkerProcess& candidate, const msg::TimeInputsReply& sets,
                   SeedSource& spot_seeds, const std::string& reject) {
  const TimingProtocol& tp = options.protocol.timing;
  const bool cpu = env.device != "cuda";
  json timing = json::object(), rounds = json::array(), baseline_errors = json::object();
  std::vector<msg::TimeReply> cand_replies;
  std::map<std::string, std::vector<msg::TimeReply>> base_replies;
  std::map<std::string, std::vector<PairedRound>> paired;  // per baseline mode
  std::map<std::string, double> base_others;
  std::map<std::string, json> base_parity;  // per baseline mode: its worker's threads and cpus
  double cand_others = -1, sampling_s = 0;
  BlockChecks checks;
  json budget = json::object();  // the CPU thread budget as the candidate's blocks left it (T25)
  CallBoundCalls bound_calls_all;  // every block's calls: the per-call bound is judged over all (T22)
  std::string failure;
  int done = 0;
  for (int r = 0; r < tp.pairs && failure.empty(); ++r) {
    if (interrupted()) {
      failure = "interrupted";
      break;
    }
    EvalOptions block = options;
    block.protocol.timing.rule = block_rule(tp.rule, tp.pairs, r == 0);
    // The recomputed calls shared out between the blocks (16 over 6: 3 3 3 3 2 2), each block at least one.
    block.protocol.timing.spot_draws = std::max(1, tp.spot_draws / tp.pairs + (r < tp.spot_draws % tp.pairs ? 1 : 0));
    const bool baselines_first = r % 2 == 0;
    json round = {{"round", r}, {"order", baselines_first ? "baselines, candidate" : "candidate, baselines"}};
    json blocks = json::array();
    std::vector<double> cand_ms;
    std::map<std::string, std::vector<double>> base_ms;
    bool rejected = false;

    auto candidate_block = [&] {
      const double t0 = epoch_s();
      CandidateRun run = run_candidate(block, env, reference, candidate, sets, spot_seeds);
      blocks.push_back({{"side", "candidate"}, {"start_s", t0}, {"end_s", epoch_s()}});
      if (std::string why = run_failure(record, run, reject); !why.empty()) {
        failure = why;
        return;
      }
      const msg::TimeReply& cr = *run.timed;
      const Stats bs = stats_of_reply(cr);
      const size_t rejects = reject_count(record);
      json c = json::object();
      check_call_counts(record, c, run, bs, block.protocol.timing, reject);
      add_call_bound_calls(record, bound_calls_all, run, block.protocol.timing, reject);
      note_event_mismatches(record, c, cr, bs);
      spot_check_calls(record, c, run, bs, block, reference, spot_seeds, reject);
      check_thread_budget(record, budget, options, env, reference, candidate, cr, reject);
      checks.add(c);
      rejected = reject_count(record) > rejects;
      if (run.others >= 0) cand_others = std::max(cand_others, run.others);
      sampling_s += cr.sampling_s;
      cand_ms = cr.samples_ms;
      round["candidate"] = {{"median_ms", bs.median_ms}, {"samples", bs.samples}, {"stop", cr.stop}, {"checks", c}};
      cand_replies.push_back(cr);
    };
    auto baseline_blocks = [&] {
      // Nothing of the candidate runs while the baselines are timed; the reference as kbv spawned it.
      const int frozen = candidate.freeze();
      struct Thaw {  // on every way out, an exception from a malformed reply included
        WorkerProcess& w;
        ~Thaw() { w.thaw(); }
      } thaw_after{candidate};
      restore_reference(record, reference);
      json modes = json::object();
      for (const auto& mode : tp.baselines) {
        std::string error;
        const double t0 = epoch_s();
        std::optional<json> entry = measure_baseline(reference, block, mode, cpu, error, r);
        blocks.push_back({{"side", mode}, {"start_s", t0}, {"end_s", epoch_s()}, {"frozen", frozen}});
        if (!entry) {
          baseline_errors[mode] = error;
          continue;
        }
        msg::TimeReply reply;
        reply.samples_ms = (*entry)["samples_ms"].get<std::vector<double>>();
        const json& run = (*entry)["run"];
        if (run.contains("discarded_ms") && run["discarded_ms"].is_array())
          reply.discarded_ms = run["discarded_ms"].get<std::vector<double>>();
        reply.overhead_ms = run.value("overhead_ms", 0.0);
        reply.host_call_ms = run.value("host_call_ms", -1.0);
        base_ms[mode] = reply.samples_ms;
        base_replies[mode].push_back(reply);
        const json& st = (*entry)["stats"];
        for (const char* k : {"threads", "cpus"})  // the reference's own report (thread parity)
          if (st.contains(k)) base_parity[mode][k] = st[k];
        if (st.contains("host_other_cores"))
          base_others[mode] = std::max(base_others.count(mode) ? base_others[mode] : 0.0,
                                       st["host_other_cores"].get<double>());
        modes[mode] = st.value("median_ms", 0.0);
      }
      round["baselines_ms"] = modes;
    };
    if (baselines_first) {
      baseline_blocks();
      candidate_block();
    } else {
      candidate_block();
      if (failure.empty()) baseline_blocks();
    }
    round["blocks"] = blocks;
    rounds.push_back(round);
    if (!failure.empty()) break;
    for (const auto& [mode, ms_] : base_ms) paired[mode].push_back({ms_, cand_ms});
    ++done;
    if (rejected) break;  // the verdict is decided: no more rounds for a candidate already rejected
  }
  timing["rounds"] = rounds;
  if (!failure.empty() || cand_replies.empty()) {
    timing["error"] = failure.empty() ? "no candidate block was timed" : failure;
    record.timing = timing_from_json(timing);
    release_both(options, reference, &candidate);
    return;
  }
  judge_call_bound(record, timing, bound_calls_all, tp, !cpu, reject);
  // The candidate's part is over (T17: nothing of it runs during the device calibration).
  stop_candidate(record, candidate);
  const msg::TimeReply& last = cand_replies.back();
  const Stats cs = pooled_stats(cand_replies);
  timing["method"] = last.method;
  timing["candidate"] = cs.to_json();
  if (cand_others >= 0) timing["candidate"]["host_other_cores"] = std::round(cand_others * 100) / 100;
  for (const char* k : {"threads", "cpus"}) {
    if (budget.contains(k)) timing[k] = budget[k];
    if (budget.contains("candidate") && budget["candidate"].contains(k)) timing["candidate"][k] = budget["candidate"][k];
  }
  checks.write(timing);
  json baselines = json::object(), speedup = json::object(), ci = json::object();
  for (const auto& [mode, replies] : base_replies) {
    const Stats bs = pooled_stats(replies);
    json st = bs.to_json();
    st["cached"] = false;
    st["blocks"] = replies.size();
    if (base_others.count(mode)) st["host_other_cores"] = std::round(base_others[mode] * 100) / 100;
    if (base_parity.count(mode)) st.update(base_parity[mode]);
    baselines[mode] = st;
    const double bm = statistic_ms(bs, tp.statistic), cm = statistic_ms(cs, tp.statistic);
    if (bm > 0 && cm > 0) speedup[mode] = bm / cm;
    if (std::optional<SpeedupInterval> iv = paired_speedup_interval(paired[mode])) ci[mode] = {iv->low, iv->high};
  }
  timing["baselines"] = baselines;
  timing["speedup"] = speedup;
  if (!ci.empty()) timing["speedup_ci95"] = ci;
  if (!baseline_errors.empty()) timing["baseline_errors"] = baseline_errors;
  timing["pairs"] = done;
  note_host_busy(record, timing, cand_others);
  std::vector<std::string> cache_refused;
  check_floor(record, timing, sets, cs, options, env, reference, reject, cache_refused);
  note_cache_refused(record, cache_refused);
  describe_run(timing, last);
  timing["sampling_s"] = sampling_s;
  record.timing = timing_from_json(timing);
  set_runtime(record, cs, env, options.protocol.timing);
  release_both(options, reference, nullptr);
  reject_on_findings(record);
}

}  // namespace

void timing_phase_checked(Record& record, const Pair& pair, const EvalOptions& options, const Environment& env,
                          WorkerProcess& reference, WorkerProcess& candidate);

void timing_phase(Record& record, const Pair& pair, const EvalOptions& options, const Environment& env,
                  WorkerProcess& reference, WorkerProcess& candidate) {
  // The candidate worker's reply is a claim from hostile code: a malformed one is a forged one.
  try {
    timing_phase_checked(record, pair, options, env, reference, candidate);
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
}

void timing_phase_checked(Record& record, const Pair& pair, const EvalOptions& options, const Environment& env,
                          WorkerProcess& reference, WorkerProcess& candidate) {
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
    return timing_paired(record, options, env, reference, candidate, *sets, spot_seeds, reject);
  CandidateRun run = run_candidate(options, env, reference, candidate, *sets, spot_seeds);
  if (std::string why = run_failure(record, run, reject); !why.empty()) return give_up(why);
  const msg::TimeReply& cr = *run.timed;
  const Stats cs = stats_of_reply(cr);
  timing["method"] = cr.method;
  timing["candidate"] = cs.to_json();
  if (run.others >= 0) timing["candidate"]["host_other_cores"] = std::round(run.others * 100) / 100;
  check_call_counts(record, timing, run, cs, options.protocol.timing, reject);
  check_call_bound(record, timing, run, options.protocol.timing, env.device == "cuda", reject);
  note_event_mismatches(record, timing, cr, cs);
  spot_check_calls(record, timing, run, cs, options, reference, spot_seeds, reject);
  check_thread_budget(record, timing, options, env, reference, candidate, cr, reject);
  stop_candidate(record, candidate);
  const bool cacheable = restore_reference(record, reference);
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
