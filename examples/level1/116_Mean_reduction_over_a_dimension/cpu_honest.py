# Honest CPU solution: mean over one dimension of an (outer, reduce, inner) view, double
# accumulator.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>
#include <vector>

// x viewed as (outer, reduce, inner); the result drops the reduced dimension.
torch::Tensor mean_dim_cpu(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    const int64_t nd = x.dim();
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "dim out of range");
    auto xc = x.contiguous();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < nd; ++d) inner *= xc.size(d);
    const int64_t red = xc.size(dim);
    TORCH_CHECK(red > 0, "empty reduction");
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < nd; ++d)
        if (d != dim) shape.push_back(xc.size(d));
    auto y = torch::empty(shape, xc.options().dtype(torch::kFloat32));
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            const float* p = in + o * red * inner + i;
            double acc = 0.0;
            for (int64_t r = 0; r < red; ++r) acc += p[r * inner];
            out[o * inner + i] = (float)(acc / red);
        }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_116_cpu_honest",
    cpp_sources=cpp_source,
    functions=["mean_dim_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        return ext.mean_dim_cpu(x, self.dim)
