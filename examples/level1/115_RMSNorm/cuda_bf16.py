# Honest CUDA solution for --precision bf16 (and fp16, fp32): one block per row, the sum of squares
# accumulated in float32 over the row (block reduction), then y = x * rsqrt(mean + eps) * weight
# computed in float32 and rounded once to the input type. The weight is the nn.RMSNorm's, made as in
# Model (and cast with the model by the harness).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ float block_sum(float v) {
    __shared__ float warp_sums[32];
    __shared__ float total;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) total = v;
    }
    __syncthreads();
    const float result = total;
    __syncthreads();
    return result;
}

template <typename scalar_t>
__global__ void rms_norm_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ w,
                                scalar_t* __restrict__ y, int64_t cols, float eps) {
    const scalar_t* xr = x + (int64_t)blockIdx.x * cols;
    scalar_t* yr = y + (int64_t)blockIdx.x * cols;
    float q = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = static_cast<float>(xr[c]);
        q += v * v;
    }
    const float inv = rsqrtf(block_sum(q) / (float)cols + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = static_cast<scalar_t>(static_cast<float>(xr[c]) * inv * static_cast<float>(w[c]));
}

torch::Tensor rms_norm_cuda(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == w.scalar_type(), "x and weight must have the same dtype");
    auto xc = x.contiguous(), wc = w.contiguous();
    const int64_t cols = xc.size(-1), rows = xc.numel() / cols;
    TORCH_CHECK(wc.numel() == cols, "weight of the last dimension's size");
    auto y = torch::empty_like(xc);
    if (rows == 0) return y;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "rms_norm_cuda", [&] {
        rms_norm_kernel<scalar_t><<<(unsigned)rows, 512, 0, at::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<scalar_t>(), wc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), cols, (float)eps);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = "torch::Tensor rms_norm_cuda(torch::Tensor x, torch::Tensor w, double eps);"

ext = load_inline(
    name="kbv_ex_l1_115_cuda_bf16",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["rms_norm_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super(ModelNew, self).__init__()
        self.norm = nn.RMSNorm(hidden, eps=eps)

    def forward(self, x):
        return ext.rms_norm_cuda(x, self.norm.weight, float(self.norm.eps))
