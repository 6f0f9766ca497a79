#include "worker/python.h"

#include <fmt/format.h>
#include <torch/utils.h>

#ifdef KBV_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime.h>
#endif

namespace py = pybind11;
using nlohmann::json;

namespace kbv {

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
  // A file this process cannot see (a pre-started candidate worker, supervisor/warm_pool.h, has no
  // solution file bound): its lines come from the code, so tracebacks still show them.
  if (!py::module_::import("os").attr("path").attr("exists")(filename).cast<bool>())
    py::module_::import("linecache").attr("cache")[py::str(filename)] =
        py::make_tuple(code.size(), py::none(), py::str(code).attr("splitlines")(true), filename);
  py::object compiled = builtins.attr("compile")(code, filename, "exec");
  builtins.attr("exec")(compiled, module.attr("__dict__"));
  return module;
}

void guard_cuda_sources(const std::string& device) {
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

void set_matmul_precision(const std::string& mode) {
  py::module_ torch = py::module_::import("torch");
  bool tf32 = mode == "tf32";
  torch.attr("set_float32_matmul_precision")(tf32 ? "high" : "highest");
  torch.attr("backends").attr("cuda").attr("matmul").attr("allow_tf32") = tf32;
  // "torch-default": PyTorch's own defaults, matmuls in FP32 and cuDNN convolutions in TF32.
  torch.attr("backends").attr("cudnn").attr("allow_tf32") = tf32 || mode == "torch-default";
}

MatmulPrecisionScope::MatmulPrecisionScope(const std::string& mode) {
  if (mode.empty()) return;
  set_matmul_precision(mode);
  set_ = true;
}

MatmulPrecisionScope::~MatmulPrecisionScope() {
  if (!set_) return;
  try {
    set_matmul_precision("fp32");
  } catch (...) {
  }
}

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

py::object from_wire(const json& j, TransferSet& transfers) {
  if (!j.is_object()) throw WorkerError{"protocol_error", "an argument is not a wire value: " + j.dump().substr(0, 80), ""};
  std::string kind = j.value("kind", "");
  if (kind == "tensor") return wrap(transfers.import_tensor(j));
  if (kind == "list" || kind == "tuple") {
    py::list items;
    for (const auto& item : j.at("items")) items.append(from_wire(item, transfers));
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

Outputs flatten_outputs(py::handle out) {
  py::handle tensor_type = py::module_::import("torch").attr("Tensor");
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

py::object wrap(const at::Tensor& t) { return py::reinterpret_steal<py::object>(THPVariable_Wrap(t)); }

Tolerance tolerance_from(const msg::WireTolerance& wire, double fallback) {
  Tolerance tol;
  tol.atol = wire.atol.value_or(fallback);
  tol.rtol = wire.rtol.value_or(fallback);
  tol.rel_l2 = wire.rel_l2.value_or(fallback);
  tol.use_rel_l2 = wire.use_rel_l2;
  return tol;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace kbv
