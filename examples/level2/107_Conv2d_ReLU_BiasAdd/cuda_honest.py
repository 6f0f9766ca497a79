# Honest CUDA solution: one fused kernel for conv3x3 + ReLU + bias: a block per (sample, output
# channel, pixel tile) with that channel's filter in shared memory, a thread per output pixel,
# fp32 accumulation.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
__global__ void conv_relu_bias_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ conv_b, const float* __restrict__ bias,
                                      float* __restrict__ y, int C, int H, int W, int CO, int K, int pad) {
    extern __shared__ float filt[];  // C * K * K weights of output channel co
    const int co = blockIdx.y, n = blockIdx.z;
    for (int i = threadIdx.x; i < C * K * K; i += blockDim.x) filt[i] = w[(int64_t)co * C * K * K + i];
    __syncthreads();
    const int64_t pix = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (pix >= (int64_t)H * W) return;
    const int oh = (int)(pix / W), ow = (int)(pix % W);
    float acc = conv_b[co];
    for (int ci = 0; ci < C; ++ci) {
        const float* plane = x + ((int64_t)n * C + ci) * H * W;
        for (int kh = 0; kh < K; ++kh) {
            const int ih = oh - pad + kh;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < K; ++kw) {
                const int iw = ow - pad + kw;
                if (iw >= 0 && iw < W) acc += plane[(int64_t)ih * W + iw] * filt[(ci * K + kh) * K + kw];
            }
        }
    }
    y[((int64_t)n * CO + co) * H * W + pix] = fmaxf(acc, 0.0f) + bias[co];
}

torch::Tensor conv_relu_bias_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor conv_b, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && conv_b.is_cuda() && bias.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.dim() == 4 && w.dim() == 4, "float32 NCHW");
    auto xc = x.contiguous(), wc = w.contiguous(), cb = conv_b.contiguous(), bc = bias.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3), CO = wc.size(0), K = wc.size(2);
    TORCH_CHECK(wc.size(1) == C && K % 2 == 1, "odd square kernel over all input channels");
    auto y = torch::empty({N, CO, H, W}, xc.options());
    if (y.numel() == 0) return y;
    const int threads = 256;
    dim3 grid((unsigned)((H * W + threads - 1) / threads), (unsigned)CO, (unsigned)N);
    const size_t smem = (size_t)(C * K * K) * sizeof(float);
    TORCH_CHECK(smem <= 48 * 1024, "filter too large for shared memory");
    conv_relu_bias_kernel<<<grid, threads, smem, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), cb.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(),
        (int)C, (int)H, (int)W, (int)CO, (int)K, (int)(K / 2));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = """
torch::Tensor conv_relu_bias_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor conv_b, torch::Tensor bias);
"""

ext = load_inline(
    name="kbv_ex_l2_107_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["conv_relu_bias_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.02)

    def forward(self, x):
        return ext.conv_relu_bias_cuda(x, self.conv.weight, self.conv.bias, self.bias)
