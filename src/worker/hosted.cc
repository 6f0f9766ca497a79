#include "worker/hosted.h"

#include <chrono>

#include "check/precision.h"
#include "worker/memory.h"
#include "worker/python.h"

namespace py = pybind11;
using nlohmann::json;

namespace kbv {

void Hosted::set_device(const std::string& name) {
  if (name != "cpu" && name != "cuda") throw WorkerError{"protocol_error", "unknown device " + name, ""};
  device = name;
}

void Hosted::choose_precision(const std::string& name) {
  auto t = precision_scalar_type(name);
  if (!t) throw WorkerError{"protocol_error", "unknown precision " + name, ""};
  precision = name;
  dtype = *t;
}

at::Device Hosted::torch_device() const {
  return device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
}

py::object Hosted::cast_model(py::object m) const {
  if (precision == "fp32") return m;
  py::module_ torch = py::module_::import("torch");
  return m.attr("to")(torch.attr(precision == "bf16" ? "bfloat16" : "float16"));
}

py::object Hosted::fp32_arg(py::handle item) const {
  if (!THPVariable_Check(item.ptr())) return py::reinterpret_borrow<py::object>(item);
  at::Tensor t = THPVariable_Unpack(item.ptr());
  return wrap(t.scalar_type() == dtype ? t.to(at::kFloat) : t.clone());
}

py::object Hosted::move_to_device(py::object value) const {
  if (THPVariable_Check(value.ptr())) return value.attr("to")(device);
  return value;
}

py::object Hosted::forward(const std::vector<py::object>& args, const char* kind, const char* context,
                           double& seconds) const {
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

json Hosted::measure_calls(std::vector<py::object> args, int64_t allocated_before, int repeats, bool kernels,
                           bool tf32, const char* kind) {
  for (auto& a : args)
    if (THPVariable_Check(a.ptr())) a = wrap(THPVariable_Unpack(a.ptr()).clone());
  transfers.clear();
  worker_memory::MeasureOptions o;
  o.device = device;
  o.repeats = repeats;
  o.input_bytes = worker_memory::torch_allocated(device) - allocated_before;
  o.kernels = kernels;
  o.own_roots = worker_memory::own_roots_from_environment();
  json result;
  {
    const MatmulPrecisionScope matmul(tf32 ? "tf32" : "");
    result = worker_memory::measure(
        [&]() {
          double seconds = 0;
          py::object out = forward(args, kind, "the forward call measured for memory raised", seconds);
          out = py::none();
          sync_device(device);
        },
        o);
  }
  args.clear();
  release_cached_memory(device);
  return result;
}

}  // namespace kbv
