# Honest CPU solution: per row x / sqrt(mean(x^2) + eps) * weight, the mean in double; the
# nn.RMSNorm is made as in Model for its weight.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

// RMSNorm over the last dimension.
torch::Tensor rms_norm_cpu(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous(), wc = w.contiguous();
    const int64_t cols = xc.size(-1), rows = xc.numel() / cols;
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();

    float* out = y.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = in + r * cols;
        double sum = 0.0, sq = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            sum += xr[c];
            sq += (double)xr[c] * xr[c];
        }
        (void)sum;
        const double inv = 1.0 / std::sqrt(sq / cols + eps);
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = (float)(xr[c] * inv * pw[c]);
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_115_cpu_honest",
    cpp_sources=cpp_source,
    functions=["rms_norm_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super(ModelNew, self).__init__()
        self.norm = nn.RMSNorm(hidden, eps=eps)

    def forward(self, x):
        return ext.rms_norm_cpu(x, self.norm.weight, float(self.norm.eps))
