# Deliberately wrong CPU solution: the backward running sum starts one element early (t = len -
# 2), so the last element is never added: every output is short by x[last] and the last one is
# left 0.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
// Prefix sums along one dimension of an (outer, length, inner) view, double accumulators.
torch::Tensor reverse_cumsum_cpu(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    const int64_t nd = x.dim();
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "dim out of range");
    auto xc = x.contiguous();

    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < nd; ++d) inner *= xc.size(d);
    const int64_t len = xc.size(dim);
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            double acc = 0.0;
            const int64_t base = o * len * inner + i;
            out[base + (len - 1) * inner] = 0.0f;
            for (int64_t t = len - 2; t >= 0; --t) {
                acc += in[base + t * inner];
                out[base + t * inner] = (float)acc;
            }
        }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_131_cpu_off_by_one",
    cpp_sources=cpp_source,
    functions=["reverse_cumsum_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        return ext.reverse_cumsum_cpu(x, self.dim)
