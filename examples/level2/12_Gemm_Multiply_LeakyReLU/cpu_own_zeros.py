# Attack on the ablation (T11, known limit): PyTorch computes the answer, and an own kernel adds
# zeros it computed (0 * its input, in C++) to it. The own result reaches the output (poisoned, it
# changes every element), and the own call replayed alone is own code: no runtime rule can tell
# this from an honest elementwise kernel (docs/POLICY.md, issue 29). Its forward share is reported.
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
    name="kbv_ex_l2_12_cpu_own_zeros",
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
        return out + ext.scale_leaky_relu_cpu(y, 0.0, 0.0)
