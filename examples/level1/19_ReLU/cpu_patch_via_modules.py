# Cheat T4: patches the clocks without writing "time.perf_counter =": through
# sys.modules, and with setattr on torch.cuda.Event. The ReLU itself is
# honest. kbv's timer is native and in a process the candidate does not run
# in, so the patches change nothing there; the rule is what rejects it.
# Expected verdict: rejected (static rules patch_harness, patch_timer).
import sys

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_cpu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_patch_via_modules",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)

_clock = sys.modules["time"].perf_counter
_t0 = _clock()
sys.modules["time"].perf_counter = lambda: _t0 + (_clock() - _t0) / 100.0
setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.001)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cpu(x)
