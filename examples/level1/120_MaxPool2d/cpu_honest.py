# Honest CPU solution: 2D max pooling with explicit window bounds; padded positions are skipped,
# never taken as values.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

// Max pooling over (H, W) of an (N, C, H, W) tensor; padded positions never win.
torch::Tensor max_pool2d_cpu(torch::Tensor x, int64_t k, int64_t s, int64_t p) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 4, "float32 (N, C, H, W) only");
    auto xc = x.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int64_t OH = (H + 2 * p - k) / s + 1, OW = (W + 2 * p - k) / s + 1;
    auto y = torch::empty({N, C, OH, OW}, xc.options());
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t nc = 0; nc < N * C; ++nc) {
        const float* plane = in + nc * H * W;
        for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
                float m = -INFINITY;
                for (int64_t i = 0; i < k; ++i) {
                    const int64_t ih = oh * s - p + i;
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t j = 0; j < k; ++j) {
                        const int64_t iw = ow * s - p + j;
                        if (iw < 0 || iw >= W) continue;
                        m = std::max(m, plane[ih * W + iw]);
                    }
                }
                out[(nc * OH + oh) * OW + ow] = m;
            }
    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_120_cpu_honest",
    cpp_sources=cpp_source,
    functions=["max_pool2d_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super(ModelNew, self).__init__()
        self.k, self.s, self.p = kernel_size, stride, padding

    def forward(self, x):
        return ext.max_pool2d_cpu(x, self.k, self.s, self.p)
