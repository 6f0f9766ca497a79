# Cheat-shaped bug (T16, reading uninitialised memory that happens to be right): a GEMM-style
# epilogue out = relu(x) + beta * acc with beta = 0 and `acc` a torch::empty block that is never
# written. 0 * garbage is 0 for every finite garbage value, and the blocks the allocator hands
# back during the trials hold old finite tensors or fresh zero pages, so the trials pass. When
# free memory holds NaN (kbv's runtime audit fills freed blocks with NaN before a repeat on fresh
# buffers), 0 * NaN = NaN and the repeat differs (nondeterministic).
# Expected verdict: rejected.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    auto acc = torch::empty_like(xc);  // the "C" of out = relu(x) + beta * C; never initialised
    const float beta = 0.0f;
    const float* in = xc.data_ptr<float>();
    const float* c = acc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        out[i] = (v > 0.0f ? v : 0.0f) + beta * c[i];
    }
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_uninit_scratch",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cpu(x)
