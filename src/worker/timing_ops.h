// The timing ops of both roles (docs/TIMING.md): the reference's input sets, baselines, fresh
// draws and spot checks, the candidate's timed calls, the device calibration. The loop itself is
// worker/timing.*.
#pragma once
#include <vector>

#include <ATen/ATen.h>
#include <torch/extension.h>

#include "worker/dispatch.h"
#include "worker/timing.h"
#include "worker/transfer.h"

namespace kbv {

struct ReferenceState;
struct CandidateState;

// The timed calls' inputs, kept between time_inputs (or the candidate's time) and time_release.
struct TimingInputs {
  LiveInputs sets;                                // per set, the tensor arguments; live buffers
  std::vector<std::vector<at::Tensor>> expected;  // reference: strict-FP32 outputs of each set
  std::vector<pybind11::object> arg_template;     // set 0's arguments (tensors replaced by live ones)
  std::vector<int> tensor_pos;                    // argument index of each tensor
  TransferSet transfers;
  // Fresh draws for a candidate's timed calls: the reference writes each draw into set 0's shared
  // buffers (its views of them here), the candidate copies them into its live ones.
  std::vector<at::Tensor> staging;
  void clear();
};

void add_reference_timing_ops(ReferenceState& s, OpTable& ops);  // time_inputs, time, time_draw, ...
void add_candidate_timing_ops(CandidateState& s, OpTable& ops);  // time, time_release

}  // namespace kbv
