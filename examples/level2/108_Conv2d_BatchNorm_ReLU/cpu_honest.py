# Honest CPU solution: direct convolution in double, per-channel batch statistics (training-mode
# batch norm, biased variance), affine and ReLU.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>
#include <optional>
#include <vector>

// Direct 2D convolution (stride 1, padding p) into double: y (N, CO, OH, OW).
static std::vector<double> conv2d(const torch::Tensor& x, const torch::Tensor& w, const float* bias, int64_t p,
                                  int64_t& OH, int64_t& OW) {
    const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), CO = w.size(0), K = w.size(2);
    OH = H + 2 * p - K + 1;
    OW = W + 2 * p - K + 1;
    std::vector<double> y((size_t)(N * CO * OH * OW));
    const float* in = x.data_ptr<float>();
    const float* pw = w.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t co = 0; co < CO; ++co)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    double acc = bias ? bias[co] : 0.0;
                    for (int64_t ci = 0; ci < C; ++ci)
                        for (int64_t kh = 0; kh < K; ++kh) {
                            const int64_t ih = oh - p + kh;
                            if (ih < 0 || ih >= H) continue;
                            for (int64_t kw = 0; kw < K; ++kw) {
                                const int64_t iw = ow - p + kw;
                                if (iw < 0 || iw >= W) continue;
                                acc += (double)in[((n * C + ci) * H + ih) * W + iw] * pw[((co * C + ci) * K + kh) * K + kw];
                            }
                        }
                    y[((n * CO + co) * OH + oh) * OW + ow] = acc;
                }
    return y;
}

torch::Tensor conv_bn_relu_cpu(torch::Tensor x, torch::Tensor w, std::optional<torch::Tensor> conv_bias, torch::Tensor gamma, torch::Tensor beta, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 4 && w.dim() == 4, "float32 NCHW only");
    auto xc = x.contiguous(), wc = w.contiguous();
    torch::Tensor cb;
    if (conv_bias) cb = conv_bias->contiguous();
    const int64_t N = xc.size(0), CO = wc.size(0), K = wc.size(2);
    int64_t OH = 0, OW = 0;
    std::vector<double> y = conv2d(xc, wc, conv_bias ? cb.data_ptr<float>() : nullptr, K / 2, OH, OW);
    const int64_t HW = OH * OW;
    auto gc = gamma.contiguous(), bec = beta.contiguous();
    auto out = torch::empty({N, CO, OH, OW}, xc.options());
    float* o = out.data_ptr<float>();
    for (int64_t c = 0; c < CO; ++c) {
        double sum = 0.0, sq = 0.0;
        for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < HW; ++i) {
                const double v = y[(n * CO + c) * HW + i];
                sum += v;
                sq += v * v;
            }
        const double cnt = (double)(N * HW), mean = sum / cnt, var = std::max(sq / cnt - mean * mean, 0.0);
        const double g = gc.data_ptr<float>()[c] / std::sqrt(var + eps), b = bec.data_ptr<float>()[c];
        for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < HW; ++i) {
                const int64_t k = (n * CO + c) * HW + i;
                o[k] = (float)std::max((y[k] - mean) * g + b, 0.0);
            }
    }
    return out;
}
"""

ext = load_inline(
    name="kbv_ex_l2_108_cpu_honest",
    cpp_sources=cpp_source,
    functions=["conv_bn_relu_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return ext.conv_bn_relu_cpu(x, self.conv.weight, self.conv.bias, self.bn.weight, self.bn.bias,
                                    float(self.bn.eps))
