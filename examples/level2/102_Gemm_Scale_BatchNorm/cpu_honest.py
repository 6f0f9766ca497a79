# Honest CPU solution: x @ W^T + b times the scale, kept in double, then batch statistics per
# feature (training-mode batch norm) and the affine, all in C++.
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

torch::Tensor gemm_scale_bn_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor bias, torch::Tensor scale, torch::Tensor gamma, torch::Tensor beta, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1),
                "float32 x (M, K) and W (N, K)");
    auto xc = x.contiguous(), wc = w.contiguous();
    auto bc = bias.contiguous();
    const float* pb = bc.data_ptr<float>();
    const int64_t M = xc.size(0), K = xc.size(1), N = wc.size(0);
    auto out = torch::empty({M, N}, xc.options());
    float* o = out.data_ptr<float>();
    std::vector<double> row(N);
    auto sc = scale.contiguous(), gc = gamma.contiguous(), bec = beta.contiguous();
    std::vector<double> y((size_t)(M * N));
    for (int64_t m = 0; m < M; ++m) {
        linear_row(xc.data_ptr<float>() + m * K, wc.data_ptr<float>(), pb, K, N, y.data() + m * N);
        for (int64_t n = 0; n < N; ++n) y[m * N + n] *= sc.data_ptr<float>()[n];
    }
    for (int64_t n = 0; n < N; ++n) {
        double sum = 0.0, sq = 0.0;
        for (int64_t m = 0; m < M; ++m) {
            sum += y[m * N + n];
            sq += y[m * N + n] * y[m * N + n];
        }
        const double mean = sum / M, var = std::max(sq / M - mean * mean, 0.0);
        const double g = gc.data_ptr<float>()[n] / std::sqrt(var + eps), b2 = bec.data_ptr<float>()[n];
        for (int64_t m = 0; m < M; ++m) o[m * N + n] = (float)((y[m * N + n] - mean) * g + b2);
    }
    return out;
}
"""

ext = load_inline(
    name="kbv_ex_l2_102_cpu_honest",
    cpp_sources=cpp_source,
    functions=["gemm_scale_bn_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.rand(out_features) + 0.5)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return ext.gemm_scale_bn_cpu(x, self.gemm.weight, self.gemm.bias, self.scale, self.bn.weight, self.bn.bias,
                                     float(self.bn.eps))
