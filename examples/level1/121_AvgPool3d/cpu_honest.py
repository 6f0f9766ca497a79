# Honest CPU solution: 3D average pooling; with count_include_pad the divisor is the window
# clipped to the padded volume, as PyTorch computes it.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <algorithm>

torch::Tensor avg_pool3d_cpu(torch::Tensor x, int64_t k, int64_t s, int64_t p) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 5, "float32 (N, C, D, H, W) only");
    auto xc = x.contiguous();
    const int64_t NC = xc.size(0) * xc.size(1), D = xc.size(2), H = xc.size(3), W = xc.size(4);
    const int64_t OD = (D + 2 * p - k) / s + 1, OH = (H + 2 * p - k) / s + 1, OW = (W + 2 * p - k) / s + 1;
    auto y = torch::empty({xc.size(0), xc.size(1), OD, OH, OW}, xc.options());
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t nc = 0; nc < NC; ++nc)
        for (int64_t od = 0; od < OD; ++od)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    int64_t d0 = od * s - p, h0 = oh * s - p, w0 = ow * s - p;
                    int64_t d1 = std::min(d0 + k, D + p), h1 = std::min(h0 + k, H + p), w1 = std::min(w0 + k, W + p);
                    const int64_t divisor = (d1 - d0) * (h1 - h0) * (w1 - w0);
                    d0 = std::max<int64_t>(d0, 0); h0 = std::max<int64_t>(h0, 0); w0 = std::max<int64_t>(w0, 0);
                    d1 = std::min(d1, D); h1 = std::min(h1, H); w1 = std::min(w1, W);
                    double acc = 0.0;
                    for (int64_t d = d0; d < d1; ++d)
                        for (int64_t h = h0; h < h1; ++h)
                            for (int64_t w = w0; w < w1; ++w) acc += in[((nc * D + d) * H + h) * W + w];
                    out[((nc * OD + od) * OH + oh) * OW + ow] = (float)(acc / divisor);
                }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_121_cpu_honest",
    cpp_sources=cpp_source,
    functions=["avg_pool3d_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super(ModelNew, self).__init__()
        self.k, self.s, self.p = kernel_size, stride, padding

    def forward(self, x):
        return ext.avg_pool3d_cpu(x, self.k, self.s, self.p)
