# Honest CPU solution: per row mean and biased variance in double, then the affine of the
# nn.LayerNorm made as in Model.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

// LayerNorm over the last dimension.
torch::Tensor layer_norm_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous(), wc = w.contiguous();
    const int64_t cols = xc.size(-1), rows = xc.numel() / cols;
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    auto bc = b.contiguous();
    const float* pb = bc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = in + r * cols;
        double sum = 0.0, sq = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            sum += xr[c];
            sq += (double)xr[c] * xr[c];
        }
        const double mean = sum / cols;
        const double inv = 1.0 / std::sqrt(std::max(sq / cols - mean * mean, 0.0) + eps);
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = (float)((xr[c] - mean) * inv * pw[c] + pb[c]);
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_113_cpu_honest",
    cpp_sources=cpp_source,
    functions=["layer_norm_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x):
        return ext.layer_norm_cpu(x, self.ln.weight, self.ln.bias, float(self.ln.eps))
