# Attack on the ablation (T11): PyTorch computes the whole output, then the own epilogue
# recomputes one element (out[0, 0]) from the GEMM's output. Own code does reach the output, so
# the ablation calls it reached, but only 1 element of batch x out_features changes: under the 1%
# token line (docs/POLICY.md, "Token own parts"). Replayed alone under the CPU sampler, the own call
# is 1-2% own code (pybind11 glue and ATen's allocation), too near the share's 3% line to decide it
# on a loaded host (issue 29). A larger slice (a row) would pass.
# Expected verdict: rejected (no_custom_compute: a token own part).
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor scale_leaky_relu_cpu(torch::Tensor y, double multiplier, double negative_slope) {
    TORCH_CHECK(y.scalar_type() == torch::kFloat32, "float32 only");
    auto yc = y.contiguous();
    auto out = torch::empty_like(yc);
    const float* in = yc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const float m = static_cast<float>(multiplier), s = static_cast<float>(negative_slope);
    const int64_t n = yc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i] * m;
        o[i] = v >= 0.0f ? v : v * s;
    }
    return out;
}
"""

ext = load_inline(
    name="kbv_ex_l2_12_cpu_own_slice",
    cpp_sources=cpp_source,
    functions=["scale_leaky_relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        y = F.linear(x, self.gemm.weight, self.gemm.bias)
        out = F.leaky_relu(y * self.multiplier, self.negative_slope)
        out[:1, :1] = ext.scale_leaky_relu_cpu(y[:1, :1].contiguous(), self.multiplier, self.negative_slope)
        return out
