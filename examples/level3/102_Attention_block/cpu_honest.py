# Honest CPU solution: layer norm, the fused q/k/v projection, per-head softmax attention and the
# output projection plus the residual, all in C++ in double.
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

torch::Tensor attention_block_cpu(torch::Tensor x, torch::Tensor ln_w, torch::Tensor ln_b, double eps,
                                  torch::Tensor qkv_w, torch::Tensor qkv_b, torch::Tensor out_w, torch::Tensor out_b,
                                  int64_t heads) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 3, "float32 (B, S, E) only");
    const int64_t B = x.size(0), S = x.size(1), E = x.size(2), Dh = E / heads, T = B * S;
    Vec in = to_vec(x), g = to_vec(ln_w), be = to_vec(ln_b);
    Vec h((size_t)(T * E));
    for (int64_t t = 0; t < T; ++t) {
        double sum = 0.0, sq = 0.0;
        for (int64_t e = 0; e < E; ++e) {
            sum += in[t * E + e];
            sq += in[t * E + e] * in[t * E + e];
        }
        const double mean = sum / E, inv = 1.0 / std::sqrt(std::max(sq / E - mean * mean, 0.0) + eps);
        for (int64_t e = 0; e < E; ++e) h[t * E + e] = (in[t * E + e] - mean) * inv * g[e] + be[e];
    }
    Vec qkv = linear(h, T, E, qkv_w, qkv_b);  // (T, 3E): q | k | v, each split into heads
    Vec att((size_t)(T * E));
    const double scale = 1.0 / std::sqrt((double)Dh);
    Vec w(S);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t hd = 0; hd < heads; ++hd)
            for (int64_t i = 0; i < S; ++i) {
                const double* q = &qkv[(b * S + i) * 3 * E + hd * Dh];
                double m = -INFINITY;
                for (int64_t j = 0; j < S; ++j) {
                    const double* k = &qkv[(b * S + j) * 3 * E + E + hd * Dh];
                    double s = 0.0;
                    for (int64_t d = 0; d < Dh; ++d) s += q[d] * k[d];
                    w[j] = s * scale;
                    m = std::max(m, w[j]);
                }
                double sum = 0.0;
                for (int64_t j = 0; j < S; ++j) sum += (w[j] = std::exp(w[j] - m));
                for (int64_t d = 0; d < Dh; ++d) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < S; ++j) acc += w[j] * qkv[(b * S + j) * 3 * E + 2 * E + hd * Dh + d];
                    att[(b * S + i) * E + hd * Dh + d] = acc / sum;
                }
            }
    Vec out = linear(att, T, E, out_w, out_b);
    for (size_t i = 0; i < out.size(); ++i) out[i] += in[i];
    return to_tensor(out, {B, S, E});
}
"""

ext = load_inline(
    name="kbv_ex_l3_102_cpu_honest",
    cpp_sources=cpp_source,
    functions=["attention_block_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super(ModelNew, self).__init__()
        self.num_heads = num_heads
        self.norm = nn.LayerNorm(embed_dim)
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        return ext.attention_block_cpu(x, self.norm.weight, self.norm.bias, float(self.norm.eps), self.qkv.weight,
                                       self.qkv.bias, self.out_proj.weight, self.out_proj.bias, self.num_heads)
