# Honest CPU solution: running sum along the dimension, double accumulator.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
// Prefix sums along one dimension of an (outer, length, inner) view, double accumulators.
torch::Tensor cumsum_cpu(torch::Tensor x, int64_t dim) {
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
            for (int64_t t = 0; t < len; ++t) {
                acc += in[base + t * inner];
                out[base + t * inner] = (float)acc;
            }
        }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_130_cpu_honest",
    cpp_sources=cpp_source,
    functions=["cumsum_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        return ext.cumsum_cpu(x, self.dim)
