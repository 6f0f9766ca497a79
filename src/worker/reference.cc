#include "worker/reference.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include "check/compare.h"
#include "check/precision.h"
#include "worker/audit.h"
#include "worker/memory.h"
#include "worker/problem_sizes.h"
#include "worker/problem_stats.h"
#include "worker/python.h"

namespace py = pybind11;
using nlohmann::json;

namespace kbv {

bool draws_on_device(const ReferenceState& s, const std::string& input_draw) {
  return s.h.device == "cuda" && input_draw == "device";
}

py::list draw_inputs(ReferenceState& s, uint64_t seed, bool on_device, int draws_before) {
  torch::manual_seed(seed);
  auto draw = [&]() -> py::list {
    for (int k = 0; k < draws_before; ++k) s.h.module.attr("get_inputs")();
    return s.h.module.attr("get_inputs")();
  };
  if (!on_device) return draw();
  py::object ctx = py::module_::import("torch").attr("device")("cuda");
  ctx.attr("__enter__")();
  py::list raw;
  try {
    raw = draw();
  } catch (...) {
    ctx.attr("__exit__")(py::none(), py::none(), py::none());
    throw;
  }
  ctx.attr("__exit__")(py::none(), py::none(), py::none());
  return raw;
}

std::vector<at::Tensor> reference_outputs(ReferenceState& s, const std::vector<py::object>& args, const char* context,
                                          double& seconds) {
  if (s.meta_model)
    throw WorkerError{"protocol_error", "the problem was loaded for its shapes only (a meta-device Model): nothing runs it",
                      ""};
  py::object out = s.h.forward(args, "problem_error", context, seconds);
  Outputs o = flatten_outputs(out);
  if (!o.plain) throw WorkerError{"problem_error", "the reference " + o.reason, ""};
  std::vector<at::Tensor> tensors;
  for (auto& t : o.tensors) tensors.push_back(t.detach());
  return tensors;
}

json fp32_cross_check(ReferenceState& s, const std::vector<py::object>& fp32_args, const std::vector<at::Tensor>& reduced,
                      const Tolerance& tol) {
  py::object saved = s.h.model;
  json result = json::array();
  try {
    s.h.model = s.model_fp32;
    double seconds = 0;
    py::object out = s.h.forward(fp32_args, "problem_error", "the fp32 reference's forward failed", seconds);
    s.h.model = saved;
    Outputs o = flatten_outputs(out);
    for (size_t i = 0; i < reduced.size() && i < o.tensors.size(); ++i) {
      json e = reference_error(reduced[i], o.tensors[i], tol);
      e["output"] = i;
      result.push_back(e);
    }
  } catch (...) {
    s.h.model = saved;
    throw;
  }
  return result;
}

void release_trial(ReferenceState& s) {
  s.h.transfers.clear();
  s.expected.clear();
  s.ref_inputs_after.clear();
  s.shared_inputs.clear();
  s.shared_input_positions.clear();
  // Give cached blocks back to the driver: the other worker on this GPU needs them.
  release_cached_memory(s.h.device);
}

namespace {

// Upstream's _process_input_tensor on init inputs: every tensor `.to(dtype)` (integers and bools
// included), anything else as it is. The cast values are what the reply carries, so ModelNew gets
// the same ones.
py::list cast_init_tensors(const py::list& init, at::ScalarType dtype) {
  py::list cast;
  for (auto item : init) {
    if (THPVariable_Check(item.ptr()))
      cast.append(wrap(THPVariable_Unpack(item.ptr()).to(dtype)));
    else
      cast.append(item);
  }
  return cast;
}

msg::LoadProblemReply load_problem(ReferenceState& s, const msg::LoadRequest& request) {
  Hosted& h = s.h;
  h.set_device(request.device);
  // CPU thread parity: the supervisor pinned this process to the budget's CPUs; as many threads
  // from the start, so the checks do not oversubscribe them (docs/TIMING.md "Thread parity").
  if (h.device != "cuda" && request.cpu_threads > 0) at::set_num_threads(request.cpu_threads);
  worker_memory::begin_ledger(h.device);
  h.choose_precision(request.precision);
  const std::string& path = request.path;
  // Correctness reference in strict FP32 (no TF32 for matmul or cuDNN), or under PyTorch's
  // defaults (cuDNN TF32 on) where the protocol reproduces a harness that leaves them.
  set_matmul_precision(request.reference_precision == "torch-default" ? "torch-default" : "fp32");
  try {
    h.module = exec_source(request.code, path, "kbv_problem");
  } catch (py::error_already_set& e) {
    throw python_error("problem_error", path + ": the problem file does not import", e);
  }
  for (const char* name : {"Model", "get_inputs", "get_init_inputs"})
    if (!py::hasattr(h.module, name))
      throw WorkerError{"problem_error",
                        fmt::format("{}: no `{}` defined; a KernelBench problem defines class Model, "
                                    "get_inputs() and get_init_inputs()",
                                    path, name),
                        ""};
  msg::LoadProblemReply reply;
  if (h.device == "cpu" && py::hasattr(h.module, "KBV_CPU")) {
    py::object sizes = h.module.attr("KBV_CPU");
    if (!py::isinstance<py::dict>(sizes))
      throw WorkerError{"problem_error", path + ": KBV_CPU must be a dict of module globals to override", ""};
    for (auto item : py::cast<py::dict>(sizes)) {
      std::string key = py::str(item.first).cast<std::string>();
      h.module.attr(key.c_str()) = item.second;
      reply.overrides[key] = py::str(py::repr(item.second)).cast<std::string>();
    }
  }
  // Reduced sizes (lint-problems --cpu-sizes), after KBV_CPU and applied the same way.
  if (!request.cpu_sizes.empty()) {
    ReducedSizes r;
    try {
      r = reduced_sizes(h.module, request.cpu_sizes);
    } catch (py::error_already_set& e) {
      throw python_error("problem_error", path + ": reducing the sizes failed", e);
    }
    for (const auto& [key, value] : r.overrides) {
      h.module.attr(key.c_str()) = value;
      reply.overrides[key] = py::str(py::repr(value)).cast<std::string>();
    }
    reply.sizes = r.error.empty() ? r.summary : "not reduced: " + r.error;
    s.size_ladder = r.ladder;
    s.file_input_numel = r.file_input_numel;
  }
  std::string meta_why;  // meta_model: why the Model was built for real
  try {
    torch::manual_seed(request.seed);
    py::list init = h.module.attr("get_init_inputs")();
    if (request.cast_init_inputs) init = cast_init_tensors(init, h.dtype);
    for (auto item : init) reply.init_inputs.push_back(to_wire(item, h.init_transfers, "get_init_inputs()"));
    std::vector<py::object> args;
    for (auto item : init) args.push_back(h.move_to_device(py::reinterpret_borrow<py::object>(item)));
    torch::manual_seed(request.seed);
    at::NoGradGuard no_grad;
    s.meta_model = false;
    if (request.meta_model) {
      // Shapes only: the Model at the file's sizes without its parameters' memory (docs/PROBLEMS.md
      // "Shapes without tensors"), built for real only where the meta device cannot build it.
      MetaModel meta = meta_model(h.module.attr("Model"), py::tuple(py::cast(args)));
      reply.model = meta.model.is_none() ? "real" : "meta";
      reply.model_note = meta_why = meta.why;
      if (!meta.model.is_none()) {
        h.model = meta.model;
        s.meta_model = true;
        return reply;
      }
      torch::manual_seed(request.seed);
    }
    h.model = h.module.attr("Model")(*py::tuple(py::cast(args)));
    h.model = h.model.attr("to")(h.device);
    if (h.precision != "fp32") {
      s.model_fp32 = h.model;
      h.model = h.cast_model(py::module_::import("copy").attr("deepcopy")(h.model));
    }
  } catch (py::error_already_set& e) {
    throw python_error("problem_error",
                       path + ": building the reference Model failed" +
                           (meta_why.empty() ? "" : " (for real, after " + meta_why + ")"),
                       e);
  }
  return reply;
}

// Input shapes and dtypes of one get_inputs() draw (for `kbv problems`): on the meta device (no
// tensor allocated), else a real draw and the reason.
msg::DescribeReply describe(ReferenceState& s, const msg::DescribeRequest& request) {
  torch::manual_seed(request.seed);
  msg::DescribeReply reply;
  try {
    MetaDraw meta = meta_inputs(s.h.module);
    py::list inputs;
    if (meta.inputs.is_none()) {
      reply.draw = "real";
      reply.note = meta.why;
      torch::manual_seed(request.seed);
      inputs = s.h.module.attr("get_inputs")();
    } else {
      inputs = meta.inputs;
    }
    for (auto item : inputs) {
      msg::InputShape shape;
      if (THPVariable_Check(item.ptr())) {
        at::Tensor t = THPVariable_Unpack(item.ptr());
        shape.dtype = dtype_name(t.scalar_type());
        shape.sizes = t.sizes().vec();
      } else {
        shape.value = py::str(py::repr(item)).cast<std::string>();
      }
      reply.inputs.push_back(shape);
    }
  } catch (py::error_already_set& e) {
    throw python_error("problem_error", "get_inputs() failed", e);
  }
  return reply;
}

// Upstream KernelBench: torch.manual_seed(42), then one torch.randint(0, 2**32 - 1) per trial.
msg::KernelbenchSeedsReply kernelbench_seeds(const msg::KernelbenchSeedsRequest& request) {
  torch::manual_seed(42);
  msg::KernelbenchSeedsReply reply;
  for (int i = 0; i < request.n; ++i)
    reply.seeds.push_back(static_cast<uint64_t>(at::randint(0, 4294967295LL, {1}, at::kLong).item<int64_t>()));
  return reply;
}

msg::InputsReply make_inputs(ReferenceState& s, const msg::InputsRequest& request) {
  release_trial(s);
  Hosted& h = s.h;
  py::list raw;
  try {
    raw = draw_inputs(s, request.seed, draws_on_device(s, request.input_draw), request.draws_before);
  } catch (py::error_already_set& e) {
    throw python_error("problem_error", "get_inputs() failed", e);
  }
  if (request.replace == "alternating-pm1") {
    // KernelBench-Verified's D5 of L1/100: torch.ones(batch_size) with [::2] = -1 in place of the
    // argument's draw, batch_size its first dimension.
    const auto k = static_cast<size_t>(request.replace_arg);
    if (request.replace_arg < 0 || k >= raw.size() || !THPVariable_Check(raw[k].ptr()) ||
        THPVariable_Unpack(raw[k].ptr()).dim() < 1)
      throw WorkerError{"problem_error",
                        fmt::format("hidden config: argument {} of get_inputs() is not a tensor with a first dimension "
                                    "to replace with alternating targets",
                                    request.replace_arg),
                        ""};
    at::Tensor targets = at::ones({THPVariable_Unpack(raw[k].ptr()).size(0)}, at::kFloat);
    targets.slice(0, 0, targets.size(0), 2).fill_(-1.0);
    raw[k] = wrap(targets);
  } else if (!request.replace.empty()) {
    throw WorkerError{"protocol_error", "inputs: unknown replacement '" + request.replace + "'", ""};
  }
  msg::InputsReply reply;
  std::vector<py::object> ref_args, fp32_args;
  for (size_t i = 0; i < raw.size(); ++i) {
    py::object item = raw[i];
    if (THPVariable_Check(item.ptr())) {
      at::Tensor t = THPVariable_Unpack(item.ptr());
      // Hidden distributions scale floating inputs only; integer and bool inputs are untouched.
      if (at::isFloatingType(t.scalar_type()) && request.scale != 1.0) t = t.mul(request.scale);
      // Precision modes: scaled in the problem's dtype, then cast (docs/PRECISION.md).
      if (h.precision != "fp32") t = cast_floating(t, h.dtype);
      // Upstream's _process_input_tensor casts every tensor, integers and bools included.
      if (request.cast_integer_inputs && !at::isFloatingType(t.scalar_type())) t = t.to(h.dtype);
      t = t.to(h.torch_device());
      at::Tensor view;
      reply.args.push_back(h.transfers.export_tensor(t, &view));
      s.shared_inputs.push_back(view);
      s.shared_input_positions.push_back(static_cast<int>(i));
      // The reference computes on `t` itself (a tensor only this worker holds): the shared
      // buffer already keeps the pristine values, so no further copy is made.
      s.ref_inputs_after.push_back(t);
      ref_args.push_back(wrap(t));
    } else {
      reply.args.push_back(to_wire(item, h.transfers, "get_inputs()"));
      ref_args.push_back(item);
    }
    if (h.precision != "fp32") fp32_args.push_back(h.fp32_arg(ref_args.back()));
  }
  s.expected = reference_outputs(s, ref_args, "the reference Model's forward failed", reply.reference_seconds);
  reply.outputs = s.expected.size();
  reply.output_aliases = storage_overlaps(s.expected, s.ref_inputs_after, s.shared_input_positions);
  if (h.precision != "fp32")
    reply.reference_error = fp32_cross_check(s, fp32_args, s.expected, tolerance_from(request.tolerance, 1e-2));
  return reply;
}

msg::CheckReply check(ReferenceState& s, const msg::CheckRequest& request) {
  Tolerance tol = tolerance_from(request.tolerance, 1e-3);
  const json& outs = request.outputs;
  if (!outs.is_array()) throw WorkerError{"protocol_error", "check: 'outputs' is not a list", ""};
  msg::CheckReply reply;
  reply.passed = true;
  if (outs.size() != s.expected.size()) {
    reply.passed = false;
    reply.reason = fmt::format("the candidate returned {} output(s) where the reference returns {}", outs.size(),
                               s.expected.size());
  } else {
    for (size_t i = 0; i < outs.size(); ++i) {
      at::Tensor actual = s.h.transfers.import_copy(outs[i]);  // a truncated file: an error, never SIGBUS
      Comparison c = compare_tensors(s.expected[i], actual, tol);
      json cj = c.to_json();
      cj["output"] = i;
      reply.comparisons.push_back(cj);
      if (!c.passed && reply.passed) {
        reply.passed = false;
        reply.reason = s.expected.size() > 1 ? fmt::format("output {}: {}", i, c.reason) : c.reason;
      }
    }
  }
  // Inputs must be as the reference left its own copy (unchanged unless the reference mutates them).
  // Read through the file: an input the candidate truncated is a changed input, not a dead reference.
  for (size_t k = 0; k < s.shared_inputs.size(); ++k) {
    std::optional<at::Tensor> now = s.h.transfers.read_export(s.shared_inputs[k]);
    if (!now || !same_values(s.ref_inputs_after[k], *now)) reply.mutated_inputs.push_back(s.shared_input_positions[k]);
  }
  return reply;
}

// Memory of a few untimed calls on the reference's own draw from `seed` (drawn as `input_draw`
// says) under the baseline's precision ("tf32" | "fp32") (docs/MEMORY.md).
msg::MeasureReply measure(ReferenceState& s, const msg::MeasureRequest& request) {
  if (!request.seed) throw WorkerError{"protocol_error", "a malformed 'measure' request: the reference needs 'seed'", ""};
  release_trial(s);
  int64_t before = worker_memory::torch_allocated(s.h.device);
  std::vector<py::object> args;
  try {
    for (auto item : draw_inputs(s, *request.seed, draws_on_device(s, request.input_draw)))
      args.push_back(s.h.move_to_device(py::reinterpret_borrow<py::object>(item)));
  } catch (py::error_already_set& e) {
    throw python_error("problem_error", "get_inputs() failed", e);
  }
  json result = s.h.measure_calls(std::move(args), before, request.repeats, false, request.baseline == "tf32",
                                  "problem_error");
  msg::MeasureReply reply;
  if (std::string e = msg::from_json(result, reply); !e.empty())
    throw WorkerError{"runtime_error", "the memory measurement's result: " + e, ""};
  return reply;
}

}  // namespace

OpTable reference_ops(ReferenceState& s) {
  OpTable ops;
  ops[msg::Op::load] = typed_handler<msg::LoadRequest>([&s](const auto& r) { return load_problem(s, r); });
  ops[msg::Op::describe] = typed_handler<msg::DescribeRequest>([&s](const auto& r) { return describe(s, r); });
  ops[msg::Op::kernelbench_seeds] =
      typed_handler<msg::KernelbenchSeedsRequest>([](const auto& r) { return kernelbench_seeds(r); });
  ops[msg::Op::inputs] = typed_handler<msg::InputsRequest>([&s](const auto& r) { return make_inputs(s, r); });
  ops[msg::Op::check] = typed_handler<msg::CheckRequest>([&s](const auto& r) { return check(s, r); });
  ops[msg::Op::release] = typed_handler<msg::ReleaseRequest>([&s](const auto&) {
    release_trial(s);
    return msg::Done{};
  });
  ops[msg::Op::measure] = typed_handler<msg::MeasureRequest>([&s](const auto& r) { return measure(s, r); });
  ops[msg::Op::lint] = typed_handler<msg::LintRequest>([&s](const auto& r) {
    release_trial(s);
    return problem_statistics(s, r);
  });
  add_reference_timing_ops(s, ops);
  return ops;
}

}  // namespace kbv
