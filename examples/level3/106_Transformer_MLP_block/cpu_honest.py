# Honest CPU solution: layer norm, fc1, exact GELU, fc2 and the residual in C++ in double.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>
#include <vector>

using Vec = std::vector<double>;

static Vec to_vec(const torch::Tensor& t) {
    auto c = t.contiguous();
    return Vec(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// y (M, N) = x (M, K) @ W^T + b, W (N, K) and b float32 tensors.
static Vec linear(const Vec& x, int64_t M, int64_t K, const torch::Tensor& w, const torch::Tensor& b) {
    auto wc = w.contiguous(), bc = b.contiguous();
    const int64_t N = wc.size(0);
    const float* pw = wc.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    Vec y((size_t)(M * N));
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double acc = pb[n];
            for (int64_t k = 0; k < K; ++k) acc += x[m * K + k] * pw[n * K + k];
            y[m * N + n] = acc;
        }
    return y;
}

static torch::Tensor to_tensor(const Vec& v, std::vector<int64_t> shape) {
    auto t = torch::empty(shape, torch::kFloat32);
    for (size_t i = 0; i < v.size(); ++i) t.data_ptr<float>()[i] = (float)v[i];
    return t;
}

torch::Tensor mlp_block_cpu(torch::Tensor x, torch::Tensor ln_w, torch::Tensor ln_b, double eps, torch::Tensor w1,
                            torch::Tensor b1, torch::Tensor w2, torch::Tensor b2) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 2, "float32 (tokens, E) only");
    const int64_t T = x.size(0), E = x.size(1);
    Vec in = to_vec(x), g = to_vec(ln_w), be = to_vec(ln_b), h((size_t)(T * E));
    for (int64_t t = 0; t < T; ++t) {
        double sum = 0.0, sq = 0.0;
        for (int64_t e = 0; e < E; ++e) {
            sum += in[t * E + e];
            sq += in[t * E + e] * in[t * E + e];
        }
        const double mean = sum / E, inv = 1.0 / std::sqrt(std::max(sq / E - mean * mean, 0.0) + eps);
        for (int64_t e = 0; e < E; ++e) h[t * E + e] = (in[t * E + e] - mean) * inv * g[e] + be[e];
    }
    Vec a = linear(h, T, E, w1, b1);
    for (double& v : a) v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    Vec out = linear(a, T, w1.size(0), w2, b2);
    for (size_t i = 0; i < out.size(); ++i) out[i] += in[i];
    return to_tensor(out, {T, E});
}
"""

ext = load_inline(
    name="kbv_ex_l3_106_cpu_honest",
    cpp_sources=cpp_source,
    functions=["mlp_block_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, embed_dim, hidden_dim):
        super(ModelNew, self).__init__()
        self.norm = nn.LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, embed_dim)

    def forward(self, x):
        return ext.mlp_block_cpu(x, self.norm.weight, self.norm.bias, float(self.norm.eps), self.fc1.weight,
                                 self.fc1.bias, self.fc2.weight, self.fc2.bias)
