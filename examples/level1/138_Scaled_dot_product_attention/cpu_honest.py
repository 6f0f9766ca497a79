# Honest CPU solution: attention per query row over every key: scores in double, max-subtracted
# softmax, weighted sum of v.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>
#include <vector>

// softmax(q k^T / sqrt(d)) v per (batch, head); with `causal`, query i sees keys 0..i only.
torch::Tensor attention_cpu(torch::Tensor q, torch::Tensor k, torch::Tensor v, bool causal) {
    TORCH_CHECK(q.scalar_type() == torch::kFloat32 && q.dim() == 4, "float32 (B, H, S, D) only");
    TORCH_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes(), "q, k, v of one shape");
    auto qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
    const int64_t BH = qc.size(0) * qc.size(1), S = qc.size(2), D = qc.size(3);
    const double scale = 1.0 / std::sqrt((double)D);
    auto y = torch::empty_like(qc);
    std::vector<double> w(S), acc(D);
    for (int64_t bh = 0; bh < BH; ++bh) {
        const float* Q = qc.data_ptr<float>() + bh * S * D;
        const float* K = kc.data_ptr<float>() + bh * S * D;
        const float* V = vc.data_ptr<float>() + bh * S * D;
        float* O = y.data_ptr<float>() + bh * S * D;
        for (int64_t i = 0; i < S; ++i) {
            const int64_t last = causal ? i : S - 1;
            double m = -INFINITY;
            for (int64_t j = 0; j <= last; ++j) {
                double s = 0.0;
                for (int64_t d = 0; d < D; ++d) s += (double)Q[i * D + d] * K[j * D + d];
                w[j] = s * scale;
                m = std::max(m, w[j]);
            }
            double sum = 0.0;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t j = 0; j <= last; ++j) {
                const double e = std::exp(w[j] - m);
                sum += e;
                for (int64_t d = 0; d < D; ++d) acc[d] += e * V[j * D + d];
            }
            for (int64_t d = 0; d < D; ++d) O[i * D + d] = (float)(acc[d] / sum);
        }
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_138_cpu_honest",
    cpp_sources=cpp_source,
    functions=["attention_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, q, k, v):
        return ext.attention_cpu(q, k, v, False)
