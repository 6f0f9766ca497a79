# Honest CPU solution: sum over one dimension of a contiguous tensor viewed as
# (outer, reduce, inner); keepdim=True like the reference.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <vector>

torch::Tensor sum_dim_cpu(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    const int64_t nd = x.dim();
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "dim out of range");
    auto xc = x.contiguous();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < nd; ++d) inner *= xc.size(d);
    const int64_t red = xc.size(dim);
    std::vector<int64_t> out_shape(xc.sizes().begin(), xc.sizes().end());
    out_shape[dim] = 1;
    auto y = torch::empty(out_shape, xc.options());
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    std::vector<double> acc(inner);
    for (int64_t o = 0; o < outer; ++o) {
        std::fill(acc.begin(), acc.end(), 0.0);
        const float* base = in + o * red * inner;
        for (int64_t r = 0; r < red; ++r) {
            const float* row = base + r * inner;
            for (int64_t i = 0; i < inner; ++i) acc[i] += row[i];
        }
        for (int64_t i = 0; i < inner; ++i) out[o * inner + i] = (float)acc[i];
    }
    return y;
}
"""

sum_ext = load_inline(
    name="kbv_ex_l1_47_sum_cpu_honest",
    cpp_sources=cpp_source,
    functions=["sum_dim_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sum_ext.sum_dim_cpu(x, self.dim)
