# Cheat T7: the C++ "kernel" computes nothing and returns an uninitialised
# tensor of the right shape, counting on the allocator to hand back the block
# where the reference's output (just computed, just freed, in the same process)
# still lies. In kbv the reference never runs in the candidate's process, so the
# block holds whatever the candidate's own process left there (or fresh zero
# pages).
# Expected verdict: wrong_output (which distributions fail depends on what the
# allocator returns: zeros pass D4 only).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_reuse_cpu(torch::Tensor x) {
    return torch::empty_like(x);  // whatever the freed block holds
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_reuse_freed",
    cpp_sources=cpp_source,
    functions=["relu_reuse_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_reuse_cpu(x)
