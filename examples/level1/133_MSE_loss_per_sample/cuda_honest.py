# Honest CUDA solution: one block per sample; threads accumulate (p - t)^2 over the features and a
# shuffle + shared-memory block reduction gives the mean.
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

__global__ void mse_rows_kernel(const float* __restrict__ p, const float* __restrict__ t, float* __restrict__ y,
                                int64_t cols) {
    const float* pr = p + blockIdx.x * cols;
    const float* tr = t + blockIdx.x * cols;
    float acc = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const float d = pr[c] - tr[c];
        acc += d * d;
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) y[blockIdx.x] = acc / (float)cols;
}

torch::Tensor mse_rows_cuda(torch::Tensor p, torch::Tensor t) {
    TORCH_CHECK(p.is_cuda() && t.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(p.scalar_type() == torch::kFloat32 && t.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(p.dim() == 2 && p.sizes() == t.sizes(), "(rows, cols) inputs of one shape");
    auto pc = p.contiguous(), tc = t.contiguous();
    auto y = torch::empty({pc.size(0)}, pc.options());
    if (pc.size(0) == 0) return y;
    mse_rows_kernel<<<(unsigned)pc.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        pc.data_ptr<float>(), tc.data_ptr<float>(), y.data_ptr<float>(), pc.size(1));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = """
torch::Tensor mse_rows_cuda(torch::Tensor p, torch::Tensor t);
"""

ext = load_inline(
    name="kbv_ex_l1_133_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["mse_rows_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions, targets):
        return ext.mse_rows_cuda(predictions, targets)
