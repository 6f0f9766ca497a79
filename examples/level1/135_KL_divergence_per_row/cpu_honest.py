# Honest CPU solution: per row, the log-softmax of both logit rows in double, then sum of q * (log
# q - log p).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor kl_rows_cpu(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(a.dim() == 2 && a.sizes() == b.sizes(), "(rows, cols) inputs of one shape");
    auto ac = a.contiguous(), bc = b.contiguous();
    const int64_t rows = ac.size(0), cols = ac.size(1);
    auto y = torch::empty({rows}, ac.options());
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* ar = pa + r * cols;
        const float* br = pb + r * cols;
        double mp = -INFINITY, mq = -INFINITY;
        for (int64_t c = 0; c < cols; ++c) {
            mp = std::max(mp, (double)ar[c]);
            mq = std::max(mq, (double)br[c]);
        }
        double sp = 0.0, sq = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            sp += std::exp(ar[c] - mp);
            sq += std::exp(br[c] - mq);
        }
        const double lzp = mp + std::log(sp), lzq = mq + std::log(sq);
        double kl = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            const double lq = br[c] - lzq, lp = ar[c] - lzp;
            kl += std::exp(lq) * (lq - lp);
        }
        out[r] = (float)kl;
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_135_cpu_honest",
    cpp_sources=cpp_source,
    functions=["kl_rows_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, p_logits, q_logits):
        return ext.kl_rows_cpu(p_logits, q_logits)
