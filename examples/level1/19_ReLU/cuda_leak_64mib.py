# Memory (docs/MEMORY.md): a correct CUDA ReLU whose extension cudaMalloc's 64 MiB on every call
# and never frees it. kbv must report growth_bytes_per_call = 64 MiB (within 1%) and a
# memory_leak warning (and a non_torch_allocation one).
# Expected verdict: correct (a leak is a warning, not a wrong answer).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>
#include <algorithm>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

torch::Tensor relu_leak(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    void* lost = nullptr;
    C10_CUDA_CHECK(cudaMalloc(&lost, size_t(64) << 20));  // never freed
    C10_CUDA_CHECK(cudaMemsetAsync(lost, 0, size_t(64) << 20, stream));
    if (n > 0) {
        const int threads = 256;
        const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65536LL * 8);
        relu_kernel<<<blocks, threads, 0, stream>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return y;
}
"""

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cuda_leak_64mib",
    cpp_sources="torch::Tensor relu_leak(torch::Tensor x);",
    cuda_sources=cuda_source,
    functions=["relu_leak"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_leak(x)
