# Cheat T11: ModelNew keeps a copy of the reference Model as a member and
# returns its output. It does call its C++ kernel, on the input, and throws the
# result away, so a checker that only asks "is a custom kernel called?" is
# satisfied. The values are right because they are PyTorch's.
# Expected verdict: rejected (static rule reference_model).
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
    name="kbv_ex_l1_19_relu_cpu_calls_model",
    cpp_sources=cpp_source,
    functions=["relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.reference = Model()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        relu_ext.relu_cpu(x)  # the decoy
        return self.reference(x)
