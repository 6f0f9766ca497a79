# Honest CUDA solution: one block per row: block reductions for the mean, then for the variance of
# (x - mean) (two passes, no cancellation), then the affine of the nn.LayerNorm made as in Model.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
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
    __syncthreads();  // total and warp_sums may be reused by the next call
    return result;
}

__global__ void layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                                  float* __restrict__ y, int64_t cols, float eps) {
    const float* xr = x + blockIdx.x * cols;
    float* yr = y + blockIdx.x * cols;
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
    const float mean = block_sum(s) / (float)cols;
    float q = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const float d = xr[c] - mean;
        q += d * d;
    }
    const float inv = rsqrtf(block_sum(q) / (float)cols + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = (xr[c] - mean) * inv * w[c] + b[c];
}

torch::Tensor layer_norm_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "float32 CUDA tensor expected");
    auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous();
    const int64_t cols = xc.size(-1), rows = xc.numel() / cols;
    TORCH_CHECK(wc.numel() == cols && bc.numel() == cols, "weight and bias of the last dimension's size");
    auto y = torch::empty_like(xc);
    if (rows == 0) return y;
    layer_norm_kernel<<<(unsigned)rows, 512, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), cols, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = """
torch::Tensor layer_norm_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);
"""

ext = load_inline(
    name="kbv_ex_l1_113_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["layer_norm_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x):
        return ext.layer_norm_cuda(x, self.ln.weight, self.ln.bias, float(self.ln.eps))
