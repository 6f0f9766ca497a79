#include "supervisor/audit_stage.h"

#include <chrono>

#include <fmt/format.h>

#include "util/clock.h"

#include "check/runtime_audit.h"

namespace kbv {
using nlohmann::json;

namespace {

// The audit holds a few more copies of inputs and outputs than a trial: running out of device
// memory there says nothing about the candidate.
bool out_of_memory(const Reply& r) {
  return r.status == Reply::Status::failed && msg::failure_of(r.body).message.find("out of memory") != std::string::npos;
}
}  // namespace

AuditOutcome run_runtime_audit(WorkerProcess& ref, WorkerProcess& cand, const EvalOptions& options,
                               const std::string& device, uint64_t seed_a, uint64_t seed_b) {
  AuditOutcome out;
  auto t0 = std::chrono::steady_clock::now();
  const Protocol& p = options.protocol;
  auto incomplete = [&](const std::string& what, const Reply& r) {
    out.details["incomplete"] =
        fmt::format("{}: {}", what, r.status == Reply::Status::failed ? msg::failure_of(r.body).message : r.detail);
    ref.call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.reference_s));
    cand.call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.call_s));
    return out;
  };
  // Draw A from the protocol's last distribution (kbv: D4, x-1; kernelbench: D1), so that lanes a
  // kernel skips on one sign are exercised by the repeat; draw B from the first (D1).
  double scale_a = p.distributions.empty() ? 1.0 : p.distributions.back().scale;
  double scale_b = p.distributions.empty() ? 1.0 : p.distributions.front().scale;
  out.details["draws"] = {{"a_scale", scale_a}, {"b_scale", scale_b}};
  // The first phase on draw A; an audit that could not decide (too few samples, a disturbed
  // sampler: check/runtime_audit.h audit_undecided) is run once more, then recorded as such.
  json reference_aliases;
  std::optional<msg::AuditReply> first_seen;
  std::string undecided;
  for (int attempt = 0; attempt < 2; ++attempt) {
    msg::InputsRequest draw_a;
    draw_a.seed = seed_a;
    draw_a.scale = scale_a;
    draw_a.input_draw = p.input_draw;
    Reply a = ref.call(msg::to_json(draw_a), ms(options.timeouts.reference_s));
    std::optional<msg::InputsReply> inputs_a = reply_as<msg::InputsReply>(a);
    if (!inputs_a) return incomplete("the reference's audit draw failed", a);
    reference_aliases = inputs_a->output_aliases;
    // The first phase makes several calls (sampling 5 s of wall time, up to 30 s on a loaded host,
    // threads watched 300 ms): the sampler's longest on top of the calls' own limit.
    Reply first = cand.call(msg::to_json(msg::AuditRequest{"first", inputs_a->args, {}}),
                            ms(options.timeouts.call_s * 2 + 10 + kSamplingMaxWallS));
    first_seen = reply_as<msg::AuditReply>(first);
    ref.call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.reference_s));
    if (out_of_memory(first)) return incomplete("the audit's calls ran out of memory", first);
    if (!first_seen) {
      out.candidate_failure = first;
      out.failure_context = "runtime audit (calls on fresh copies of a new draw)";
      return out;
    }
    const json obs = first_seen->observed.value("compute", json::object());
    undecided = audit_undecided(obs, obs.value("method", "") == "cpu-sampling" ? cpu_compute(obs) : json());
    if (undecided.empty()) break;
    if (!out.details.contains("undecided_runs")) out.details["undecided_runs"] = json::array();
    out.details["undecided_runs"].push_back(undecided);
  }
  if (!undecided.empty()) {
    out.details["undecided"] = undecided;
    out.findings.push_back(make_finding(
        "audit_undecided", p.extra_checks,
        undecided + ", twice: an audit that cannot decide is not a pass (what ran could not be attributed)",
        "CPU sampling of the audited calls (audit.undecided)", "T23"));
  }
  // Draw B: A again on fresh poisoned buffers, then those buffers overwritten with B.
  msg::InputsRequest draw_b;
  draw_b.seed = seed_b;
  draw_b.scale = scale_b;
  draw_b.input_draw = p.input_draw;
  Reply b = ref.call(msg::to_json(draw_b), ms(options.timeouts.reference_s));
  std::optional<msg::InputsReply> inputs_b = reply_as<msg::InputsReply>(b);
  if (!inputs_b) return incomplete("the reference's second audit draw failed", b);
  Reply second = cand.call(msg::to_json(msg::AuditRequest{"second", inputs_b->args, p.wire_tolerance()}),
                           ms(options.timeouts.call_s * 2));
  if (out_of_memory(second)) return incomplete("the audit's calls ran out of memory", second);
  std::optional<msg::AuditReply> second_seen = reply_as<msg::AuditReply>(second);
  if (!second_seen) {
    ref.call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.reference_s));
    out.candidate_failure = second;
    out.failure_context = "runtime audit (repeat on fresh buffers, then the same buffers with new values)";
    return out;
  }
  json stale_check = nullptr;
  if (second_seen->outputs && second_seen->outputs->is_array()) {
    Reply chk = ref.call(msg::to_json(msg::CheckRequest{*second_seen->outputs, p.wire_tolerance()}),
                         ms(options.timeouts.reference_s));
    std::optional<msg::CheckReply> checked = reply_as<msg::CheckReply>(chk);
    if (!checked) {
      // A malformed handle is the candidate's; anything else (the reference running out of
      // device memory included) leaves the audit incomplete.
      if (out_of_memory(chk)) return incomplete("checking the same-storage call ran out of memory", chk);
      if (chk.status == Reply::Status::failed && msg::failure_of(chk.body).kind == "runtime_error") {
        out.candidate_failure = chk;
        out.failure_context = "runtime audit (checking the same-storage call)";
        cand.call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.call_s));
        ref.call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.reference_s));
        return out;
      }
      return incomplete("checking the same-storage call failed", chk);
    }
    stale_check = {{"passed", checked->passed}, {"reason", checked->reason}, {"comparisons", checked->comparisons}};
  }
  cand.call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.call_s));
  ref.call(msg::to_json(msg::ReleaseRequest{}), ms(options.timeouts.reference_s));

  json observed = first_seen->observed;
  for (const char* k : {"determinism", "determinism_note", "same_as_previous", "stale_skipped", "ablation"})
    if (second_seen->observed.contains(k)) observed[k] = second_seen->observed[k];
  json compute_obs = observed.value("compute", json::object());
  if (compute_obs.value("method", "") == "cpu-sampling") out.compute = cpu_compute(compute_obs);
  else if (device != "cuda") out.compute = cpu_compute(compute_obs);  // not_measured, with its reason
  for (const auto& f : runtime_findings(observed, reference_aliases, stale_check, out.compute))
    out.findings.push_back(Finding::from_json(f));

  out.details["threads"] = observed.value("threads", json::array());
  out.details["aliases"] = observed.value("aliases", json::array());
  out.details["reference_aliases"] = reference_aliases;
  out.details["determinism"] = observed.value("determinism", json::array());
  if (observed.contains("stale_skipped")) out.details["stale_skipped"] = observed["stale_skipped"];
  if (observed.contains("ablation")) out.details["ablation"] = observed["ablation"];
  if (observed.contains("own_calls")) out.details["own_calls"] = observed["own_calls"];
  if (stale_check.is_object()) out.details["same_storage_new_values"] = stale_check;
  out.details["calls"] = compute_obs.value("calls", 1) + 2;
  out.details["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace kbv
