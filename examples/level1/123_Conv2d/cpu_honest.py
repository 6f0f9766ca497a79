# Honest CPU solution: direct 2D convolution in C++ (double accumulator) with the weights of the
# nn.Conv2d made as in Model.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <optional>

// Direct 2D convolution: y[n, co, oh, ow] = b[co] + sum over the group's input channels and the
// kernel taps of x[n, ci, oh*s - p + kh*d, ow*s - p + kw*d] * w[co, ci - group start, kh, kw].
torch::Tensor conv2d_cpu(torch::Tensor x, torch::Tensor w, std::optional<torch::Tensor> bias, int64_t stride,
                         int64_t padding, int64_t dilation, int64_t groups) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 4 && w.dim() == 4, "float32 NCHW only");
    auto xc = x.contiguous(), wc = w.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int64_t CO = wc.size(0), CI = wc.size(1), KH = wc.size(2), KW = wc.size(3);
    TORCH_CHECK(CI * groups == C && CO % groups == 0, "channels do not match the groups");
    const int64_t OH = (H + 2 * padding - dilation * (KH - 1) - 1) / stride + 1;
    const int64_t OW = (W + 2 * padding - dilation * (KW - 1) - 1) / stride + 1;
    auto y = torch::empty({N, CO, OH, OW}, xc.options());
    const float* in = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    torch::Tensor bc;
    if (bias) bc = bias->contiguous();
    const float* pb = bias ? bc.data_ptr<float>() : nullptr;
    float* out = y.data_ptr<float>();
    const int64_t co_per_group = CO / groups;
    for (int64_t n = 0; n < N; ++n)
        for (int64_t co = 0; co < CO; ++co) {
            const int64_t ci0 = (co / co_per_group) * CI;
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    double acc = pb ? pb[co] : 0.0;
                    for (int64_t ci = 0; ci < CI; ++ci)
                        for (int64_t kh = 0; kh < KH; ++kh) {
                            const int64_t ih = oh * stride - padding + kh * dilation;
                            if (ih < 0 || ih >= H) continue;
                            for (int64_t kw = 0; kw < KW; ++kw) {
                                const int64_t iw = ow * stride - padding + kw * dilation;
                                if (iw < 0 || iw >= W) continue;
                                acc += (double)in[((n * C + ci0 + ci) * H + ih) * W + iw] *
                                       pw[((co * CI + ci) * KH + kh) * KW + kw];
                            }
                        }
                    out[((n * CO + co) * OH + oh) * OW + ow] = (float)acc;
                }
        }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_123_cpu_honest",
    cpp_sources=cpp_source,
    functions=["conv2d_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x):
        c = self.conv
        return ext.conv2d_cpu(x, c.weight, c.bias, 1, c.padding[0], 1, 1)
