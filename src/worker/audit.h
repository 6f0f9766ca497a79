// Runtime audits in the candidate worker (DESIGN.md T2, T3, T5, T11, T16; docs/POLICY.md).
// Observations only, made in C++ around calls of the candidate's forward; the decisions are in
// src/check/runtime_audit.* (the supervisor's side). Two requests, after the trials passed:
//   first(A):  a call on fresh private copies of A: CPU samples of what ran (several calls
//              until the share is measured), threads alive after the return, outputs sharing
//              storage with inputs.
//   second(B): free memory filled with NaN, then A again in fresh buffers (must equal the first
//              call's outputs), then those same buffers overwritten in place with B's values and
//              one more call, whose outputs are exported for the reference to check against B.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <torch/extension.h>

#include "check/compare.h"
#include "worker/transfer.h"

namespace kbv {

// One forward call of the candidate on `args`, its outputs flattened to plain tensors (the
// worker's own call: no autograd, device synchronised; throws as a trial call would).
using ForwardFn = std::function<std::vector<at::Tensor>(const std::vector<pybind11::object>& args)>;

// Pairs (output index, argument position) whose storages overlap. `inputs[k]` is at argument
// position `positions[k]`.
nlohmann::json storage_overlaps(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs,
                                const std::vector<int>& positions);

class CandidateAudit {
 public:
  nlohmann::json first(const std::vector<pybind11::object>& args, const ForwardFn& forward, const std::string& device);
  nlohmann::json second(const std::vector<pybind11::object>& args, const ForwardFn& forward,
                        const std::string& device, const Tolerance& tolerance, TransferSet& transfers);

 private:
  // The ablation call on A (own_calls.h, poison mode) against `genuine`, the repeat's outputs:
  // {"ran", "functions", "own_calls", "outputs_replaced", "elements_overwritten",
  //  "outputs": [{"output", "numel", "changed"}] | "raised", "error"?} or {"ran": false, "reason"}.
  nlohmann::json ablation(const ForwardFn& forward, const Tolerance& tolerance, const std::vector<at::Tensor>& genuine);

  std::vector<pybind11::object> pristine_;  // private copies of A's values
  std::vector<pybind11::object> first_args_;  // the first phase's buffers (freed by the second)
  std::vector<at::Tensor> first_outputs_;   // copies of the first call's outputs
};

}  // namespace kbv
