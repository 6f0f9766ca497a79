# Honest CPU solution: direct 3D convolution in double, LeakyReLU, the learned per-channel shift
# and the clamp to [-1, 1] in one pass.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <algorithm>

torch::Tensor conv3d_lrelu_add_clamp_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor shift,
                                         double slope) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 5 && w.dim() == 5, "float32 NCDHW only");
    auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous(), sc = shift.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), D = xc.size(2), H = xc.size(3), W = xc.size(4);
    const int64_t CO = wc.size(0), K = wc.size(2), p = K / 2;
    auto y = torch::empty({N, CO, D, H, W}, xc.options());
    const float* in = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t co = 0; co < CO; ++co)
            for (int64_t od = 0; od < D; ++od)
                for (int64_t oh = 0; oh < H; ++oh)
                    for (int64_t ow = 0; ow < W; ++ow) {
                        double acc = bc.data_ptr<float>()[co];
                        for (int64_t ci = 0; ci < C; ++ci)
                            for (int64_t kd = 0; kd < K; ++kd) {
                                const int64_t id = od - p + kd;
                                if (id < 0 || id >= D) continue;
                                for (int64_t kh = 0; kh < K; ++kh) {
                                    const int64_t ih = oh - p + kh;
                                    if (ih < 0 || ih >= H) continue;
                                    for (int64_t kw = 0; kw < K; ++kw) {
                                        const int64_t iw = ow - p + kw;
                                        if (iw < 0 || iw >= W) continue;
                                        acc += (double)in[(((n * C + ci) * D + id) * H + ih) * W + iw] *
                                               pw[(((co * C + ci) * K + kd) * K + kh) * K + kw];
                                    }
                                }
                            }
                        double v = acc > 0 ? acc : acc * slope;
                        v += sc.data_ptr<float>()[co];
                        out[(((n * CO + co) * D + od) * H + oh) * W + ow] = (float)std::min(std::max(v, -1.0), 1.0);
                    }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l2_111_cpu_honest",
    cpp_sources=cpp_source,
    functions=["conv3d_lrelu_add_clamp_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, negative_slope):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.negative_slope = negative_slope
        self.shift = nn.Parameter(torch.randn(out_channels, 1, 1, 1) * 0.1)

    def forward(self, x):
        return ext.conv3d_lrelu_add_clamp_cpu(x, self.conv.weight, self.conv.bias, self.shift,
                                              float(self.negative_slope))
