# Honest CPU solution that mixes, as KernelBench allows: the GEMM + bias (the
# O(M*N*K) part) is a C++ loop nest; the multiplier and the LeakyReLU are
# PyTorch ops on its output. The call is wrapped in a try/except that adds
# context and re-raises: a naive checker flags any try, but nothing falls back.
# Expected verdict: correct.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor linear_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
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
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; ++k) acc += px[m * K + k] * pw[n * K + k];
            py[m * N + n] = acc + pb[n];
        }
    return y;
}
"""

linear_ext = load_inline(
    name="kbv_ex_l2_12_gemm_mul_lrelu_cpu_honest_mixed",
    cpp_sources=cpp_source,
    functions=["linear_cpu"],
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
        try:
            y = linear_ext.linear_cpu(x, self.gemm.weight, self.gemm.bias)
        except RuntimeError as e:
            raise RuntimeError(f"linear_cpu failed on input of shape {tuple(x.shape)}") from e
        return F.leaky_relu(y * self.multiplier, negative_slope=self.negative_slope)
