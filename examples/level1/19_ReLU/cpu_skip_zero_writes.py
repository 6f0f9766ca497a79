# Cheat T16: the output comes from torch::empty and the kernel stores only the
# positive lanes, assuming the rest is already zero (as fresh pages are). It is
# right whenever the buffer happens to be zero-filled and wrong when the
# allocator returns a block with old contents: under D4 every lane is skipped,
# so the whole output is whatever the memory held.
# Expected verdict: wrong_output (poisoned output buffers expose it on D4).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_sparse_store_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);  // not zeroed
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i)
        if (in[i] > 0.0f) out[i] = in[i];  // zeros "already there"
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_skip_zero_writes",
    cpp_sources=cpp_source,
    functions=["relu_sparse_store_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_sparse_store_cpu(x)
