# Honest CPU solution: direct 1D convolution (double accumulator) with the weights of the
# nn.Conv1d made as in Model.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
torch::Tensor conv1d_cpu(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t padding) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 3 && w.dim() == 3, "float32 (N, C, L) only");
    auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), L = xc.size(2), CO = wc.size(0), K = wc.size(2);
    TORCH_CHECK(wc.size(1) == C, "channels");
    const int64_t OL = L + 2 * padding - K + 1;
    auto y = torch::empty({N, CO, OL}, xc.options());
    const float* in = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t co = 0; co < CO; ++co)
            for (int64_t o = 0; o < OL; ++o) {
                double acc = bc.data_ptr<float>()[co];
                for (int64_t ci = 0; ci < C; ++ci)
                    for (int64_t k = 0; k < K; ++k) {
                        const int64_t i = o - padding + k;
                        if (i >= 0 && i < L) acc += (double)in[(n * C + ci) * L + i] * pw[(co * C + ci) * K + k];
                    }
                out[(n * CO + co) * OL + o] = (float)acc;
            }
    return y;
}
"""

ext = load_inline(
    name="kbv_ex_l1_124_cpu_honest",
    cpp_sources=cpp_source,
    functions=["conv1d_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x):
        return ext.conv1d_cpu(x, self.conv.weight, self.conv.bias, self.conv.padding[0])
