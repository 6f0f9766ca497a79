// The baseline timing and its cache: the timing request's settings, the timing inputs, one
// baseline mode timed in the reference worker, the sealed baseline cache and device calibration,
// and the unpaired baselines of one evaluation (cached per problem content, device, versions and
// protocol).
#include "supervisor/timing_phase.h"

#include <cmath>

#include <fmt/format.h>

#include "measure/interval.h"
#include "measure/statistic.h"
#include "store/sealed.h"
#include "supervisor/session.h"
#include "supervisor/timing_parts.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/host_load.h"
#include "util/sched.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

msg::TimingSettings rule_request(const EvalOptions& o) {
  return {o.protocol.timing.rule, o.protocol.timing.flush_bytes, o.protocol.timing.launch_hold_us,
          o.cpu.threads, o.protocol.timing.l2_flush,
          o.protocol.timing.loop == kLoopUpstream};
}

// A whole timing request may take the warm-up, the time cap and a few calls beyond it.
std::chrono::milliseconds timing_timeout(const EvalOptions& o) {
  const StopRule& r = o.protocol.timing.rule;
  return ms(o.timeouts.call_s * (r.warmup + std::max(r.min_samples_at_cap, r.calls) + 3) + 2 * r.time_cap_s + 60);
}

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
  t.pairs = 0;  // cached baselines are unpaired ones, timed by the reference
  t.baseline_worker = TimingProtocol{}.baseline_worker;
  t.statistic = TimingProtocol{}.statistic;  // an entry keeps every statistic: reading another re-times nothing
  if (env.device != "cuda") t.launch_hold_us = 0;  // the hold is a GPU kernel: the CPU engine has none
  // The CPU thread budget as the evaluation resolved it (0 means every CPU, whose count differs
  // between hosts); it times nothing on the GPU.
  t.cpu_threads = env.device == "cuda" ? 0 : options.cpu.threads;
  // 2: CPU baselines time their calls between the candidate's round trips (TimeReferenceRequest::marks).
  std::vector<std::string> parts = {"kbv-baseline-2", problem_text, env.device, env.device_name, env.torch_version,
                                     env.python_version, t.to_json().dump(), kMeasuredDraw, "fp32", mode,
                                     kWorkerMallocTunables};
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

json BaselineMarks::answer(const json& ask) {
  if (order.due(ask) < 0)
    return msg::to_json(msg::Failure{"protocol_error",
                                     fmt::format("baseline timing asks come in call order (draw, start, end): got "
                                                 "{} for call {}",
                                                 ask.dump().substr(0, 120), order.calls),
                                     ""});
  order.served();
  return msg::to_json(msg::Done{});
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
  // The process that runs the worker's code: a confined worker (the baselines' twin) runs it in a
  // PID namespace, under a process of its own that uses no CPU.
  if (cpu) load.emplace(std::vector<int>{reference.program_pid()});
  // On the CPU the baseline's calls make the candidate's round trips too (its draw, start and end
  // answered here in call order): a thread that blocked pays for it on its next call, and the
  // candidate's worker blocks around every call (docs/TIMING.md "Symmetric marks").
  req.marks = cpu;
  BaselineMarks marks(req.fresh_seed.has_value());
  Reply r = reference.call(msg::to_json(req), timeout, [&marks](const json& ask) { return marks.answer(ask); });
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
    if (std::optional<SpeedupInterval> iv = unpaired_speedup_interval(base_ms, candidate_ms, stat))
      ci[mode] = {iv->low, iv->high};
  }
  timing["baselines"] = baselines;
  timing["speedup"] = speedup;
  if (!ci.empty()) timing["speedup_ci95"] = ci;
  if (!baseline_errors.empty()) timing["baseline_errors"] = baseline_errors;
}

}  // namespace kbv
