#include "worker/candidate.h"

#include <ATen/Parallel.h>

#include "worker/build_role.h"
#include "worker/memory.h"
#include "worker/python.h"

namespace py = pybind11;
using nlohmann::json;

namespace kbv {

void release_trial(CandidateState& s) {
  s.h.transfers.clear();
  release_cached_memory(s.h.device);
}

namespace {

std::vector<py::object> args_from_wire(Hosted& h, const json& wire) {
  if (!wire.is_array()) throw WorkerError{"protocol_error", "'args' is not a list of wire values", ""};
  std::vector<py::object> args;
  for (const auto& a : wire) args.push_back(from_wire(a, h.transfers));
  return args;
}

msg::LoadCandidateReply load_candidate(CandidateState& s, const msg::LoadRequest& request) {
  if (!request.init_inputs || !request.init_inputs->is_array())
    throw WorkerError{"protocol_error", "a malformed 'load' request: the candidate needs 'init_inputs' (a list)", ""};
  Hosted& h = s.h;
  worker_memory::begin_ledger(request.device);
  h.choose_precision(request.precision);
  msg::BuildReply built = build_solution(msg::BuildRequest{request.path, request.code, request.device}, h.module);
  h.set_device(request.device);
  // CPU thread parity (docs/TIMING.md "Thread parity"): the budget's threads before ModelNew exists.
  if (h.device != "cuda" && request.cpu_threads > 0) at::set_num_threads(request.cpu_threads);
  try {
    std::vector<py::object> args;
    for (const auto& a : *request.init_inputs) args.push_back(h.move_to_device(from_wire(a, h.init_transfers)));
    torch::manual_seed(request.seed);
    at::NoGradGuard no_grad;
    h.model = h.module.attr("ModelNew")(*py::tuple(py::cast(args)));
    h.model = h.model.attr("to")(h.device);
    h.model = h.cast_model(h.model);  // built as the reference is: fp32 construction, then the cast
  } catch (py::error_already_set& e) {
    throw python_error("runtime_error", request.path + ": constructing ModelNew failed", e);
  }
  return msg::LoadCandidateReply{built.seconds};
}

msg::RunReply run(CandidateState& s, const msg::RunRequest& request) {
  release_trial(s);
  Hosted& h = s.h;
  std::vector<py::object> args = args_from_wire(h, request.args);
  msg::RunReply reply;
  py::object out = h.forward(args, "runtime_error", "ModelNew.forward raised", reply.seconds);
  Outputs outputs = flatten_outputs(out);
  if (!outputs.plain) throw WorkerError{"rejected", outputs.reason, ""};
  for (auto& t : outputs.tensors) reply.outputs.push_back(h.transfers.export_tensor(t));
  sync_device(h.device);
  outputs.tensors.clear();
  out = py::none();
  release_cached_memory(h.device);
  return reply;
}

// Memory and kernel attribution of a few untimed calls on the inputs it is handed (docs/MEMORY.md).
msg::MeasureReply measure(CandidateState& s, const msg::MeasureRequest& request) {
  if (!request.args) throw WorkerError{"protocol_error", "a malformed 'measure' request: the candidate needs 'args'", ""};
  release_trial(s);
  int64_t before = worker_memory::torch_allocated(s.h.device);
  std::vector<py::object> args = args_from_wire(s.h, *request.args);
  json result = s.h.measure_calls(std::move(args), before, request.repeats, true, false, "runtime_error");
  msg::MeasureReply reply;
  if (std::string e = msg::from_json(result, reply); !e.empty())
    throw WorkerError{"runtime_error", "the memory measurement's result: " + e, ""};
  return reply;
}

// Runtime audits after the trials passed (worker/audit.h): phase "first" on draw A, then
// "second" on draw B, whose outputs are exported for the reference to check.
msg::AuditReply audit_call(CandidateState& s, const msg::AuditRequest& request) {
  release_trial(s);
  Hosted& h = s.h;
  std::vector<py::object> args = args_from_wire(h, request.args);
  ForwardFn call = [&](const std::vector<py::object>& call_args) {
    double seconds = 0;
    py::object out = h.forward(call_args, "runtime_error", "ModelNew.forward raised during the runtime audit", seconds);
    Outputs o = flatten_outputs(out);
    if (!o.plain) throw WorkerError{"rejected", o.reason, ""};
    return o.tensors;
  };
  json observed = request.phase == "first"
                      ? s.audit.first(args, call, h.device)
                      : s.audit.second(args, call, h.device, tolerance_from(request.tolerance, 1e-3), h.transfers);
  msg::AuditReply reply;
  if (std::string e = msg::from_json(observed, reply); !e.empty())
    throw WorkerError{"runtime_error", "the audit's observations: " + e, ""};
  return reply;
}

}  // namespace

OpTable candidate_ops(CandidateState& s) {
  OpTable ops;
  ops[msg::Op::load] = typed_handler<msg::LoadRequest>([&s](const auto& r) { return load_candidate(s, r); });
  ops[msg::Op::run] = typed_handler<msg::RunRequest>([&s](const auto& r) { return run(s, r); });
  ops[msg::Op::audit] = typed_handler<msg::AuditRequest>([&s](const auto& r) { return audit_call(s, r); });
  ops[msg::Op::measure] = typed_handler<msg::MeasureRequest>([&s](const auto& r) { return measure(s, r); });
  ops[msg::Op::release] = typed_handler<msg::ReleaseRequest>([&s](const auto&) {
    release_trial(s);
    return msg::Done{};
  });
  add_candidate_timing_ops(s, ops);
  return ops;
}

}  // namespace kbv
