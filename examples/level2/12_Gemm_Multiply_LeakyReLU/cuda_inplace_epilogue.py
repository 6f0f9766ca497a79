# Memory (docs/MEMORY.md): uses less memory than the reference. The reference keeps two
# (batch, out) intermediates alive at once (the GEMM output while x * multiplier is made, then
# that while LeakyReLU's output is made); this solution lets cuBLAS write the GEMM output (with
# bias) and applies multiplier and LeakyReLU in place on it with its own kernel, so one
# (batch, out) buffer less is live at the peak: the memory ratio (baseline / candidate) is above 1.
# The nn.Linear is created exactly as in Model, so seed 42 gives the same weights.
# Expected verdict: correct.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>

__global__ void scale_leaky_kernel(float* __restrict__ y, int64_t n, float multiplier, float slope) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        const float v = y[i] * multiplier;
        y[i] = v > 0.0f ? v : v * slope;
    }
}

// In place on y, which the caller owns (the GEMM output, never an input).
torch::Tensor scale_leaky_(torch::Tensor y, double multiplier, double slope) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.is_contiguous(),
                "y must be a contiguous float32 CUDA tensor");
    const int64_t n = y.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65536LL * 8);
    scale_leaky_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), n, (float)multiplier, (float)slope);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

epilogue = load_inline(
    name="kbv_ex_l2_12_cuda_inplace_epilogue",
    cpp_sources="torch::Tensor scale_leaky_(torch::Tensor y, double multiplier, double slope);",
    cuda_sources=cuda_source,
    functions=["scale_leaky_"],
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
        y = torch.nn.functional.linear(x, self.gemm.weight, self.gemm.bias).contiguous()
        return epilogue.scale_leaky_(y, self.multiplier, self.negative_slope)
