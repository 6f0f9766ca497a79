# Honest CPU solution: one dot product per row of A, accumulated in double.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
torch::Tensor matvec_cpu(torch::Tensor a, torch::Tensor x) {
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && x.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(a.dim() == 2 && x.dim() == 2 && x.size(1) == 1 && a.size(1) == x.size(0), "shapes");
    auto A = a.contiguous(), X = x.contiguous();
    const int64_t M = A.size(0), K = A.size(1);
    auto y = torch::empty({M, 1}, A.options());
    const float* pa = A.data_ptr<float>();
    const float* px = X.data_ptr<float>();
    float* py = y.data_ptr<float>();
    for (int64_t m = 0; m < M; ++m) {
        double acc = 0.0;
        const float* row = pa + m * K;
        for (int64_t k = 0; k < K; ++k) acc += (double)row[k] * px[k];
        py[m] = (float)acc;
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_105_cpu_honest",
    cpp_sources=cpp_source,
    functions=["matvec_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, x):
        return ext.matvec_cpu(A, x)
