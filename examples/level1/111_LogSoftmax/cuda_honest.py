# Honest CUDA solution: one block per row; each thread keeps an online (max, sum of exp) pair, the
# block merges the pairs in shared memory, then writes x - max - log(sum).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
__global__ void log_softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
    __shared__ float s_max[1024], s_sum[1024];
    const float* xr = x + blockIdx.x * cols;
    float* yr = y + blockIdx.x * cols;
    float m = -INFINITY, s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = xr[c];
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    s_max[threadIdx.x] = m;
    s_sum[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if ((int)threadIdx.x < stride) {
            const float m1 = s_max[threadIdx.x], m2 = s_max[threadIdx.x + stride];
            const float mm = fmaxf(m1, m2);
            const float a = m1 == -INFINITY ? 0.0f : s_sum[threadIdx.x] * expf(m1 - mm);
            const float b = m2 == -INFINITY ? 0.0f : s_sum[threadIdx.x + stride] * expf(m2 - mm);
            s_max[threadIdx.x] = mm;
            s_sum[threadIdx.x] = a + b;
        }
        __syncthreads();
    }
    const float lse = s_max[0] + logf(s_sum[0]);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] - lse;
}

torch::Tensor log_softmax_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "float32 CUDA (rows, cols)");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    if (xc.numel() == 0) return y;
    TORCH_CHECK(xc.size(0) < (1LL << 31), "too many rows");
    log_softmax_kernel<<<(unsigned)xc.size(0), 1024, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), xc.size(1));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = """
torch::Tensor log_softmax_cuda(torch::Tensor x);
"""

ext = load_inline(
    name="kbv_ex_l1_111_cuda_honest",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["log_softmax_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return ext.log_softmax_cuda(x)
