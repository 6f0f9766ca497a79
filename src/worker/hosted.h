// The Python model a reference or candidate worker hosts: its module, the model on the device in
// the evaluated precision, its init inputs' transfers, and one forward call of it.
#pragma once
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <torch/extension.h>

#include "worker/transfer.h"

namespace kbv {

struct Hosted {
  std::string device = "cpu";
  pybind11::object module;
  pybind11::object model;
  TransferSet init_transfers;  // init inputs, alive as long as the model
  TransferSet transfers;       // per trial, cleared by "release"
  // Precision mode (docs/PRECISION.md): "fp32", "bf16" or "fp16".
  std::string precision = "fp32";
  at::ScalarType dtype = at::kFloat;

  void set_device(const std::string& name);        // "cpu" | "cuda", else a protocol_error
  void choose_precision(const std::string& name);  // else a protocol_error
  at::Device torch_device() const;
  // The loaded model with its floating parameters and buffers cast to the precision's dtype
  // (nn.Module.to(dtype) leaves integer buffers alone).
  pybind11::object cast_model(pybind11::object m) const;
  // A copy of an evaluated argument as an fp32 model takes it: reduced floating tensors back to
  // float32, other tensors cloned (the reference's call may change them), values as they are.
  pybind11::object fp32_arg(pybind11::handle item) const;
  pybind11::object move_to_device(pybind11::object value) const;
  // One forward call of `model`, without autograd, until the device is idle. A Python exception
  // becomes a WorkerError of `kind`.
  pybind11::object forward(const std::vector<pybind11::object>& args, const char* kind, const char* context,
                           double& seconds) const;
  // Memory (and with `kernels`, kernel attribution) of `repeats` forward calls on `args`, which
  // are copied into this worker's own torch memory first (worker/memory.h); the body of a
  // measure reply. `tf32`: under the TF32 settings of the realistic baseline.
  nlohmann::json measure_calls(std::vector<pybind11::object> args, int64_t allocated_before, int repeats,
                               bool kernels, bool tf32, const char* kind);
};

}  // namespace kbv
