# Honest CUDA solution: one block per row; the row max and the row sum are
# block-wide shared-memory tree reductions; exp(x - max) / sum written back.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#define SOFTMAX_THREADS 1024

__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y,
                                    int64_t cols) {
    __shared__ float red[SOFTMAX_THREADS];
    const int tid = threadIdx.x;
    const float* xr = x + (int64_t)blockIdx.x * cols;
    float* yr = y + (int64_t)blockIdx.x * cols;

    // 1) row maximum
    float m = -INFINITY;
    for (int64_t c = tid; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    red[tid] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }
    const float row_max = red[0];
    __syncthreads();  // everyone has read red[0] before it is reused

    // 2) sum of exp(x - max)
    float sum = 0.0f;
    for (int64_t c = tid; c < cols; c += blockDim.x) sum += __expf(xr[c] - row_max);
    red[tid] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    const float inv_sum = 1.0f / red[0];

    // 3) normalise
    for (int64_t c = tid; c < cols; c += blockDim.x) yr[c] = __expf(xr[c] - row_max) * inv_sum;
}

torch::Tensor softmax_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.dim() == 2, "x must be 2-D (batch, dim)");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t rows = xc.size(0);
    const int64_t cols = xc.size(1);
    if (rows == 0 || cols == 0) return y;
    TORCH_CHECK(rows <= 2147483647LL, "too many rows");
    softmax_rows_kernel<<<(unsigned)rows, SOFTMAX_THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = "torch::Tensor softmax_cuda(torch::Tensor x);"

softmax_ext = load_inline(
    name="kbv_ex_l1_23_softmax_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["softmax_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_ext.softmax_cuda(x)
