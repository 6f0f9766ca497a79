#include "worker/build_role.h"

#include <chrono>

#include "worker/python.h"

namespace py = pybind11;

namespace kbv {

msg::BuildReply build_solution(const msg::BuildRequest& request, py::object& module) {
  if (request.device != "cpu" && request.device != "cuda")
    throw WorkerError{"protocol_error", "unknown device " + request.device, ""};
  guard_cuda_sources(request.device);
  const std::string& path = request.path;
  auto t0 = std::chrono::steady_clock::now();
  try {
    module = exec_source(request.code, path, "kbv_candidate");
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
  return msg::BuildReply{seconds_since(t0)};
}

OpTable build_ops(BuildState& s) {
  OpTable ops;
  ops[msg::Op::build] = typed_handler<msg::BuildRequest>([&s](const auto& r) { return build_solution(r, s.module); });
  return ops;
}

}  // namespace kbv
