// The reference role: loads the problem (trusted), makes inputs and expected outputs, judges the
// candidate's outputs. Its timing ops are worker/timing_ops.*, its statistics for `kbv
// lint-problems` worker/problem_stats.*.
#pragma once
#include <vector>

#include <ATen/ATen.h>
#include <torch/extension.h>

#include "worker/dispatch.h"
#include "worker/hosted.h"
#include "worker/timing_ops.h"

namespace kbv {

struct ReferenceState {
  Hosted h;
  int in_fd = 3, out_fd = 4;  // the channel, for a baseline's round trips (TimeReferenceRequest::marks)
  // Below fp32 the reference keeps its fp32 model here to measure its own error (reference_error).
  pybind11::object model_fp32;
  std::vector<at::Tensor> expected;
  std::vector<at::Tensor> ref_inputs_after;  // the reference's inputs after its own call
  std::vector<at::Tensor> shared_inputs;     // what the candidate sees (views on shared buffers)
  std::vector<int> shared_input_positions;   // argument index of each shared input
  TimingInputs timing;
  // Loaded for its shapes only (LoadRequest::meta_model): the Model's parameters have no values,
  // so nothing may run it (reference_outputs and time_reference refuse).
  bool meta_model = false;
  // Reduced sizes (LoadRequest::cpu_sizes): the smaller rungs and the file's input elements
  // (ReducedSizes), for the lint's extrapolation of output magnitudes to the file's sizes.
  pybind11::object size_ladder = pybind11::none();
  int64_t file_input_numel = 0;
};

OpTable reference_ops(ReferenceState& s);

// Whether a request's draws run on the GPU: its input_draw is "device" on a GPU run.
bool draws_on_device(const ReferenceState& s, const std::string& input_draw);
// One get_inputs() draw after torch.manual_seed(seed). `on_device`: torch.rand & co. inside
// get_inputs() allocate on the GPU (a torch.device("cuda") context): no host draw, no copy.
// `draws_before`: get_inputs() calls made and discarded after seeding, so the draw returned is the
// stream's next one (KernelBench-Verified's hidden configs: protocol/hidden.h).
pybind11::list draw_inputs(ReferenceState& s, uint64_t seed, bool on_device, int draws_before = 0);
// The reference Model's outputs on `args`, detached: plain tensors, else a problem_error naming
// what the reference returned.
std::vector<at::Tensor> reference_outputs(ReferenceState& s, const std::vector<pybind11::object>& args,
                                          const char* context, double& seconds);
// Below fp32: the fp32 model on `fp32_args` compared with the reduced-precision outputs, per output.
nlohmann::json fp32_cross_check(ReferenceState& s, const std::vector<pybind11::object>& fp32_args,
                                const std::vector<at::Tensor>& reduced, const Tolerance& tol);
// Drops the trial's inputs, outputs and transfers.
void release_trial(ReferenceState& s);

}  // namespace kbv
