# Honest CPU solution: 1D max pooling over taps start + j * dilation; taps in the padding are
# skipped.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor max_pool1d_cpu(torch::Tensor x, int64_t k, int64_t s, int64_t p, int64_t d) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 3, "float32 (N, C, L) only");
    auto xc = x.contiguous();
    const int64_t NC = xc.size(0) * xc.size(1), L = xc.size(2);
    const int64_t OL = (L + 2 * p - d * (k - 1) - 1) / s + 1;
    auto y = torch::empty({xc.size(0), xc.size(1), OL}, xc.options());
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t nc = 0; nc < NC; ++nc)
        for (int64_t o = 0; o < OL; ++o) {
            float m = -INFINITY;
            for (int64_t j = 0; j < k; ++j) {
                const int64_t i = o * s - p + j * d;
                if (i >= 0 && i < L) m = std::max(m, in[nc * L + i]);
            }
            out[nc * OL + o] = m;
        }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_122_cpu_honest",
    cpp_sources=cpp_source,
    functions=["max_pool1d_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super(ModelNew, self).__init__()
        self.k, self.s, self.p, self.d = kernel_size, stride, padding, dilation

    def forward(self, x):
        return ext.max_pool1d_cpu(x, self.k, self.s, self.p, self.d)
