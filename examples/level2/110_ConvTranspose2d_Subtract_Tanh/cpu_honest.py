# Honest CPU solution: transposed convolution as a scatter in double, then minus the learned per-
# channel offset and tanh.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>
#include <vector>

torch::Tensor deconv_sub_tanh_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor offset,
                                  int64_t s, int64_t p) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 4 && w.dim() == 4, "float32 NCHW only");
    auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous(), oc = offset.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3), CO = wc.size(1), K = wc.size(2);
    const int64_t OH = (H - 1) * s - 2 * p + K, OW = (W - 1) * s - 2 * p + K;
    std::vector<double> acc((size_t)(N * CO * OH * OW));
    for (int64_t n = 0; n < N; ++n)
        for (int64_t co = 0; co < CO; ++co)
            for (int64_t i = 0; i < OH * OW; ++i) acc[(n * CO + co) * OH * OW + i] = bc.data_ptr<float>()[co];
    const float* in = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t ci = 0; ci < C; ++ci)
            for (int64_t ih = 0; ih < H; ++ih)
                for (int64_t iw = 0; iw < W; ++iw) {
                    const double v = in[((n * C + ci) * H + ih) * W + iw];
                    for (int64_t co = 0; co < CO; ++co)
                        for (int64_t kh = 0; kh < K; ++kh) {
                            const int64_t oh = ih * s - p + kh;
                            if (oh < 0 || oh >= OH) continue;
                            for (int64_t kw = 0; kw < K; ++kw) {
                                const int64_t ow = iw * s - p + kw;
                                if (ow >= 0 && ow < OW)
                                    acc[((n * CO + co) * OH + oh) * OW + ow] += v * pw[((ci * CO + co) * K + kh) * K + kw];
                            }
                        }
                }
    auto y = torch::empty({N, CO, OH, OW}, xc.options());
    float* out = y.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t co = 0; co < CO; ++co)
            for (int64_t i = 0; i < OH * OW; ++i) {
                const int64_t k = (n * CO + co) * OH * OW + i;
                out[k] = (float)std::tanh(acc[k] - oc.data_ptr<float>()[co]);
            }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l2_110_cpu_honest",
    cpp_sources=cpp_source,
    functions=["deconv_sub_tanh_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super(ModelNew, self).__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.offset = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.1)

    def forward(self, x):
        d = self.deconv
        return ext.deconv_sub_tanh_cpu(x, d.weight, d.bias, self.offset, d.stride[0], d.padding[0])
