// Shared helpers of the worker's roles: errors as failed replies, Python exec and exceptions,
// device synchronisation, and the conversion of Python values to and from wire values.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <torch/extension.h>

#include "check/compare.h"
#include "proto/messages.h"
#include "worker/transfer.h"

namespace kbv {

// An error that becomes a {"ok": false} reply (msg::Failure).
struct WorkerError {
  std::string kind;  // problem_error, runtime_error, compile_error, protocol_error, rejected
  std::string message;
  std::string traceback;
};

// The text of the Python exception in flight, with its traceback, as a WorkerError of `kind`.
WorkerError python_error(const std::string& kind, const std::string& context, pybind11::error_already_set& e);

// Waits for the device (CUDA errors become a runtime_error); nothing on the CPU.
void sync_device(const std::string& device);
// Gives the caching allocator's free blocks back to the driver (the other worker on this GPU
// needs them); nothing on the CPU.
void release_cached_memory(const std::string& device);

// `code` executed as a fresh module `module_name` (registered in sys.modules) from `filename`.
pybind11::object exec_source(const std::string& code, const std::string& filename, const std::string& module_name);

// On a CPU run, load_inline with CUDA sources cannot work: installs a guard that says so before
// anything compiles (kind needs_cuda, worker/build_role.cc).
void guard_cuda_sources(const std::string& device);

// "fp32": strict (no TF32 anywhere); "tf32": matmul precision 'high' and cuDNN TF32 on;
// "torch-default": PyTorch's defaults (matmul FP32, cuDNN TF32 on).
void set_matmul_precision(const std::string& mode);

// `mode` (set_matmul_precision) for a scope, and "fp32" again when it ends, by an exception too:
// a baseline's calls, the baselines' twin's, the memory phase's tf32 calls. "" sets nothing. A
// failure to set it back is not thrown from the destructor (the worker's next request sets its own).
class MatmulPrecisionScope {
 public:
  explicit MatmulPrecisionScope(const std::string& mode);
  ~MatmulPrecisionScope();
  MatmulPrecisionScope(const MatmulPrecisionScope&) = delete;
  MatmulPrecisionScope& operator=(const MatmulPrecisionScope&) = delete;

 private:
  bool set_ = false;
};

// Plain values (ints, floats, strings, None, lists of them) as wire values; tensors as handles.
nlohmann::json to_wire(pybind11::handle value, TransferSet& transfers, const std::string& what);
pybind11::object from_wire(const nlohmann::json& j, TransferSet& transfers);

// The outputs of a forward call as a flat list of tensors; `plain` is false (with a reason)
// when an output is not a plain dense torch.Tensor (cheat T3: subclasses, lazy outputs).
struct Outputs {
  std::vector<at::Tensor> tensors;
  bool plain = true;
  std::string reason;
};
Outputs flatten_outputs(pybind11::handle out);

pybind11::object wrap(const at::Tensor& t);  // a tensor as a Python object

// The comparison tolerance a request carries, `fallback` for the bounds it leaves out.
Tolerance tolerance_from(const msg::WireTolerance& wire, double fallback);

double seconds_since(std::chrono::steady_clock::time_point t0);

}  // namespace kbv
