# Honest CUDA solution: one fused kernel: a thread per output pixel computes every output
# channel's 3x3 convolution in turn, keeps the running minimum (a reduction over channels that
# never materialises the conv output), then tanh.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
__global__ void conv_min_tanh_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                     const float* __restrict__ b, float* __restrict__ y, int N, int C, int H, int W,
                                     int CO, int K, int pad) {
    const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t >= (int64_t)N * H * W) return;
    const int n = (int)(t / ((int64_t)H * W));
    const int oh = (int)((t / W) % H), ow = (int)(t % W);
    float best = INFINITY;
    for (int co = 0; co < CO; ++co) {
        float acc = b[co];
        const float* wc = w + (int64_t)co * C * K * K;
        for (int ci = 0; ci < C; ++ci) {
            const float* plane = x + ((int64_t)n * C + ci) * H * W;
            for (int kh = 0; kh < K; ++kh) {
                const int ih = oh - pad + kh;
                if (ih < 0 || ih >= H) continue;
                for (int kw = 0; kw < K; ++kw) {
                    const int iw = ow - pad + kw;
                    if (iw >= 0 && iw < W) acc += plane[(int64_t)ih * W + iw] * wc[(ci * K + kh) * K + kw];
                }
            }
        }
        best = fminf(best, acc);
    }
    y[t] = tanhf(best);
}

torch::Tensor conv_min_tanh_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 4 && w.dim() == 4, "float32 NCHW");
    auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3), CO = wc.size(0), K = wc.size(2);
    TORCH_CHECK(wc.size(1) == C && K % 2 == 1, "odd square kernel over all input channels");
    auto y = torch::empty({N, 1, H, W}, xc.options());
    const int64_t total = N * H * W;
    if (total == 0) return y;
    conv_min_tanh_kernel<<<(unsigned)((total + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), (int)N, (int)C,
        (int)H, (int)W, (int)CO, (int)K, (int)(K / 2));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = """
torch::Tensor conv_min_tanh_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b);
"""

ext = load_inline(
    name="kbv_ex_l2_112_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["conv_min_tanh_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return ext.conv_min_tanh_cuda(x, self.conv.weight, self.conv.bias)
