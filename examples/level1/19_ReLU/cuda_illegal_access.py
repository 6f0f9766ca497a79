# Failure: the kernel stores 4 Ti elements past the end of its output, an
# address no allocation covers, so the device reports an illegal memory
# access and the CUDA context is lost. Expected verdict: crashed.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>

__global__ void relu_oob_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                int64_t far) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        const float v = x[i];
        y[i + far] = v > 0.0f ? v : 0.0f;  // BUG: far out of bounds
    }
}

torch::Tensor relu_oob_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    const int threads = 256;
    const int64_t want = (n + threads - 1) / threads;
    const int blocks = (int)std::max<int64_t>(1, std::min<int64_t>(want, 65536LL * 8));
    const int64_t far = (int64_t)1 << 42;  // 16 TiB past the output
    relu_oob_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n, far);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = "torch::Tensor relu_oob_cuda(torch::Tensor x);"

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cuda_illegal_access",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_oob_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_oob_cuda(x)
