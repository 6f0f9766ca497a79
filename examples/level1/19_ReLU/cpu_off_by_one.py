# Wrong: off-by-one row loop (`r < rows - 1`) leaves the last row at zero.
# The last row is a full row of positive values under D1-D3; under D4 every
# input is <= 0, the right answer there is all zeros, and the bug is invisible.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_rows_cpu(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.dim() == 2, "x must be 2-D");
    auto xc = x.contiguous();
    auto y = torch::zeros_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const int64_t rows = xc.size(0);
    const int64_t cols = xc.size(1);
    for (int64_t r = 0; r < rows - 1; ++r) {  // BUG: skips the last row
        for (int64_t c = 0; c < cols; ++c) {
            const float v = in[r * cols + c];
            out[r * cols + c] = v > 0.0f ? v : 0.0f;
        }
    }
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cpu_off_by_one",
    cpp_sources=cpp_source,
    functions=["relu_rows_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_rows_cpu(x)
