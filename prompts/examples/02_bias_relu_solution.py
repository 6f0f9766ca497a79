import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Three PyTorch operators (multiply, add, ReLU) fused into one pass over the data.
bias_relu_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>

__global__ void scale_bias_relu_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                       float* __restrict__ out, float scale, int64_t n,
                                       int64_t features) {
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i] * scale + bias[i % features];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor scale_bias_relu(torch::Tensor x, torch::Tensor bias, double scale) {
    TORCH_CHECK(x.is_cuda() && bias.is_cuda(), "scale_bias_relu: tensors must be on the GPU");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32,
                "scale_bias_relu: tensors must be float32");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) == bias.numel(),
                "scale_bias_relu: the last dimension of x must match the bias");
    auto x_c = x.contiguous();
    auto bias_c = bias.contiguous();
    auto out = torch::empty_like(x_c);
    int64_t n = x_c.numel();
    if (n == 0) return out;
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    scale_bias_relu_kernel<<<blocks, threads, 0, stream>>>(
        x_c.data_ptr<float>(), bias_c.data_ptr<float>(), out.data_ptr<float>(),
        (float)scale, n, bias_c.numel());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

bias_relu_cpp_source = "torch::Tensor scale_bias_relu(torch::Tensor x, torch::Tensor bias, double scale);"

bias_relu_ext = load_inline(
    name="kbv_example_scale_bias_relu",
    cpp_sources=bias_relu_cpp_source,
    cuda_sources=bias_relu_source,
    functions=["scale_bias_relu"],
    verbose=False,
)


class ModelNew(nn.Module):
    # Parameters are created exactly as in Model, in the same order, so that both get the
    # same initial values from the same seed.
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return bias_relu_ext.scale_bias_relu(x, self.bias, self.scale)
