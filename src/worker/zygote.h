// kbv_worker.zygote(): the worker zygote's loop (worker/zygote.cc; DESIGN.md "Worker zygote").
#pragma once
#include <pybind11/pybind11.h>

namespace kbv {

namespace py = pybind11;

// Serves fork requests on fd 3 until the supervisor closes it (then None). In each forked worker
// it returns (role, environment) once the worker is set up: the caller sets os.environ and serves.
py::object zygote();

}  // namespace kbv
