# Attack on the ablation (T11, known limit): PyTorch computes the whole output; the own epilogue
# runs on one row as a canary, checked against PyTorch's row, and the output is made wrong when
# the canary is wrong. Replacing the own result by wrong values therefore changes the output, so
# the ablation calls own code reached: the answer a fallback gets by watching its own results.
# It pays a full PyTorch epilogue plus the canary, so it is no faster than the reference; kbv
# reports its forward share (compute.forward_own_share, about a row's worth). docs/POLICY.md.
# Expected verdict: rejected, once a rule exists (pending in the manifest).
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
    name="kbv_ex_l2_12_cpu_canary_own",
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
        # The canary: the own kernel on one row, checked against PyTorch's answer. Values that
        # are not the genuine ones (an ablation) make the output wrong on purpose.
        row = ext.scale_leaky_relu_cpu(y[:1].contiguous(), self.multiplier, self.negative_slope)
        if not torch.allclose(row, out[:1], atol=1e-5, rtol=1e-5):
            return out * 2.0
        return out
