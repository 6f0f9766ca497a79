// The kbv worker: a Python extension module whose C++ runs the harness (DESIGN.md, "worker").
// Python only hosts the problem or the candidate; every decision (inputs, seeds, comparisons,
// what is sent where) is made here, in C++, from messages on fds 3 (in) and 4 (out).
//
// Roles:
//   reference  loads the problem (trusted); makes inputs and expected outputs; judges outputs.
//   candidate  loads the candidate; computes on the inputs it is handed; exports its outputs.
//   build      imports the candidate once so that load_inline compiles it into the cache.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/extension.h>
#include <torch/utils.h>

#ifdef KBV_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime.h>
#endif

#include "check/compare.h"
#include "check/precision.h"
#include "proto/channel.h"
#include "worker/timing.h"
#include "worker/memory.h"
#include "worker/audit.h"
#include "worker/transfer.h"

namespace py = pybind11;
using nlohmann::json;

namespace kbv {
namespace {

// An error that becomes a {"ok": false} reply.
struct WorkerError {
  std::string kind;  // problem_error, runtime_error, compile_error, protocol_error, rejected
  std::string message;
  std::string traceback;
};

json error_reply(const WorkerError& e) {
  json j = {{"ok", false}, {"kind", e.kind}, {"message", e.message}};
  if (!e.traceback.empty()) j["traceback"] = e.traceback;
  return j;
}

// The text of the Python exception in flight, with its traceback.
WorkerError python_error(const std::string& kind, const std::string& context, py::error_already_set& e) {
  WorkerError w{kind, "", ""};
  try {
    py::module_ tb = py::module_::import("traceback");
    py::list lines = tb.attr("format_exception")(e.type(), e.value(), e.trace());
    for (auto& l : lines) w.traceback += py::str(l).cast<std::string>();
    py::list last = tb.attr("format_exception_only")(e.type(), e.value());
    std::string exc;
    for (auto& l : last) exc += py::str(l).cast<std::string>();
    while (!exc.empty() && exc.back() == '\n') exc.pop_back();
    w.message = context + ": " + exc;
  } catch (...) {
    w.message = context + ": " + e.what();
  }
  return w;
}

void sync_device(const std::string& device) {
#ifdef KBV_WITH_CUDA
  if (device == "cuda") {
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess)
      throw WorkerError{"runtime_error", fmt::format("CUDA error after the call: {}", cudaGetErrorString(err)),
                        ""};
  }
#else
  (void)device;
#endif
}

void release_cached_memory(const std::string& device) {
#ifdef KBV_WITH_CUDA
  if (device == "cuda") c10::cuda::CUDACachingAllocator::emptyCache();
#else
  (void)device;
#endif
}

py::object exec_source(const std::string& code, const std::string& filename, const std::string& module_name) {
  py::module_ types = py::module_::import("types");
  py::module_ builtins = py::module_::import("builtins");
  py::object module = types.attr("ModuleType")(module_name);
  module.attr("__file__") = filename;
  py::module_::import("sys").attr("modules")[py::str(module_name)] = module;
  py::object compiled = builtins.attr("compile")(code, filename, "exec");
  builtins.attr("exec")(compiled, module.attr("__dict__"));
  return module;
}

// Plain values (ints, floats, strings, None, lists of them) as JSON; tensors as handles.
json to_wire(py::handle value, TransferSet& transfers, const std::string& what) {
  if (THPVariable_Check(value.ptr())) return transfers.export_tensor(THPVariable_Unpack(value.ptr()));
  if (value.is_none()) return json{{"kind", "value"}, {"value", nullptr}};
  if (py::isinstance<py::bool_>(value)) return json{{"kind", "value"}, {"value", value.cast<bool>()}};
  if (py::isinstance<py::int_>(value)) return json{{"kind", "value"}, {"value", value.cast<int64_t>()}};
  if (py::isinstance<py::float_>(value)) return json{{"kind", "value"}, {"value", value.cast<double>()}};
  if (py::isinstance<py::str>(value)) return json{{"kind", "value"}, {"value", value.cast<std::string>()}};
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    json items = json::array();
    for (auto item : value) items.push_back(to_wire(item, transfers, what));
    return json{{"kind", py::isinstance<py::tuple>(value) ? "tuple" : "list"}, {"items", items}};
  }
  throw WorkerError{"problem_error",
                    fmt::format("{} contains a value of type {} that kbv cannot pass between workers", what,
                                py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>()),
                    ""};
}

py::object from_wire(const json& j, TransferSet& transfers, const std::string& device) {
  std::string kind = j.value("kind", "");
  if (kind == "tensor") {
    at::Tensor t = transfers.import_tensor(j);
    return py::reinterpret_steal<py::object>(THPVariable_Wrap(t));
  }
  if (kind == "list" || kind == "tuple") {
    py::list items;
    for (const auto& item : j.at("items")) items.append(from_wire(item, transfers, device));
    if (kind == "tuple") return py::tuple(items);
    return items;
  }
  if (kind != "value") throw WorkerError{"protocol_error", "unknown argument kind '" + kind + "'", ""};
  const json& v = j.at("value");
  if (v.is_null()) return py::none();
  if (v.is_boolean()) return py::bool_(v.get<bool>());
  if (v.is_number_integer()) return py::int_(v.get<int64_t>());
  if (v.is_number()) return py::float_(v.get<double>());
  if (v.is_string()) return py::str(v.get<std::string>());
  throw WorkerError{"protocol_error", "unsupported value in an argument", ""};
}

// The outputs of a forward call as a flat list of tensors; `plain` is false (with a reason)
// when an output is not a plain dense torch.Tensor (cheat T3: subclasses, lazy outputs).
struct Outputs {
  std::vector<at::Tensor> tensors;
  bool plain = true;
  std::string reason;
};

Outputs flatten_outputs(py::handle out, py::handle tensor_type) {
  Outputs o;
  auto add = [&](py::handle item, size_t index) {
    if (!THPVariable_Check(item.ptr())) {
      o.plain = false;
      o.reason = fmt::format("output {} is a {}, not a torch.Tensor", index,
                             py::str(py::type::handle_of(item).attr("__name__")).cast<std::string>());
      return;
    }
    if (!py::type::handle_of(item).is(tensor_type)) {
      o.plain = false;
      o.reason = fmt::format("output {} is an instance of {}, a subclass of torch.Tensor; outputs must be plain "
                             "tensors (a subclass can defer or fake its values)",
                             index, py::str(py::type::handle_of(item).attr("__name__")).cast<std::string>());
      return;
    }
    at::Tensor t = THPVariable_Unpack(item.ptr());
    if (t.layout() != at::kStrided) {
      o.plain = false;
      o.reason = fmt::format("output {} has a non-dense layout", index);
      return;
    }
    o.tensors.push_back(t);
  };
  if (py::isinstance<py::tuple>(out) || py::isinstance<py::list>(out)) {
    size_t i = 0;
    for (auto item : out) add(item, i++);
  } else {
    add(out, 0);
  }
  return o;
}

// The comparison tolerance a request carries (`atol`, `rtol`, `rel_l2`, `use_rel_l2`), with
// `fallback` for the three bounds it leaves out.
Tolerance tolerance_from(const json& request, double fallback) {
  Tolerance tol;
  tol.atol = request.value("atol", fallback);
  tol.rtol = request.value("rtol", fallback);
  tol.rel_l2 = request.value("rel_l2", fallback);
  tol.use_rel_l2 = request.value("use_rel_l2", true);
  return tol;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---------------------------------------------------------------------------------------------
struct Worker {
  std::string role;
  std::string device = "cpu";
  py::object module;
  py::object model;
  TransferSet init_transfers;  // init inputs, alive as long as the model
  TransferSet transfers;       // per trial, cleared by "release"
  // Reference only:
  std::vector<at::Tensor> expected;
  std::vector<at::Tensor> ref_inputs_after;  // the reference's inputs after its own call
  std::vector<at::Tensor> shared_inputs;     // what the candidate sees (views on shared buffers)
  std::vector<int> shared_input_positions;   // argument index of each shared input
  CandidateAudit audit;                      // candidate only: the runtime audits (worker/audit.h)
  // Precision mode (docs/PRECISION.md): "fp32", "bf16" or "fp16". Below fp32 the reference keeps
  // its fp32 model in `model_fp32` to measure its own error (reference_error).
  std::string precision = "fp32";
  at::ScalarType dtype = at::kFloat;
  py::object model_fp32;

  void choose_precision(const json& request) {
    precision = request.value("precision", "fp32");
    auto t = precision_scalar_type(precision);
    if (!t) throw WorkerError{"protocol_error", "unknown precision " + precision, ""};
    dtype = *t;
  }

  // The loaded model with its floating parameters and buffers cast to the precision's dtype
  // (nn.Module.to(dtype) leaves integer buffers alone).
  py::object cast_model(py::object m) {
    if (precision == "fp32") return m;
    py::module_ torch = py::module_::import("torch");
    return m.attr("to")(torch.attr(precision == "bf16" ? "bfloat16" : "float16"));
  }

  // Below fp32: the fp32 model on `fp32_args` (the evaluated inputs cast back to float32, taken
  // before the reference's call), compared with the reduced-precision outputs, per output.
  json fp32_cross_check(const std::vector<py::object>& fp32_args, const std::vector<at::Tensor>& reduced,
                        const Tolerance& tol) {
    py::object saved = model;
    json result = json::array();
    try {
      model = model_fp32;
      double seconds = 0;
      py::object out = forward(fp32_args, "problem_error", "the fp32 reference's forward failed", seconds);
      model = saved;
      Outputs o = flatten_outputs(out, py::module_::import("torch").attr("Tensor"));
      for (size_t i = 0; i < reduced.size() && i < o.tensors.size(); ++i) {
        json e = reference_error(reduced[i], o.tensors[i], tol);
        e["output"] = i;
        result.push_back(e);
      }
    } catch (...) {
      model = saved;
      throw;
    }
    return result;
  }

  // A copy of an evaluated argument as the fp32 model takes it: reduced floating tensors back to
  // float32, other tensors cloned (the reference's call may change them), values as they are.
  py::object fp32_arg(py::handle item) {
    if (!THPVariable_Check(item.ptr())) return py::reinterpret_borrow<py::object>(item);
    at::Tensor t = THPVariable_Unpack(item.ptr());
    at::Tensor c = t.scalar_type() == dtype ? t.to(at::kFloat) : t.clone();
    return py::reinterpret_steal<py::object>(THPVariable_Wrap(c));
  }

  // One forward call of the loaded model, without autograd, until the device is idle. A Python
  // exception becomes a WorkerError of `kind`.
  py::object forward(const std::vector<py::object>& args, const char* kind, const char* context, double& seconds) {
    auto t0 = std::chrono::steady_clock::now();
    py::object out;
    try {
      at::NoGradGuard no_grad;
      out = model(*py::tuple(py::cast(args)));
      sync_device(device);
    } catch (py::error_already_set& e) {
      throw python_error(kind, context, e);
    }
    seconds = seconds_since(t0);
    return out;
  }

  // The reference Model's outputs on `args` (forward above), detached: plain tensors, else a
  // problem_error naming what the reference returned.
  std::vector<at::Tensor> reference_outputs(const std::vector<py::object>& args, const char* context,
                                            double& seconds) {
    py::object out = forward(args, "problem_error", context, seconds);
    Outputs o = flatten_outputs(out, py::module_::import("torch").attr("Tensor"));
    if (!o.plain) throw WorkerError{"problem_error", "the reference " + o.reason, ""};
    std::vector<at::Tensor> tensors;
    for (auto& t : o.tensors) tensors.push_back(t.detach());
    return tensors;
  }

  json hello() {
    py::module_ torch = py::module_::import("torch");
    py::module_ sys = py::module_::import("sys");
    json j = {{"ok", true},
              {"pid", getpid()},
              {"role", role},
              {"torch_version", py::str(torch.attr("__version__")).cast<std::string>()},
              {"python_version", py::module_::import("platform").attr("python_version")().cast<std::string>()},
              {"cuda_available", false},
              {"device_name", "cpu"}};
#ifdef KBV_WITH_CUDA
    j["cuda_built"] = true;
#else
    j["cuda_built"] = false;
#endif
    if (torch.attr("cuda").attr("is_available")().cast<bool>()) {
      j["cuda_available"] = true;
      j["device_count"] = torch.attr("cuda").attr("device_count")().cast<int>();
      j["device_name"] = torch.attr("cuda").attr("get_device_name")(0).cast<std::string>();
    }
    return j;
  }

  void set_device(const json& request) {
    device = request.value("device", "cpu");
    if (device != "cpu" && device != "cuda") throw WorkerError{"protocol_error", "unknown device " + device, ""};
  }

  py::object move_to_device(py::object value) {
    if (THPVariable_Check(value.ptr())) return value.attr("to")(device);
    return value;
  }

  // On a CPU run, load_inline with CUDA sources cannot work: say so before compiling anything.
  void guard_cuda_sources() {
    if (device != "cpu") return;
    py::dict scope;
    py::module_::import("builtins").attr("exec")(R"(
import torch.utils.cpp_extension as _ext
_orig = _ext.load_inline
class KbvNeedsCuda(RuntimeError):
    pass
def _guarded(*args, **kwargs):
    cuda = kwargs.get("cuda_sources", args[2] if len(args) > 2 else None)
    if cuda:
        raise KbvNeedsCuda("this solution compiles CUDA sources (load_inline cuda_sources) and the run is on "
                           "the CPU; evaluate it with --device cuda on a machine with a GPU")
    return _orig(*args, **kwargs)
_ext.load_inline = _guarded
)",
                                              scope);
  }

  json load_problem(const json& request) {
    set_device(request);
    worker_memory::begin_ledger(device);
    choose_precision(request);
    std::string path = request.at("path");
    py::module_ torch = py::module_::import("torch");
    // Correctness reference in strict FP32: no TF32 for matmul or cuDNN.
    set_precision("fp32");
    try {
      module = exec_source(request.at("code").get<std::string>(), path, "kbv_problem");
    } catch (py::error_already_set& e) {
      throw python_error("problem_error", path + ": the problem file does not import", e);
    }
    for (const char* name : {"Model", "get_inputs", "get_init_inputs"})
      if (!py::hasattr(module, name))
        throw WorkerError{"problem_error",
                          fmt::format("{}: no `{}` defined; a KernelBench problem defines class Model, "
                                      "get_inputs() and get_init_inputs()",
                                      path, name),
                          ""};
    json overrides = json::object();
    if (device == "cpu" && py::hasattr(module, "KBV_CPU")) {
      py::object sizes = module.attr("KBV_CPU");
      if (!py::isinstance<py::dict>(sizes))
        throw WorkerError{"problem_error", path + ": KBV_CPU must be a dict of module globals to override", ""};
      for (auto item : py::cast<py::dict>(sizes)) {
        std::string key = py::str(item.first).cast<std::string>();
        module.attr(key.c_str()) = item.second;
        overrides[key] = py::str(py::repr(item.second)).cast<std::string>();
      }
    }
    json init_wire = json::array();
    try {
      torch::manual_seed(request.value("seed", 42));
      py::list init = module.attr("get_init_inputs")();
      for (auto item : init) init_wire.push_back(to_wire(item, init_transfers, "get_init_inputs()"));
      std::vector<py::object> args;
      for (auto item : init) args.push_back(move_to_device(py::reinterpret_borrow<py::object>(item)));
      torch::manual_seed(request.value("seed", 42));
      at::NoGradGuard no_grad;
      model = module.attr("Model")(*py::tuple(py::cast(args)));
      model = model.attr("to")(device);
      if (precision != "fp32") {
        model_fp32 = model;
        model = cast_model(py::module_::import("copy").attr("deepcopy")(model));
      }
    } catch (py::error_already_set& e) {
      throw python_error("problem_error", path + ": building the reference Model failed", e);
    }
    return json{{"ok", true}, {"init_inputs", init_wire}, {"overrides", overrides}};
  }

  json describe(const json& request) {
    // Input shapes and dtypes of one get_inputs() draw (for `kbv problems`).
    torch::manual_seed(request.value("seed", 42));
    json shapes = json::array();
    try {
      py::list inputs = module.attr("get_inputs")();
      for (auto item : inputs) {
        if (THPVariable_Check(item.ptr())) {
          at::Tensor t = THPVariable_Unpack(item.ptr());
          shapes.push_back({{"dtype", dtype_name(t.scalar_type())}, {"sizes", t.sizes().vec()}});
        } else {
          shapes.push_back({{"value", py::str(py::repr(item)).cast<std::string>()}});
        }
      }
    } catch (py::error_already_set& e) {
      throw python_error("problem_error", "get_inputs() failed", e);
    }
    return json{{"ok", true}, {"inputs", shapes}};
  }

  json kernelbench_seeds(const json& request) {
    // Upstream KernelBench: torch.manual_seed(42), then one torch.randint(0, 2**32 - 1) per trial.
    int n = request.value("n", 5);
    torch::manual_seed(42);
    json seeds = json::array();
    for (int i = 0; i < n; ++i) seeds.push_back(at::randint(0, 4294967295LL, {1}, at::kLong).item<int64_t>());
    return json{{"ok", true}, {"seeds", seeds}};
  }

  // Whether a request's draws run on the GPU: its "input_draw" is "device" on a GPU run.
  bool draws_on_device(const json& request) const {
    return device == "cuda" && request.value("input_draw", "host") == "device";
  }

  // One get_inputs() draw after torch.manual_seed(seed). `on_device`: torch.rand & co. inside
  // get_inputs() allocate on the GPU (a torch.device("cuda") context): no host draw, no copy.
  py::list draw_inputs(uint64_t seed, bool on_device) {
    torch::manual_seed(seed);
    if (!on_device) return module.attr("get_inputs")();
    py::object ctx = py::module_::import("torch").attr("device")("cuda");
    ctx.attr("__enter__")();
    py::list raw;
    try {
      raw = module.attr("get_inputs")();
    } catch (...) {
      ctx.attr("__exit__")(py::none(), py::none(), py::none());
      throw;
    }
    ctx.attr("__exit__")(py::none(), py::none(), py::none());
    return raw;
  }

  json make_inputs(const json& request) {
    release();
    uint64_t seed = request.at("seed").get<uint64_t>();
    double scale = request.value("scale", 1.0);
    py::list raw;
    try {
      raw = draw_inputs(seed, draws_on_device(request));
    } catch (py::error_already_set& e) {
      throw python_error("problem_error", "get_inputs() failed", e);
    }
    std::vector<py::object> ref_args, fp32_args;
    json wire = json::array();
    for (size_t i = 0; i < raw.size(); ++i) {
      py::object item = raw[i];
      if (THPVariable_Check(item.ptr())) {
        at::Tensor t = THPVariable_Unpack(item.ptr());
        // Hidden distributions scale floating inputs only; integer and bool inputs are untouched.
        if (at::isFloatingType(t.scalar_type()) && scale != 1.0) t = t.mul(scale);
        // Precision modes: scaled in the problem's dtype, then cast (docs/PRECISION.md).
        if (precision != "fp32") t = cast_floating(t, dtype);
        t = t.to(device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU));
        at::Tensor view;
        wire.push_back(transfers.export_tensor(t, &view));
        shared_inputs.push_back(view);
        shared_input_positions.push_back(static_cast<int>(i));
        // The reference computes on `t` itself (a tensor only this worker holds): the shared
        // buffer already keeps the pristine values, so no further copy is made.
        at::Tensor mine = t;
        ref_inputs_after.push_back(mine);
        ref_args.push_back(py::reinterpret_steal<py::object>(THPVariable_Wrap(mine)));
      } else {
        wire.push_back(to_wire(item, transfers, "get_inputs()"));
        ref_args.push_back(item);
      }
      if (precision != "fp32") fp32_args.push_back(fp32_arg(ref_args.back()));
    }
    double ref_seconds = 0;
    expected = reference_outputs(ref_args, "the reference Model's forward failed", ref_seconds);
    json reply = {{"ok", true}, {"args", wire}, {"reference_seconds", ref_seconds}, {"outputs", expected.size()},
                  {"output_aliases", storage_overlaps(expected, ref_inputs_after, shared_input_positions)}};
    if (precision != "fp32") {
      reply["reference_error"] = fp32_cross_check(fp32_args, expected, tolerance_from(request, 1e-2));
    }
    return reply;
  }

  json check(const json& request) {
    Tolerance tol = tolerance_from(request, 1e-3);
    const json& outs = request.at("outputs");
    json comparisons = json::array();
    bool passed = true;
    std::string reason;
    if (outs.size() != expected.size()) {
      passed = false;
      reason = fmt::format("the candidate returned {} output(s) where the reference returns {}", outs.size(),
                           expected.size());
    } else {
      for (size_t i = 0; i < outs.size(); ++i) {
        at::Tensor actual = transfers.import_tensor(outs[i]);
        Comparison c = compare_tensors(expected[i], actual, tol);
        json cj = c.to_json();
        cj["output"] = i;
        comparisons.push_back(cj);
        if (!c.passed && passed) {
          passed = false;
          reason = expected.size() > 1 ? fmt::format("output {}: {}", i, c.reason) : c.reason;
        }
      }
    }
    // Inputs must be as the reference left its own copy (unchanged unless the reference mutates them).
    json mutated = json::array();
    for (size_t k = 0; k < shared_inputs.size(); ++k)
      if (!same_values(ref_inputs_after[k], shared_inputs[k])) mutated.push_back(shared_input_positions[k]);
    return json{{"ok", true},
                {"passed", passed},
                {"reason", reason},
                {"comparisons", comparisons},
                {"mutated_inputs", mutated}};
  }

  // `kbv lint-problems` (src/supervisor/problem_lint.h): statistics of the reference on one hidden
  // distribution, for the supervisor to turn into findings. Two draws A and B (seeds[0], seeds[1])
  // and a second call on A (redrawn from its seed; right before the call, blocks the size of A's
  // outputs are filled with NaN and freed, so a reference returning unwritten memory shows).
  // Per output: non-finite counts, and the protocol's comparison of B's expected output against
  // A's output (a replayed output), all zeros and a constant (the mean of A's output); A against
  // its repeat; and A against a float64 run (fp64_check). Nothing is exported: the lint never
  // involves a candidate.
  json lint(const json& request) {
    release();
    const json& seeds = request.at("seeds");
    double scale = request.value("scale", 1.0);
    Tolerance tol = tolerance_from(request, 1e-3);
    at::Device dev = device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
    json inputs = json::array();
    json fp64;           // float64 cross-check of draw A, per output (or why it did not run)
    json reduced_check;  // below fp32: draw A's reference against the fp32 model, per output
    // The same model and inputs in float64 (a deep copy of the model), compared with the float32
    // outputs as the protocol compares a kernel's: if the float32 reference itself fails against
    // the float64 result, an exact kernel can fail against it (the output is rounding noise, or
    // the computation is ill-conditioned). A JSON list (one comparison per output), or a string
    // saying why the check could not run.
    auto fp64_check = [&](const std::vector<py::object>& args, const std::vector<at::Tensor>& fp32) {
      std::vector<py::object> args64;
      for (const auto& arg : args) {
        if (THPVariable_Check(arg.ptr()) && (THPVariable_Unpack(arg.ptr()).scalar_type() == at::kFloat ||
                                             THPVariable_Unpack(arg.ptr()).scalar_type() == dtype))
          args64.push_back(py::reinterpret_steal<py::object>(
              THPVariable_Wrap(THPVariable_Unpack(arg.ptr()).to(at::kDouble))));
        else
          args64.push_back(arg);
      }
      py::object saved = model;
      json result = json::array();
      try {
        model = py::module_::import("copy").attr("deepcopy")(saved).attr("double")();
        double seconds = 0;
        py::object out = forward(args64, "problem_error", "its forward failed", seconds);
        Outputs o = flatten_outputs(out, py::module_::import("torch").attr("Tensor"));
        for (size_t i = 0; i < fp32.size() && i < o.tensors.size(); ++i) {
          at::Tensor exact = o.tensors[i].detach();
          if (at::isFloatingType(exact.scalar_type())) exact = exact.to(fp32[i].scalar_type());
          result.push_back(compare_tensors(exact, fp32[i], tol).to_json());
        }
      } catch (const WorkerError& e) {
        result = "the model does not run in float64: " + e.message;
      } catch (py::error_already_set& e) {
        result = python_error("problem_error", "the model does not run in float64", e).message;
      } catch (const std::exception& e) {
        result = std::string("the model does not run in float64: ") + e.what();
      }
      model = saved;
      return result;
    };
    // One draw as the reference sees it in `inputs` (same seeding, same scaling), run once.
    // `poison`: tensors whose sizes to fill with NaN and free right before the call, so that a
    // reference returning memory it never wrote is likely to hand NaN back.
    // Drawn as the linted protocol draws ("input_draw"): on the GPU for kbv's, where a host draw of
    // a multi-GiB input took seconds, twelve times per problem.
    const bool on_device = draws_on_device(request);
    auto run_draw = [&](uint64_t seed, bool describe, const std::vector<at::Tensor>& poison) {
      std::vector<py::object> args;
      py::list raw;
      try {
        raw = draw_inputs(seed, on_device);
      } catch (py::error_already_set& e) {
        throw python_error("problem_error", "get_inputs() failed", e);
      }
      for (size_t i = 0; i < raw.size(); ++i) {
        py::object item = raw[i];
        if (!THPVariable_Check(item.ptr())) {
          if (describe) inputs.push_back({{"index", i}, {"value", py::str(py::repr(item)).cast<std::string>()}});
          args.push_back(item);
          continue;
        }
        at::Tensor t = THPVariable_Unpack(item.ptr());
        bool floating = at::isFloatingType(t.scalar_type());
        if (describe) {
          json in = {{"index", i}, {"dtype", dtype_name(t.scalar_type())}, {"sizes", t.sizes().vec()},
                     {"floating", floating}};
          // Whole numbers in a floating input (labels, +-1 signs) stop being labels once scaled.
          if (floating && t.numel() > 0)
            in["integer_valued"] = t.isfinite().all().item<bool>() && t.eq(t.round()).all().item<bool>() &&
                                   t.ne(0).any().item<bool>();
          inputs.push_back(in);
        }
        if (floating && scale != 1.0) t = t.mul(scale);
        if (precision != "fp32") t = cast_floating(t, dtype);
        args.push_back(py::reinterpret_steal<py::object>(THPVariable_Wrap(t.to(dev))));
      }
      std::vector<py::object> fp32_args;
      if (describe && precision != "fp32")
        for (const auto& arg : args) fp32_args.push_back(fp32_arg(arg));
      {
        std::vector<at::Tensor> blocks;
        for (const auto& t : poison)
          if (at::isFloatingType(t.scalar_type())) blocks.push_back(at::full_like(t, NAN));
      }
      double seconds = 0;
      std::vector<at::Tensor> result = reference_outputs(args, "the reference Model's forward failed", seconds);
      if (describe) fp64 = fp64_check(args, result);
      if (describe && precision != "fp32") reduced_check = fp32_cross_check(fp32_args, result, tol);
      return result;
    };
    std::vector<at::Tensor> a = run_draw(seeds.at(0).get<uint64_t>(), true, {});
    std::vector<at::Tensor> repeat = run_draw(seeds.at(0).get<uint64_t>(), false, a);
    json outputs = json::array();
    for (size_t i = 0; i < a.size(); ++i) {
      json o = {{"index", i}, {"dtype", dtype_name(a[i].scalar_type())}, {"sizes", a[i].sizes().vec()},
                {"numel", a[i].numel()}};
      if (i < repeat.size()) {
        json r = compare_tensors(a[i], repeat[i], tol).to_json();
        r["bitwise_equal"] = same_values(a[i], repeat[i]);
        o["repeat"] = r;
      }
      if (fp64.is_array() && i < fp64.size()) o["fp64"] = fp64[i];
      if (reduced_check.is_array() && i < reduced_check.size()) o["reference_error"] = reduced_check[i];
      outputs.push_back(o);
    }
    if (fp64.is_string()) outputs.push_back({{"fp64_skipped", fp64}});
    if (repeat.size() != a.size())
      outputs.push_back({{"note", fmt::format("a second call on the same inputs returned {} output(s), the first {}",
                                              repeat.size(), a.size())}});
    repeat.clear();
    std::vector<at::Tensor> b = run_draw(seeds.at(1).get<uint64_t>(), false, {});
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      json& o = outputs[i];
      bool floating = at::isFloatingType(b[i].scalar_type());
      auto count = [&](const at::Tensor& t, bool nan) -> int64_t {
        if (!floating) return 0;
        return (nan ? t.isnan() : t.isinf()).sum().item<int64_t>();
      };
      o["nan"] = {count(a[i], true), count(b[i], true)};
      o["inf"] = {count(a[i], false), count(b[i], false)};
      ValueStats stats = finite_stats(b[i]);
      if (stats.count > 0) {
        o["mean"] = stats.mean;
        o["std"] = stats.std;
        o["max_abs"] = stats.max_abs;
      }
      json other = compare_tensors(b[i], a[i], tol).to_json();
      other["bitwise_equal"] = same_values(b[i], a[i]);
      o["other_draw"] = other;
      // One scalar broadcast to the output's shape: no output-sized copy.
      auto filled = [&](const at::Scalar& v) { return at::full({}, v, b[i].options()).expand(b[i].sizes()); };
      o["zeros"] = compare_tensors(b[i], filled(0), tol).to_json();
      ValueStats a_stats = finite_stats(a[i]);
      double c = a_stats.count > 0 ? a_stats.mean : 0.0;
      at::Tensor constant;
      if (b[i].scalar_type() == at::kBool)
        constant = filled(c >= 0.5);
      else if (!floating)
        constant = filled(static_cast<int64_t>(std::llround(c)));
      else
        constant = filled(c);
      json cj = compare_tensors(b[i], constant, tol).to_json();
      cj["value"] = c;
      o["constant"] = cj;
    }
    if (b.size() != a.size())
      outputs.push_back({{"note", fmt::format("draw B returned {} output(s), draw A {}", b.size(), a.size())}});
    // Dropout in training mode: a different mask on every call.
    json dropout = json::array();
    py::object dropout_type = py::module_::import("torch.nn.modules.dropout").attr("_DropoutNd");
    for (auto item : model.attr("named_modules")()) {
      py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
      py::object m = pair[1];
      if (py::isinstance(m, dropout_type) && m.attr("training").cast<bool>() && m.attr("p").cast<double>() > 0)
        dropout.push_back(fmt::format("{} ({}, p={})", pair[0].cast<std::string>(),
                                      py::str(py::type::handle_of(m).attr("__name__")).cast<std::string>(),
                                      m.attr("p").cast<double>()));
    }
    // KBV_LINT_ALLOW = {"rule": "reason"}: findings the problem's author accepts, with the reason.
    json allow = json::object();
    std::string allow_error;
    if (py::hasattr(module, "KBV_LINT_ALLOW")) {
      py::object a_obj = module.attr("KBV_LINT_ALLOW");
      if (!py::isinstance<py::dict>(a_obj)) {
        allow_error = "KBV_LINT_ALLOW must be a dict {\"rule\": \"reason\"}";
      } else {
        for (auto kv : py::cast<py::dict>(a_obj)) {
          if (!py::isinstance<py::str>(kv.first) || !py::isinstance<py::str>(kv.second)) {
            allow_error = "KBV_LINT_ALLOW must map rule names (str) to reasons (str)";
            continue;
          }
          allow[kv.first.cast<std::string>()] = kv.second.cast<std::string>();
        }
      }
    }
    a.clear();
    b.clear();
    release_cached_memory(device);
    json reply = {{"ok", true},          {"inputs", inputs}, {"outputs", outputs},
                  {"dropout", dropout}, {"allow", allow},   {"training", model.attr("training").cast<bool>()},
                  {"precision", precision}};
    if (!allow_error.empty()) reply["allow_error"] = allow_error;
    return reply;
  }

  json release() {
    transfers.clear();
    expected.clear();
    ref_inputs_after.clear();
    shared_inputs.clear();
    shared_input_positions.clear();
    // Give cached blocks back to the driver: the other worker on this GPU needs them.
    release_cached_memory(device);
    return json{{"ok", true}};
  }

  json build(const json& request) {
    set_device(request);
    guard_cuda_sources();
    std::string path = request.at("path");
    auto t0 = std::chrono::steady_clock::now();
    try {
      module = exec_source(request.at("code").get<std::string>(), path, "kbv_candidate");
    } catch (py::error_already_set& e) {
      WorkerError w = python_error("compile_error", path + ": loading the solution failed", e);
      if (e.matches(py::module_::import("builtins").attr("RuntimeError")) &&
          w.message.find("KbvNeedsCuda") != std::string::npos)
        w.kind = "needs_cuda";
      throw w;
    }
    if (!py::hasattr(module, "ModelNew"))
      throw WorkerError{"missing_model_new",
                        path + ": no `class ModelNew` defined; a KernelBench solution defines ModelNew with the "
                               "same constructor arguments as Model",
                        ""};
    return json{{"ok", true}, {"seconds", seconds_since(t0)}};
  }

  json load_candidate(const json& request) {
    worker_memory::begin_ledger(request.value("device", "cpu"));
    choose_precision(request);
    json b = build(request);
    std::string path = request.at("path");
    try {
      std::vector<py::object> args;
      for (const auto& a : request.at("init_inputs"))
        args.push_back(move_to_device(from_wire(a, init_transfers, device)));
      torch::manual_seed(request.value("seed", 42));
      at::NoGradGuard no_grad;
      model = module.attr("ModelNew")(*py::tuple(py::cast(args)));
      model = model.attr("to")(device);
      model = cast_model(model);  // built as the reference is: fp32 construction, then the cast
    } catch (py::error_already_set& e) {
      throw python_error("runtime_error", path + ": constructing ModelNew failed", e);
    }
    return json{{"ok", true}, {"load_seconds", b["seconds"]}};
  }

  json run(const json& request) {
    release();
    std::vector<py::object> args;
    for (const auto& a : request.at("args")) args.push_back(from_wire(a, transfers, device));
    double seconds = 0;
    py::object out = forward(args, "runtime_error", "ModelNew.forward raised", seconds);
    Outputs outputs = flatten_outputs(out, py::module_::import("torch").attr("Tensor"));
    if (!outputs.plain) throw WorkerError{"rejected", outputs.reason, ""};
    json handles = json::array();
    for (auto& t : outputs.tensors) handles.push_back(transfers.export_tensor(t));
    sync_device(device);
    outputs.tensors.clear();
    out = py::none();
    release_cached_memory(device);
    return json{{"ok", true}, {"outputs", handles}, {"seconds", seconds}};
  }

  // ---- Timing (docs/TIMING.md; the loop itself is src/worker/timing.*) ----
  LiveInputs time_sets;                                // per set, the tensor arguments; live buffers
  std::vector<std::vector<at::Tensor>> time_expected;  // reference: strict-FP32 outputs of each set
  std::vector<py::object> time_template;               // set 0's arguments (tensors replaced by live ones)
  std::vector<int> time_tensor_pos;                    // argument index of each tensor
  TransferSet time_transfers;
  // Fresh draws for a candidate's timed calls (docs/TIMING.md): the reference writes each draw into
  // set 0's shared buffers (its views of them here), the candidate copies them into its live ones.
  std::vector<at::Tensor> time_staging;
  // The protocol fds: the candidate asks the supervisor for each fresh draw in the middle of a
  // timing request.
  int in_fd = 3, out_fd = 4;

  json release_timing() {
    time_sets = LiveInputs{};
    time_staging.clear();
    time_expected.clear();
    time_template.clear();
    time_tensor_pos.clear();
    time_transfers.clear();
    release_cached_memory(device);
    return json{{"ok", true}};
  }

  // "fp32": strict (no TF32 anywhere); "tf32": matmul precision 'high' and cuDNN TF32 on.
  void set_precision(const std::string& mode) {
    py::module_ torch = py::module_::import("torch");
    bool tf32 = mode == "tf32";
    torch.attr("set_float32_matmul_precision")(tf32 ? "high" : "highest");
    torch.attr("backends").attr("cuda").attr("matmul").attr("allow_tf32") = tf32;
    torch.attr("backends").attr("cudnn").attr("allow_tf32") = tf32;
  }

  // Reference: K input sets from secret seeds (fewer when K would exceed max_bytes, never fewer
  // than 2), their strict-FP32 expected outputs kept here, the sets exported for the candidate.
  json time_inputs(const json& request) {
    release();
    release_timing();
    const json& seeds = request.at("seeds");
    uint64_t max_bytes = request.value("max_bytes", uint64_t{4} << 30);
    bool on_device = draws_on_device(request);
    at::Device dev = device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
    json sets_wire = json::array();
    uint64_t input_bytes = 0, output_bytes = 0;
    for (size_t s = 0; s < seeds.size(); ++s) {
      py::list raw;
      try {
        raw = draw_inputs(seeds[s].get<uint64_t>(), on_device);
      } catch (py::error_already_set& e) {
        throw python_error("problem_error", "get_inputs() failed while drawing timing inputs", e);
      }
      // Bytes as the call sees them: floating inputs in the evaluated precision.
      uint64_t bytes = 0;
      for (auto item : raw) {
        if (!THPVariable_Check(item.ptr())) continue;
        const at::Tensor& t = THPVariable_Unpack(item.ptr());
        bytes += precision != "fp32" && at::isFloatingType(t.scalar_type())
                     ? static_cast<uint64_t>(t.numel()) * c10::elementSize(dtype)
                     : t.nbytes();
      }
      if (s >= 2 && (s + 1) * bytes > max_bytes) break;
      std::vector<at::Tensor> tensors;
      std::vector<py::object> args;
      json wire = json::array();
      for (size_t i = 0; i < raw.size(); ++i) {
        py::object item = raw[i];
        if (THPVariable_Check(item.ptr())) {
          at::Tensor t = THPVariable_Unpack(item.ptr()).to(dev);
          if (precision != "fp32") t = cast_floating(t, dtype);  // as the correctness inputs
          at::Tensor view;
          wire.push_back(time_transfers.export_tensor(t, s == 0 ? &view : nullptr));
          if (s == 0) time_staging.push_back(view);
          tensors.push_back(t);
          // The reference computes on a copy: an in-place reference must not change the set.
          args.push_back(py::reinterpret_steal<py::object>(THPVariable_Wrap(t.clone())));
          if (s == 0) time_tensor_pos.push_back(static_cast<int>(i));
        } else {
          wire.push_back(to_wire(item, time_transfers, "get_inputs()"));
          args.push_back(item);
        }
        if (s == 0) time_template.push_back(item);
      }
      double seconds = 0;
      std::vector<at::Tensor> expected_set =
          reference_outputs(args, "the reference Model's forward failed on timing inputs", seconds);
      if (s == 0) {
        input_bytes = bytes;
        for (auto& t : expected_set) output_bytes += t.nbytes();
      }
      time_expected.push_back(std::move(expected_set));
      time_sets.sets.push_back(std::move(tensors));
      sets_wire.push_back(wire);
    }
    return json{{"ok", true}, {"sets", sets_wire}, {"input_bytes", input_bytes}, {"output_bytes", output_bytes}};
  }

  // Tensor arguments of fresh timing draw `seed` as a timed call sees them: the problem's
  // get_inputs() after manual_seed(seed) (on the GPU inside a torch.device("cuda") context),
  // floating tensors in the evaluated precision. The same code makes the candidate's draws
  // (time_draw), the baselines' and the spot checks' recomputations.
  std::vector<at::Tensor> fresh_draw(uint64_t seed) {
    at::Device dev = device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
    py::list raw;
    try {
      raw = draw_inputs(seed, device == "cuda");
    } catch (py::error_already_set& e) {
      throw python_error("problem_error", "get_inputs() failed while drawing fresh timing inputs", e);
    }
    std::vector<at::Tensor> out;
    for (auto item : raw) {
      if (!THPVariable_Check(item.ptr())) continue;
      at::Tensor t = THPVariable_Unpack(item.ptr()).to(dev);
      if (precision != "fp32") t = cast_floating(t, dtype);
      out.push_back(t);
    }
    return out;
  }

  // `into` filled with fresh draw `seed` of the problem's get_inputs(); a draw whose tensors
  // differ in number, shape or dtype from the first cannot go through the same buffers.
  void load_fresh(std::vector<at::Tensor>& into, uint64_t seed) {
    std::vector<at::Tensor> t = fresh_draw(seed);
    if (t.size() != into.size())
      throw WorkerError{"problem_error",
                        fmt::format("get_inputs() returned {} tensors on a fresh timing draw, {} on the first; a "
                                    "problem whose inputs change between draws can only be timed with "
                                    "--timing-inputs sets",
                                    t.size(), into.size()),
                        ""};
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].sizes() != into[i].sizes() || t[i].scalar_type() != into[i].scalar_type())
        throw WorkerError{"problem_error",
                          fmt::format("get_inputs() returned input {} as {} {} on a fresh timing draw, {} {} on the "
                                      "first; a problem whose inputs change between draws can only be timed with "
                                      "--timing-inputs sets",
                                      i, dtype_name(t[i].scalar_type()), shape_string(t[i].sizes()),
                                      dtype_name(into[i].scalar_type()), shape_string(into[i].sizes())),
                          ""};
      into[i].copy_(t[i]);
    }
  }

  // Reference: fresh draw fresh_seed + index written into the shared set-0 buffers, finished on the
  // device before the reply, for the candidate to copy into its live buffers.
  json time_draw(const json& request) {
    if (time_sets.sets.empty())
      throw WorkerError{"protocol_error", "time_draw before time_inputs", ""};
    // The candidate's next timed call follows at once: no pool of ours may still spin then.
    SerialIntraOp serial;
    serial.on();
    load_fresh(time_staging, request.at("fresh_seed").get<uint64_t>() + request.at("index").get<uint64_t>());
    sync_device(device);
    return json{{"ok", true}};
  }

  // Candidate: one fresh draw, made by the reference through the supervisor (call `index` of this
  // request; the supervisor checks the order), then copied byte for byte into the live buffers.
  // No Python runs in this process for it, so nothing the candidate patched sees the draw.
  void fetch_fresh(int index) {
    if (std::string e = write_message(out_fd, {{"op", "draw"}, {"index", index}}); !e.empty())
      throw WorkerError{"protocol_error", "asking for a fresh timing draw: " + e, ""};
    ReadResult r = read_message(in_fd, std::nullopt);
    if (r.status != ReadResult::Status::ok)
      throw WorkerError{"protocol_error", "waiting for a fresh timing draw: " + r.error, ""};
    if (!r.message.value("ok", false))
      throw WorkerError{r.message.value("kind", std::string("problem_error")),
                        r.message.value("message", std::string("the fresh timing draw failed")), ""};
    const auto& staged = time_sets.sets.at(0);
    for (size_t i = 0; i < time_sets.live.size() && i < staged.size(); ++i) copy_bytes(time_sets.live[i], staged[i]);
  }

  // The timing loop on `fn` over the inputs loaded in time_sets/time_template. Fresh draws: call i
  // computes on draw fresh_seed + i, made here (the reference, for its baselines) or by the
  // reference for the candidate (request "fresh": fetch_fresh); otherwise on input set i mod K.
  json time_callable(py::object fn, const json& request, SpotSampler* spot) {
    time_sets.init();
    const bool fresh = role == "candidate" ? request.value("fresh", false) : request.contains("fresh_seed");
    const uint64_t fresh_seed = fresh && role != "candidate" ? request.at("fresh_seed").get<uint64_t>() : 0;
    std::vector<py::object> args = time_template;
    for (size_t i = 0; i < time_tensor_pos.size(); ++i)
      args[time_tensor_pos[i]] = py::reinterpret_steal<py::object>(THPVariable_Wrap(time_sets.live[i]));
    py::tuple call_args = py::tuple(py::cast(args));
    TimingConfig config;
    config.cuda = device == "cuda";
    config.flush_bytes = request.value("flush_bytes", uint64_t{0});
    config.launch_hold_us = request.value("launch_hold_us", 0.0);
    const json& rule = request.value("rule", json::object());
    config.rule.warmup = rule.value("warmup", config.rule.warmup);
    config.rule.min_samples = rule.value("min_samples", config.rule.min_samples);
    config.rule.min_samples_at_cap = rule.value("min_samples_at_cap", config.rule.min_samples_at_cap);
    config.rule.max_samples = rule.value("max_samples", config.rule.max_samples);
    config.rule.rse_target = rule.value("rse_target", config.rule.rse_target);
    config.rule.time_cap_s = rule.value("time_cap_s", config.rule.time_cap_s);
    config.rule.max_discards = rule.value("max_discards", config.rule.max_discards);
    py::object last;
    py::handle tensor_type = py::module_::import("torch").attr("Tensor");
    const char* context = role == "candidate" ? "ModelNew.forward raised during timing"
                                              : "the reference Model's forward raised during timing";
    TimingRun run = run_timing(
        config,
        [&](int index) {
          if (fresh && role == "candidate")
            fetch_fresh(index);
          else if (fresh)
            load_fresh(time_sets.live, fresh_seed + static_cast<uint64_t>(index));
          else
            time_sets.load(index);
        },
        [&]() {
          try {
            at::NoGradGuard no_grad;
            last = fn(*call_args);
          } catch (py::error_already_set& e) {
            throw python_error("runtime_error", context, e);
          }
        },
        [&](int sample, int index) {
          if (spot) {
            Outputs o = flatten_outputs(last, tensor_type);
            spot->take(sample, index, o.tensors);
          }
          last = py::none();
        });
    json reply = run.to_json();
    reply["ok"] = true;
    reply["warmup"] = config.rule.warmup;
    if (fresh)
      reply["inputs"] = "fresh";
    else
      reply["sets"] = time_sets.sets.size();
    return reply;
  }

  json time_reference(const json& request) {
    std::string mode = request.value("mode", "tf32");
    if (mode != "fp32" && mode != "tf32" && mode != "compile")
      throw WorkerError{"protocol_error", "unknown baseline mode '" + mode + "' (fp32, tf32, compile)", ""};
    if (time_sets.sets.empty()) throw WorkerError{"protocol_error", "time before time_inputs", ""};
    // compile: inductor's default mode on the TF32 settings of the realistic baseline.
    set_precision(mode == "fp32" ? "fp32" : "tf32");
    json reply;
    try {
      py::object fn = model;
      if (mode == "compile") {
        try {
          fn = py::module_::import("torch").attr("compile")(model);
        } catch (py::error_already_set& e) {
          throw python_error("runtime_error", "torch.compile(Model) failed", e);
        }
      }
      reply = time_callable(fn, request, nullptr);
      reply["mode"] = mode;
    } catch (...) {
      set_precision("fp32");
      throw;
    }
    set_precision("fp32");
    return reply;
  }

  json time_candidate(const json& request) {
    release();
    release_timing();
    const json& sets = request.at("sets");
    for (size_t s = 0; s < sets.size(); ++s) {
      std::vector<at::Tensor> tensors;
      for (size_t i = 0; i < sets[s].size(); ++i) {
        const json& a = sets[s][i];
        if (a.value("kind", "") == "tensor") {
          tensors.push_back(time_transfers.import_tensor(a));
          if (s == 0) {
            time_tensor_pos.push_back(static_cast<int>(i));
            time_template.push_back(py::none());
          }
        } else if (s == 0) {
          time_template.push_back(from_wire(a, time_transfers, device));
        }
      }
      time_sets.sets.push_back(std::move(tensors));
    }
    SpotSampler spot;
    spot.rng.seed(request.value("spot_seed", uint64_t{0}));
    spot.per_output = request.value("spot_per_output", 2);
    spot.max_calls = request.value("spot_max_calls", 64);
    json reply = time_callable(model, request, &spot);
    reply["spot"] = spot.entries;
    return reply;
  }

  // The candidate's spot entries against the reference's outputs of the calls they name: input set
  // index mod K, or, with "fresh_seed", the reference's own recomputation of each named draw (the
  // supervisor sends a secret subset of the calls), one draw at a time.
  json spot_check(const json& request) {
    const json& entries = request.at("entries");
    const double atol = request.value("atol", 1e-3), rtol = request.value("rtol", 1e-3);
    json r;
    if (request.contains("fresh_seed")) {
      const uint64_t seed = request.at("fresh_seed").get<uint64_t>();
      std::map<int64_t, json> by_draw;  // entries naming no valid draw go under -1 (no outputs)
      for (const auto& e : entries) {
        int64_t index = e.is_object() && e.contains("set") && e["set"].is_number_integer() ? e["set"].get<int64_t>() : -1;
        by_draw[index < 0 ? -1 : index].push_back(e);
      }
      int checked = 0, failed = 0;
      std::string first;
      for (auto& [index, group] : by_draw) {
        std::vector<at::Tensor> outputs;
        if (index >= 0) {
          std::vector<at::Tensor> drawn = fresh_draw(seed + static_cast<uint64_t>(index));
          if (drawn.size() != time_tensor_pos.size())
            throw WorkerError{"problem_error", "get_inputs() returned another number of tensors on a fresh draw", ""};
          std::vector<py::object> args = time_template;
          for (size_t i = 0; i < drawn.size(); ++i)
            args[time_tensor_pos[i]] = py::reinterpret_steal<py::object>(THPVariable_Wrap(drawn[i]));
          double seconds = 0;
          outputs = reference_outputs(args, "the reference Model's forward failed on a timing draw", seconds);
        }
        json part = spot_compare(
            group, [&](int64_t i) { return i == index && index >= 0 ? &outputs : nullptr; }, atol, rtol);
        checked += part.value("checked", 0);
        failed += part.value("failed", 0);
        if (first.empty()) first = part.value("first_failure", "");
      }
      r = {{"checked", checked}, {"failed", failed}, {"first_failure", first}};
    } else {
      r = spot_compare(
          entries,
          [&](int64_t index) -> const std::vector<at::Tensor>* {
            if (index < 0 || time_expected.empty()) return nullptr;
            return &time_expected[static_cast<size_t>(index) % time_expected.size()];
          },
          atol, rtol);
    }
    int64_t numel = 0;
    for (const auto& set : time_expected)
      for (const auto& t : set) numel += t.numel();
    r["expected_numel"] = numel;
    r["ok"] = true;
    return r;
  }

  // Copy bandwidth and FP32/TF32 matmul rates of this device (the physical floor, docs/TIMING.md).
  json calibrate(const json& request) {
    json reply = calibrate_bandwidth(device == "cuda");
    int64_t n = request.value("matmul_n", device == "cuda" ? 8192 : 512);
    at::Device dev = device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
    at::Tensor a = at::rand({n, n}, at::TensorOptions().device(dev));
    at::Tensor b = at::rand({n, n}, at::TensorOptions().device(dev));
    TimingConfig config;
    config.cuda = device == "cuda";
    config.rule.time_cap_s = 0.5;
    config.flush_bytes = 1;
    for (const char* mode : {"fp32", "tf32"}) {
      set_precision(mode);
      TimingRun run = run_timing(config, [](int) {}, [&]() { (void)at::mm(a, b); }, [](int, int) {});
      Stats s = summarize(run.kept_ms);
      reply[fmt::format("matmul_{}_flops_per_s", mode)] =
          s.median_ms > 0 ? 2.0 * static_cast<double>(n) * n * n / (s.median_ms / 1000.0) : 0.0;
    }
    set_precision("fp32");
    reply["matmul_n"] = n;
    reply["ok"] = true;
    return reply;
  }

  // `measure {args | seed, input_draw, repeats, baseline}`: memory (and, for the candidate, kernel
  // attribution) of a few untimed calls (src/worker/memory.h, docs/MEMORY.md). The candidate
  // computes on the inputs it is handed, the reference on its own draw from `seed` (drawn as
  // `input_draw` says) under the baseline's precision ("tf32" | "fp32"); both copy the inputs into
  // their own torch memory first.
  json measure(const json& request) {
    release();
    int64_t before = worker_memory::torch_allocated(device);
    std::vector<py::object> args;
    if (role == "candidate") {
      for (const auto& a : request.at("args")) args.push_back(from_wire(a, transfers, device));
    } else {
      try {
        for (auto item : draw_inputs(request.at("seed").get<uint64_t>(), draws_on_device(request)))
          args.push_back(move_to_device(py::reinterpret_borrow<py::object>(item)));
      } catch (py::error_already_set& e) {
        throw python_error("problem_error", "get_inputs() failed", e);
      }
    }
    for (auto& a : args)
      if (THPVariable_Check(a.ptr()))
        a = py::reinterpret_steal<py::object>(THPVariable_Wrap(THPVariable_Unpack(a.ptr()).clone()));
    transfers.clear();
    worker_memory::MeasureOptions o;
    o.device = device;
    o.repeats = request.value("repeats", 3);
    o.input_bytes = worker_memory::torch_allocated(device) - before;
    o.kernels = role == "candidate";
    o.own_roots = worker_memory::own_roots_from_environment();
    const bool tf32 = role == "reference" && request.value("baseline", "fp32") == "tf32";
    const char* kind = role == "candidate" ? "runtime_error" : "problem_error";
    json result;
    try {
      if (tf32) set_precision("tf32");
      result = worker_memory::measure(
          [&]() {
            double seconds = 0;
            py::object out = forward(args, kind, "the forward call measured for memory raised", seconds);
            out = py::none();
            sync_device(device);
          },
          o);
    } catch (...) {
      if (tf32) set_precision("fp32");
      throw;
    }
    if (tf32) set_precision("fp32");
    args.clear();
    release_cached_memory(device);
    result["ok"] = true;
    return result;
  }

  // Runtime audits after the trials passed (worker/audit.h): phase "first" on draw A, then
  // "second" on draw B, whose outputs are exported for the reference to check.
  json audit_call(const json& request) {
    release();
    std::vector<py::object> args;
    for (const auto& a : request.at("args")) args.push_back(from_wire(a, transfers, device));
    ForwardFn call = [&](const std::vector<py::object>& call_args) {
      double seconds = 0;
      py::object out = forward(call_args, "runtime_error", "ModelNew.forward raised during the runtime audit", seconds);
      Outputs o = flatten_outputs(out, py::module_::import("torch").attr("Tensor"));
      if (!o.plain) throw WorkerError{"rejected", o.reason, ""};
      return o.tensors;
    };
    if (request.value("phase", "") == "first") return audit.first(args, call, device);
    Tolerance tol = tolerance_from(request, 1e-3);
    return audit.second(args, call, device, tol, transfers);
  }

  json dispatch(const json& request) {
    std::string op = request.value("op", "");
    if (op == "hello") return hello();
    if (op == "measure" && (role == "reference" || role == "candidate")) return measure(request);
    if (role == "reference") {
      if (op == "load") return load_problem(request);
      if (op == "describe") return describe(request);
      if (op == "kernelbench_seeds") return kernelbench_seeds(request);
      if (op == "inputs") return make_inputs(request);
      if (op == "check") return check(request);
      if (op == "release") return release();
      if (op == "lint") return lint(request);
      if (op == "time_inputs") return time_inputs(request);
      if (op == "time") return time_reference(request);
      if (op == "time_draw") return time_draw(request);
      if (op == "spot_check") return spot_check(request);
      if (op == "time_release") return release_timing();
      if (op == "calibrate") return calibrate(request);
    } else if (role == "candidate") {
      if (op == "load") return load_candidate(request);
      if (op == "run") return run(request);
      if (op == "time") return time_candidate(request);
      if (op == "time_release") return release_timing();
      if (op == "audit") return audit_call(request);
      if (op == "release") return release();
    } else if (role == "build") {
      if (op == "build") return build(request);
    }
    throw WorkerError{"protocol_error", fmt::format("op '{}' is not known to the {} role", op, role), ""};
  }
};

int serve(const std::string& role, int in_fd, int out_fd) {
  // The protocol fds must not leak into compilers or anything the candidate starts.
  fcntl(in_fd, F_SETFD, FD_CLOEXEC);
  fcntl(out_fd, F_SETFD, FD_CLOEXEC);
  Worker worker;
  worker.role = role;
  worker.in_fd = in_fd;
  worker.out_fd = out_fd;
  for (;;) {
    ReadResult r = read_message(in_fd, std::nullopt);
    if (r.status == ReadResult::Status::eof) return 0;  // supervisor gone: exit quietly
    if (r.status != ReadResult::Status::ok) {
      std::fprintf(stderr, "kbv worker: %s\n", r.error.c_str());
      return 1;
    }
    if (r.message.value("op", "") == "exit") return 0;
    json reply;
    try {
      reply = worker.dispatch(r.message);
    } catch (const WorkerError& e) {
      reply = error_reply(e);
    } catch (py::error_already_set& e) {
      reply = error_reply(python_error("runtime_error", "unexpected Python error", e));
    } catch (const c10::Error& e) {
      reply = error_reply(WorkerError{"runtime_error", e.what_without_backtrace(), ""});
    } catch (const std::exception& e) {
      reply = error_reply(WorkerError{"runtime_error", e.what(), ""});
    }
    if (!write_message(out_fd, reply).empty()) return 1;
  }
}

}  // namespace
}  // namespace kbv

PYBIND11_MODULE(kbv_worker, m) {
  m.doc() = "kbv worker harness (C++); see DESIGN.md";
  m.def("serve", &kbv::serve, py::arg("role"), py::arg("in_fd") = 3, py::arg("out_fd") = 4);
}
