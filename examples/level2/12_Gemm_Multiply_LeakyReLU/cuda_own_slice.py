# Attack on the ablation (T11), the CUDA twin of cpu_own_slice.py: PyTorch computes the whole
# output, then the own CUDA epilogue recomputes one element (out[0, 0]) from the GEMM's output.
# An own kernel runs (CUPTI's any-own-kernel rule passes it) and own code does reach the output,
# but the ablation changes only 1 of batch x out_features elements: under the 1% token line
# (docs/POLICY.md, "Token own parts"), decided on reach as on the CPU.
# Expected verdict: rejected (no_custom_compute).
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>

__global__ void scale_leaky_kernel(const float* __restrict__ y, float* __restrict__ out, int64_t n,
                                   float multiplier, float slope) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        const float v = y[i] * multiplier;
        out[i] = v > 0.0f ? v : v * slope;
    }
}

// out = leaky_relu(y * multiplier, slope), elementwise, in a new tensor.
torch::Tensor scale_leaky(torch::Tensor y, double multiplier, double slope) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32, "y must be a float32 CUDA tensor");
    auto yc = y.contiguous();
    auto out = torch::empty_like(yc);
    const int64_t n = yc.numel();
    if (n == 0) return out;
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65536LL * 8);
    scale_leaky_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        yc.data_ptr<float>(), out.data_ptr<float>(), n, (float)multiplier, (float)slope);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

ext = load_inline(
    name="kbv_ex_l2_12_cuda_own_slice",
    cpp_sources="torch::Tensor scale_leaky(torch::Tensor y, double multiplier, double slope);",
    cuda_sources=cuda_source,
    functions=["scale_leaky"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        y = F.linear(x, self.gemm.weight, self.gemm.bias)
        out = F.leaky_relu(y * self.multiplier, self.negative_slope)
        out[:1, :1] = ext.scale_leaky(y[:1, :1].contiguous(), self.multiplier, self.negative_slope)
        return out
