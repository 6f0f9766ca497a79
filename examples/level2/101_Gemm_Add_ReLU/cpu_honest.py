# Honest CPU solution: fused x @ W^T, + the learned bias, ReLU, in one C++ pass; the bias-free
# nn.Linear and the bias parameter are made in Model's order.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>
#include <optional>
#include <vector>

// y = x @ W^T (+ b) in double, x (M, K), W (N, K): one row of y per call.
static void linear_row(const float* x, const float* w, const float* b, int64_t K, int64_t N, double* y) {
    for (int64_t n = 0; n < N; ++n) {
        double acc = b ? b[n] : 0.0;
        const float* wr = w + n * K;
        for (int64_t k = 0; k < K; ++k) acc += (double)x[k] * wr[k];
        y[n] = acc;
    }
}

static double gelu(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }

torch::Tensor gemm_add_relu_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor bias) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1),
                "float32 x (M, K) and W (N, K)");
    auto xc = x.contiguous(), wc = w.contiguous();
    auto bc = bias.contiguous();
    const float* pb = bc.data_ptr<float>();
    const int64_t M = xc.size(0), K = xc.size(1), N = wc.size(0);
    auto out = torch::empty({M, N}, xc.options());
    float* o = out.data_ptr<float>();
    std::vector<double> row(N);
    for (int64_t m = 0; m < M; ++m) {
        linear_row(xc.data_ptr<float>() + m * K, wc.data_ptr<float>(), nullptr, K, N, row.data());
        for (int64_t n = 0; n < N; ++n) o[m * N + n] = (float)std::max(row[n] + pb[n], 0.0);
    }
    return out;
}
"""

ext = load_inline(
    name="kbv_ex_l2_101_cpu_honest",
    cpp_sources=cpp_source,
    functions=["gemm_add_relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.02)

    def forward(self, x):
        return ext.gemm_add_relu_cpu(x, self.gemm.weight, self.bias)
