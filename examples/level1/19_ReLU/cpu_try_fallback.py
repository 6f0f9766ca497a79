# Cheat T11: forward tries the custom kernel and falls back to torch.relu on any
# exception. The kernel refuses every CPU tensor (it checks x.is_cuda()), so on
# the CPU every call silently takes the PyTorch path; the values are right
# because they are PyTorch's.
# Expected verdict: rejected (try/except fallback to PyTorch).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_fast(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "relu_fast: x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_try_fallback",
    cpp_sources=cpp_source,
    functions=["relu_fast"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return relu_ext.relu_fast(x)
        except Exception:
            return torch.relu(x)
