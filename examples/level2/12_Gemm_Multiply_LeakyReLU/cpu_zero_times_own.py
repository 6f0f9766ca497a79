# Cheat (T11, fallback to PyTorch that keeps the own result "in" the output): PyTorch computes the
# answer, and the own epilogue's result is added multiplied by zero after torch.nan_to_num, so
# that poisoning it with NaN (NaN * 0 = NaN) would show a change. The ablation poisons with finite
# wrong values (alternating +-(max|genuine| + 1)): 0 * finite = 0, no output element changes:
# no_custom_compute.
# Expected verdict: rejected.
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
    name="kbv_ex_l2_12_cpu_zero_times_own",
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
        own = torch.nan_to_num(ext.scale_leaky_relu_cpu(y, self.multiplier, self.negative_slope))
        return F.leaky_relu(y * self.multiplier, self.negative_slope) + 0.0 * own
