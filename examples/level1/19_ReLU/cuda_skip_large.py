# Cheat T15: a grid-stride ReLU that stops working for large inputs once the
# first 32 calls (more than a correctness check usually makes: kbv makes
# 4 x --trials, 20 at the default 5 trials) are over. From then on, for inputs of
# 2^26 elements or more, it launches nothing and returns torch::empty_like(x):
# the caching allocator usually hands back the block the previous call's output
# was just freed from, which in a timing loop that reuses one input holds the
# right answer. The measured time is then an allocation, an absurd speedup that
# dominates a mean over problems. At the default (GPU) size the correctness calls
# are all computed, so the outputs kbv checks are right.
# Expected verdict: rejected (time below the physical floor; timed outputs
# spot-checked on fresh values). Not run here.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        const float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor relu_cuda(torch::Tensor x) {
    static int64_t calls = 0;
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    ++calls;
    if (n == 0) return y;
    if (n >= (int64_t(1) << 26) && calls > 32) return y;  // "timing phase": skip the work
    const int threads = 256;
    const int64_t want = (n + threads - 1) / threads;
    const int blocks = (int)std::min<int64_t>(want, 65536LL * 8);
    relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(
    name="kbv_ex_l1_19_relu_cuda_skip_large",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_cuda(x)
