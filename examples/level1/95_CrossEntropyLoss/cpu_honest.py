# Honest CPU solution: mean over rows of logsumexp(row) - row[target],
# max-subtracted, accumulated in double. Targets are int64 class indices.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor cross_entropy_cpu(torch::Tensor logits, torch::Tensor targets) {
    TORCH_CHECK(logits.scalar_type() == torch::kFloat32, "logits must be float32");
    TORCH_CHECK(targets.scalar_type() == torch::kInt64, "targets must be int64");
    TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
                "expected logits (N, C) and targets (N)");
    auto lc = logits.contiguous();
    auto tc = targets.contiguous();
    const int64_t rows = lc.size(0), cols = lc.size(1);
    const float* x = lc.data_ptr<float>();
    const int64_t* t = tc.data_ptr<int64_t>();
    double total = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        const int64_t k = t[r];
        TORCH_CHECK(k >= 0 && k < cols, "target out of range");
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        double s = 0.0;
        for (int64_t c = 0; c < cols; ++c) s += std::exp((double)xr[c] - (double)m);
        total += (std::log(s) + (double)m) - (double)xr[k];
    }
    auto out = torch::empty({}, lc.options());
    out.data_ptr<float>()[0] = rows > 0 ? (float)(total / (double)rows) : NAN;
    return out;
}
"""

ce_ext = load_inline(
    name="kbv_ex_l1_95_ce_cpu_honest",
    cpp_sources=cpp_source,
    functions=["cross_entropy_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions, targets):
        return ce_ext.cross_entropy_cpu(predictions, targets)
