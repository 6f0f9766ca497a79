// The measure phase (memory_phase.h).
#include "supervisor/memory_phase.h"

#include <chrono>

#include <fmt/format.h>

#include "util/clock.h"

#include "measure/compute.h"
#include "measure/memory.h"

namespace kbv {
using nlohmann::json;

namespace {

std::string why(const Reply& r) {
  if (r.status == Reply::Status::failed) return msg::failure_of(r.body).message;
  return r.detail.empty() ? std::string("the worker did not answer") : r.detail;
}

json not_measured(const std::string& reason) { return json{{"measured", false}, {"reason", reason}}; }

}  // namespace

std::optional<Finding> merge_compute(Record& record, const json& compute, bool upstream) {
  if (!compute.is_object()) return std::nullopt;
  bool ours_measured = compute.value("method", "") == "cupti";
  if (ours_measured || !record.compute) record.compute = compute;
  if (!ours_measured) return std::nullopt;
  json found = compute::no_custom_compute_finding(compute);
  if (!found.is_object()) return std::nullopt;
  Finding finding = Finding::from_json(found);
  if (upstream) {
    finding.severity = "warn";
    finding.message +=
        " (a warning: --protocol kernelbench and the other upstream protocols reproduce upstream, which has no "
        "runtime audits)";
  }
  return finding;
}

void measure_phase(Record& record, WorkerProcess& cand, WorkerProcess& ref, const EvalOptions& options, uint64_t seed) {
  auto t0 = std::chrono::steady_clock::now();
  const Timeouts& t = options.timeouts;
  const double calls = kMemoryRepeats + 1;
  json candidate;
  // The candidate computes on a draw made by the reference (as in the checks), the baselines on
  // the same draw (same seed, same kMeasuredDraw) made in the reference's own measure call.
  msg::InputsRequest draw;
  draw.seed = seed;
  draw.input_draw = kMeasuredDraw;
  Reply in = ref.call(msg::to_json(draw), ms(t.reference_s));
  std::optional<msg::InputsReply> drawn = reply_as<msg::InputsReply>(in);
  if (!drawn) {
    candidate = not_measured("the reference could not draw inputs for the measured calls: " + why(in));
  } else {
    msg::MeasureRequest measure;
    measure.args = drawn->args;
    measure.repeats = kMemoryRepeats;
    Reply m = cand.call(msg::to_json(measure), ms(t.call_s * calls));
    if (std::optional<msg::MeasureReply> measured = reply_as<msg::MeasureReply>(m); !measured) {
      candidate = not_measured("the candidate's measured calls failed: " + why(m));
    } else {
      candidate = measured->memory;
      if (measured->compute) {
        if (auto finding = merge_compute(record, *measured->compute, options.protocol.extra_checks == "warn"))
          record.findings.push_back(*finding);
      }
    }
    cand.call(msg::to_json(msg::ReleaseRequest{}), ms(t.call_s));
  }
  ref.call(msg::to_json(msg::ReleaseRequest{}), ms(t.reference_s));
  json baselines = json::object();
  for (const char* baseline : {"tf32", "fp32"}) {
    msg::MeasureRequest measure;
    measure.seed = seed;
    measure.baseline = baseline;
    measure.repeats = kMemoryRepeats;
    measure.input_draw = kMeasuredDraw;
    Reply b = ref.call(msg::to_json(measure), ms(t.reference_s * calls));
    std::optional<msg::MeasureReply> measured = reply_as<msg::MeasureReply>(b);
    baselines[baseline] = measured
                              ? measured->memory
                              : not_measured(fmt::format("the {} baseline's measured calls failed: {}", baseline, why(b)));
  }
  memory::MemoryVerdict v = memory::memory_verdict(candidate, baselines);
  record.memory = memory_from_json(v.memory);
  for (const auto& f : v.findings) record.findings.push_back(Finding::from_json(f));
  record.seconds = record.seconds.value_or(0.0) +
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace kbv
