# Honest CPU solution: mean and biased variance per (sample, group) over the group's channels and
# pixels in double, then the per-channel affine of the nn.GroupNorm made as in Model.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor group_norm_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t groups, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() >= 2, "float32 (N, C, ...) only");
    auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), HW = xc.numel() / (N * C), cpg = C / groups;
    TORCH_CHECK(C % groups == 0, "channels must divide into groups");
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t base = (n * C + g * cpg) * HW, count = cpg * HW;
            double sum = 0.0, sq = 0.0;
            for (int64_t i = 0; i < count; ++i) {
                sum += in[base + i];
                sq += (double)in[base + i] * in[base + i];
            }
            const double mean = sum / count;
            const double inv = 1.0 / std::sqrt(std::max(sq / count - mean * mean, 0.0) + eps);
            for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c) {
                const double scale = inv * wc.data_ptr<float>()[c], shift = bc.data_ptr<float>()[c];
                for (int64_t i = 0; i < HW; ++i) {
                    const int64_t k = (n * C + c) * HW + i;
                    out[k] = (float)((in[k] - mean) * scale + shift);
                }
            }
        }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_114_cpu_honest",
    cpp_sources=cpp_source,
    functions=["group_norm_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_groups: int, num_channels: int):
        super(ModelNew, self).__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_channels)

    def forward(self, x):
        return ext.group_norm_cpu(x, self.gn.weight, self.gn.bias, self.gn.num_groups, float(self.gn.eps))
