# Honest CPU solution: training-mode batch norm: per-channel mean and biased variance over (N, H,
# W) in double, then the affine of the nn.BatchNorm2d made as in Model.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor batch_norm2d_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 4, "float32 (N, C, H, W) only");
    auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), HW = xc.size(2) * xc.size(3);
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t c = 0; c < C; ++c) {
        double sum = 0.0, sq = 0.0;
        for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < HW; ++i) {
                const double v = in[(n * C + c) * HW + i];
                sum += v;
                sq += v * v;
            }
        const double count = (double)(N * HW);
        const double mean = sum / count;
        const double var = std::max(sq / count - mean * mean, 0.0);
        const double scale = wc.data_ptr<float>()[c] / std::sqrt(var + eps);
        const double shift = bc.data_ptr<float>()[c] - mean * scale;
        for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < HW; ++i) {
                const int64_t k = (n * C + c) * HW + i;
                out[k] = (float)(in[k] * scale + shift);
            }
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_112_cpu_honest",
    cpp_sources=cpp_source,
    functions=["batch_norm2d_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super(ModelNew, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x):
        return ext.batch_norm2d_cpu(x, self.bn.weight, self.bn.bias, float(self.bn.eps))
