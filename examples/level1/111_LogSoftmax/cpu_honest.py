# Honest CPU solution: per row, x - max - log(sum(exp(x - max))) with the sum in double.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor log_softmax_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 2, "float32 (rows, cols) only");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = in + r * cols;
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; ++c) m = std::max(m, xr[c]);
        double s = 0.0;
        for (int64_t c = 0; c < cols; ++c) s += std::exp((double)xr[c] - m);
        const double lse = m + std::log(s);
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = (float)(xr[c] - lse);
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_111_cpu_honest",
    cpp_sources=cpp_source,
    functions=["log_softmax_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return ext.log_softmax_cpu(x)
