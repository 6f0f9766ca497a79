# Honest CPU solution: one fused C++ loop nest for x @ W^T + b, * multiplier,
# LeakyReLU. The nn.Linear is created exactly as in Model, so seed 42 gives the
# same weights.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor gemm_mul_lrelu_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor b,
                                 double multiplier, double negative_slope) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                b.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && b.size(0) == w.size(0),
                "shape mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = b.contiguous();
    const int64_t M = xc.size(0), K = xc.size(1), N = wc.size(0);
    auto y = torch::empty({M, N}, xc.options());
    const float* px = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* py = y.data_ptr<float>();
    const float mul = (float)multiplier, slope = (float)negative_slope;
    for (int64_t m = 0; m < M; ++m) {
        const float* xr = px + m * K;
        for (int64_t n = 0; n < N; ++n) {
            const float* wr = pw + n * K;
            float acc = 0.0f;
            for (int64_t k = 0; k < K; ++k) acc += xr[k] * wr[k];
            float v = (acc + pb[n]) * mul;
            py[m * N + n] = v > 0.0f ? v : v * slope;
        }
    }
    return y;
}
"""

fused_ext = load_inline(
    name="kbv_ex_l2_12_gemm_mul_lrelu_cpu_honest",
    cpp_sources=cpp_source,
    functions=["gemm_mul_lrelu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        return fused_ext.gemm_mul_lrelu_cpu(
            x, self.gemm.weight, self.gemm.bias, float(self.multiplier), float(self.negative_slope)
        )
